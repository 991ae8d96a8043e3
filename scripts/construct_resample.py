"""Step 2 of the construction, with the paper's parameters: 500 further crashes drawn with
seed 43 from the Kaggle crash pool, among notebooks not labeled before that import one of
the benchmark's ten libraries.

    python scripts/construct_resample.py clusters_Kaggle_final.xlsx nb_imports_all_final.xlsx \
        cluster_sampled_labeled_final.xlsx resampled.xlsx
"""

import sys

from junobench.cli import main
from junobench.construct.resample import PAPER_LIBRARIES, PAPER_N, PAPER_SEED

if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    pool, imports, labeled, out = sys.argv[1:]
    sys.exit(main(["construct", "resample", pool, "--imports", imports, "--exclude", labeled,
                   "--libraries", ",".join(PAPER_LIBRARIES), "--n", str(PAPER_N),
                   "--seed", str(PAPER_SEED), "--out", out]))
