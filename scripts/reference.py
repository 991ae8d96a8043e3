"""Where the scripts find the reference data (the published JunoBench metadata).

``$JUNOBENCH_REFERENCE`` when it is set, else ``../shared/reference`` beside the checkout,
as for the tests (see docs/development.md). Scripts import it from their own folder:

    from reference import reference_dir
    snapshot = reference_dir() / "junobench-snapshot"
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def reference_dir() -> Path:
    """The reference folder: ``$JUNOBENCH_REFERENCE``, else ``../shared/reference``."""
    configured = os.environ.get("JUNOBENCH_REFERENCE")
    return Path(configured).expanduser() if configured else REPO.parent / "shared" / "reference"
