"""Shared fixtures: the reference data beside the checkout (../shared/reference).

Tests that need it skip with a clear reason when it is absent, unless
``JUNOBENCH_REQUIRE_REFERENCE=1`` (set by CI), where its absence is a failure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# Caches of a test run stay out of ~/.cache; set before datasets/huggingface_hub import.
_CACHES = Path(tempfile.mkdtemp(prefix="junobench-test-caches-"))
os.environ["JUNOBENCH_CACHE"] = str(_CACHES / "junobench")
os.environ["HF_HOME"] = str(_CACHES / "hf")
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import pytest  # noqa: E402

from junobench.data.tables import read_table, write_table  # noqa: E402

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


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray instance for the whole test session (2 CPUs, a small object store);
    executors in tests join it."""
    ray = pytest.importorskip("ray", reason="the Ray executor needs the ray extra")
    if not ray.is_initialized():
        ray.init(num_cpus=2, object_store_memory=100 * 1024 * 1024, include_dashboard=False,
                 log_to_driver=False, logging_level="warning")
    yield ray
    ray.shutdown()
