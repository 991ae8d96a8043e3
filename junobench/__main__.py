"""``python -m junobench``: the same as the ``junobench`` command."""

import sys

from junobench.cli import main

sys.exit(main())
