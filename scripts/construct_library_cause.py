"""Step 3 of the construction: estimate the library cause of each crash of a table (the
resampled crashes), or, with --evaluate, score the estimate on a labelled table (by
default the dev labeled crashes in ../shared/reference) and print its confusion table.

    python scripts/construct_library_cause.py resampled.xlsx scored.xlsx
    python scripts/construct_library_cause.py --evaluate [labelled.xlsx]
"""

import sys

from reference import reference_dir

from junobench.cli import main

DEV = reference_dir() / "empirical_labeled_crashes.dev.xlsx"

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--evaluate"] and len(args) <= 2:
        table = args[1] if len(args) == 2 else str(DEV)
        sys.exit(main(["construct", "library-cause", table, "--evaluate"]))
    if len(args) != 2:
        sys.exit(__doc__)
    sys.exit(main(["construct", "library-cause", args[0], "--out", args[1]]))
