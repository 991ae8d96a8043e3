"""Step 2 of the construction, as published: 500 further crashes drawn with pandas'
``DataFrame.sample(n=500, random_state=43)`` from the Kaggle crash pool, among notebooks
not labeled before whose import list names torch, sklearn, tensorflow, keras, seaborn,
matplotlib, statsmodels, torchvision or lightgbm; written with the labeled table's
columns, label cells blank.

    python scripts/construct_resample.py clusters_Kaggle_final.xlsx nb_imports_all_final.xlsx \
        cluster_sampled_labeled_final.xlsx resampled.xlsx
"""

import sys

from junobench.cli import main
from junobench.construct.resample import PUBLISHED_LIBRARIES, PUBLISHED_N, PUBLISHED_SEED

if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    pool, imports, labeled, out = sys.argv[1:]
    sys.exit(main(["construct", "resample", pool, "--imports", imports, "--exclude", labeled,
                   "--libraries", ",".join(PUBLISHED_LIBRARIES), "--n", str(PUBLISHED_N),
                   "--seed", str(PUBLISHED_SEED), "--out", out]))
