"""Shared fixtures: the reference data beside the checkout (../shared/reference).

Tests that need it skip with a clear reason when it is absent, unless
``JUNOBENCH_REQUIRE_REFERENCE=1`` (set by CI), where its absence is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO.parent / "shared" / "reference"


def _require(path: Path) -> Path:
    if path.exists():
        return path
    message = f"reference data not found at {path} (expected ../shared/reference beside the checkout)"
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


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the records cache and the Hugging Face caches of a test run out of ~/.cache."""
    root = tmp_path_factory.getbasetemp() / "caches"
    monkeypatch.setenv("JUNOBENCH_CACHE", str(root / "junobench"))
    monkeypatch.setenv("HF_HOME", str(root / "hf"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
