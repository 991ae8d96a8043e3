"""Step 4 of the construction: each notebook's input datasets (title, URL, licence,
version) from Meta Kaggle's CSV tables, queried in place with DuckDB.

    python scripts/construct_kaggle_metadata.py notebooks.csv META_KAGGLE_DIR datasets.xlsx

(Meta Kaggle: kagglehub.dataset_download("kaggle/meta-kaggle"), or the CSVs from
https://www.kaggle.com/datasets/kaggle/meta-kaggle.)
"""

import sys

from junobench.cli import main

if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    notebooks, meta_kaggle, out = sys.argv[1:]
    sys.exit(main(["construct", "kaggle-metadata", notebooks, "--meta-kaggle", meta_kaggle,
                   "--out", out]))
