"""Where the tests find the reference data, and what they do without it: the location is
``$JUNOBENCH_REFERENCE`` (else ``../shared/reference``); without it the tests that need it
skip on one summary line, or fail under ``JUNOBENCH_REQUIRE_REFERENCE=1`` (CI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs pytest in a subprocess

REPO = Path(__file__).resolve().parent.parent
# Tests of two files that need the reference data, and one that does not.
TARGETS = ["tests/test_construct_filter.py::test_dev_rows_give_the_documented_counts",
           "tests/test_construct_filter.py::test_each_criterion_applies",
           "tests/test_sample.py::test_tables_have_the_published_columns_and_diagnoses"]


def _pytest(reference: Path, *, require: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "JUNOBENCH_REQUIRE_REFERENCE"}
    env["JUNOBENCH_REFERENCE"] = str(reference)
    if require:
        env["JUNOBENCH_REQUIRE_REFERENCE"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TARGETS],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_absent_reference_skips_on_one_summary_line(tmp_path: Path) -> None:
    nowhere = tmp_path / "no-reference-here"
    done = _pytest(nowhere)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if "reference data not found" in line]
    assert len(lines) == 1, done.stdout
    match = re.fullmatch(r"SKIPPED \[(\d+)\] tests/conftest\.py:\d+: reference data not found at (.+): "
                         r"set JUNOBENCH_REFERENCE .*", lines[0])
    assert match, lines[0]
    assert match[1] == "2"  # both tests that need the data, folded together
    assert match[2] == str(nowhere)
    assert re.search(r"\b1 passed, 2 skipped\b", done.stdout)


def test_ci_turns_the_skip_into_a_failure(tmp_path: Path) -> None:
    done = _pytest(tmp_path / "no-reference-here", require=True)
    assert done.returncode == 1
    assert "reference data not found" in done.stdout
    assert "skipped" not in done.stdout.splitlines()[-1]


def test_the_environment_variable_names_the_folder(reference_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "my-reference"
    elsewhere.symlink_to(reference_dir, target_is_directory=True)
    done = _pytest(elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b3 passed in\b", done.stdout), done.stdout
