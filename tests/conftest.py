"""Shared fixtures: the reference data beside the checkout (../shared/reference).

Tests that need it skip with a clear reason when it is absent, unless
``JUNOBENCH_REQUIRE_REFERENCE=1`` (set by CI), where its absence is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from junobench.data.tables import read_table, write_table

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO.parent / "shared" / "reference"


def _require(path: Path) -> Path:
    if path.exists():
        return path
    message = f"reference data not found at {path} (expected ../shared/reference beside the repo)"
    if os.environ.get("JUNOBENCH_REQUIRE_REFERENCE") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """``../shared/reference`` (read-only test data)."""
    return _require(REFERENCE)


@pytest.fixture(scope="session")
def reference_snapshot(reference_dir: Path) -> Path:
    """The reference snapshot: 111 real cases with reconstructed notebooks, no input data."""
    return _require(reference_dir / "junobench-snapshot")


@pytest.fixture
def snapshot_copy(reference_snapshot: Path, tmp_path: Path) -> Path:
    """A writable copy of the reference snapshot, for tests that break or edit it."""
    target = tmp_path / "snapshot"
    shutil.copytree(reference_snapshot, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


@pytest.fixture
def labelled_snapshot(snapshot_copy, reference_dir):
    """The reference snapshot whose table also has the labelling sheet's source and
    Dataset_note columns (as the bundled sample's and a rebuilt snapshot's do)."""
    desc_path = snapshot_copy / "benchmark_desc.xlsx"
    desc = read_table(desc_path)
    labels = {r["nb_name"]: r for r in read_table(reference_dir / "benchmark_labels.xlsx").records()}
    rows = [r | {"source": labels[r["nb_name"]]["source"],
                 "Dataset_note": labels[r["nb_name"]]["Dataset_note"]} for r in desc.records()]
    write_table(desc_path, rows, [*desc.columns, "source", "Dataset_note"])
    return snapshot_copy
