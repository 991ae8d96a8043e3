"""Step 6 of the construction, with the paper's parameters: image folders keep 10 images
per class; archives 10% of each top-level folder and tables (or tables with the files
they reference) 10% of each class of their label column, with seed 42. The modification
is recorded in the dataset's metadata file (DEST's sibling <name>.metadata.json).

    python scripts/construct_downsample.py images SOURCE DEST
    python scripts/construct_downsample.py archive SOURCE.zip DEST
    python scripts/construct_downsample.py table SOURCE.csv DEST.csv LABEL_COLUMN
    python scripts/construct_downsample.py paired SOURCE.csv DEST FILES_COLUMN LABEL_COLUMN
"""

import sys

from junobench.cli import main

PER_CLASS_IMAGES = 10
FRACTION = 0.1
SEED = 42

if __name__ == "__main__":
    args = sys.argv[1:]
    kind = args[0] if args else ""
    common = ["--seed", str(SEED)]
    if kind == "images" and len(args) == 3:
        argv = [*args, "--per-class", str(PER_CLASS_IMAGES)]
    elif kind == "archive" and len(args) == 3:
        argv = [*args, "--fraction", str(FRACTION)]
    elif kind == "table" and len(args) == 4:
        argv = [*args[:3], "--fraction", str(FRACTION), "--label-column", args[3]]
    elif kind == "paired" and len(args) == 5:
        argv = [*args[:3], "--fraction", str(FRACTION), "--files-column", args[3],
                "--label-column", args[4]]
    else:
        sys.exit(__doc__)
    source, dest = argv[1], argv[2]
    sys.exit(main(["construct", "downsample", kind, source, "--out", dest, *argv[3:], *common]))
