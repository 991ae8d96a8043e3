"""Step 5 of the construction: download every dataset of the datasets table with
kagglehub (credentials from KAGGLE_USERNAME/KAGGLE_KEY or ~/.kaggle/kaggle.json);
resumable; sizes and sha256 recorded per file. --mirror DIR reads a local copy instead.

    python scripts/construct_download.py datasets.xlsx DEST [--mirror DIR]
"""

import sys

from junobench.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) not in (2, 4) or (len(args) == 4 and args[2] != "--mirror"):
        sys.exit(__doc__)
    sys.exit(main(["construct", "download", args[0], "--dest", args[1], *args[2:]]))
