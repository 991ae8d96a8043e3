"""Step 7 of the construction: a synthetic stand-in for a restricted-licence table (same
columns, dtypes and missing cells; values within the original ranges or from the original
sets), seed 42, recorded in the dataset's metadata file.

    python scripts/construct_synthetic.py ParisHousing.csv ParisHousing_synthetic.csv
"""

import sys

from junobench.cli import main

SEED = 42

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    table, out = sys.argv[1:]
    sys.exit(main(["construct", "synthetic", table, "--out", out, "--seed", str(SEED)]))
