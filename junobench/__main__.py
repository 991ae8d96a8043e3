import sys

from junobench.cli import main

sys.exit(main())
