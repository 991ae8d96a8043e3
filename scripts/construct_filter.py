"""Step 1 of the construction, with the paper's criteria: the benchmark candidates among
the empirical study's labeled crashes (Kaggle notebooks; ML-library or notebook-specific
crashes; no environment-related root cause). Prints the count after each criterion.

    python scripts/construct_filter.py cluster_sampled_labeled_final.xlsx candidates.xlsx

On the 493 dev rows in ../shared/reference: 237 Kaggle, 189, then 168 candidates in 163
notebooks.
"""

import sys

from junobench.cli import main

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    labeled, out = sys.argv[1:]
    sys.exit(main(["construct", "filter", labeled, "--out", out]))
