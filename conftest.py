"""Settings for every test run: the test suite (tests/) and the docstring examples
(junobench/, collected with --doctest-modules).

Caches of a test run stay out of ~/.cache: they go to a temporary folder, set here before
datasets or huggingface_hub is imported. Docstring examples run in a temporary working
directory, so that the files they write (``export("sample", "export")``) land there.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_CACHES = Path(tempfile.mkdtemp(prefix="junobench-test-caches-"))
os.environ["JUNOBENCH_CACHE"] = str(_CACHES / "junobench")
os.environ["HF_HOME"] = str(_CACHES / "hf")
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import pytest  # noqa: E402
from _pytest.doctest import DoctestItem  # noqa: E402

# The bundled sample is benchmark data (Kaggle-style notebooks), not project code.
collect_ignore = ["junobench/sample"]


@pytest.fixture(autouse=True)
def _doctest_in_tmp_path(request: pytest.FixtureRequest) -> None:
    if isinstance(request.node, DoctestItem):
        request.getfixturevalue("monkeypatch").chdir(request.getfixturevalue("tmp_path"))


_PACKAGE = Path(__file__).resolve().parent / "junobench"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A module of junobench without an example (``>>>``) is not imported to look for one:
    every pytest worker collects every module, and some import heavy libraries (Inspect)."""
    if (collection_path.suffix == ".py" and _PACKAGE in collection_path.resolve().parents
            and ">>>" not in collection_path.read_text(encoding="utf-8", errors="replace")):
        return True
    return None
