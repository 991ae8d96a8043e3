"""Case ids are unique ignoring case: `Foo_1` beside `foo_1` is one folder on macOS and
Windows. add-case refuses a new library spelled like another but for case; validate
reports such ids."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_run import run_cli
from test_construct_add_case import _remove_case

from junobench.data import layout
from junobench.data.snapshot import resolve
from junobench.data.validate import case_collisions, validate

SAMPLE = resolve("sample")


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    target = tmp_path / "snapshot"
    shutil.copytree(SAMPLE, target)
    return target


def add(capsys, snapshot: Path, library: str, pair: str) -> tuple[int, str, str]:
    """add-case of the sample's ``pair`` (removed from ``snapshot``) as a case of ``library``."""
    return run_cli(capsys, "construct", "add-case", str(snapshot),
                   f"https://www.kaggle.com/code/alice/{pair.replace('_', '-')}",
                   "--reproduced", str(layout.notebook_path(SAMPLE, pair, "reproduced")),
                   "--fixed", str(layout.notebook_path(SAMPLE, pair, "fixed")),
                   "--library", library, "--new-library", "--root-cause", "data confusion",
                   "--crash-type", "data value violation", "--stage", "training",
                   "--diagnosis", "The column is gone.", "--no-verify")


def test_a_new_library_spelled_like_another_but_for_case_is_refused(snapshot, capsys):
    for pair in ("pandas_1", "pandas_2"):  # not in the snapshot: their pairs can be added
        _remove_case(snapshot, pair)
    code, _, err = add(capsys, snapshot, "foo", "pandas_1")
    assert code == 0, err
    assert (layout.benchmark_dir(snapshot) / "foo_1").is_dir()
    before = sorted(p.name for p in layout.benchmark_dir(snapshot).iterdir())
    for spelling in ("Foo", "FOO"):
        code, _, err = add(capsys, snapshot, spelling, "pandas_2")
        assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1
        assert "differs from the snapshot's 'foo' only in case" in err
    code, _, err = add(capsys, snapshot, "Pandas", "pandas_2")  # a known library, any spelling
    assert code == 0, err
    after = sorted(p.name for p in layout.benchmark_dir(snapshot).iterdir())
    added = set(after) - set(before)
    assert len(added) == 1 and added.pop().startswith("pandas_") and case_collisions(after) == []


@pytest.mark.parametrize(("ids", "groups"), [
    (["foo_1", "Foo_1", "bar_1"], [["Foo_1", "foo_1"]]),
    (["foo_1", "foo_1"], []),  # the same id twice (a folder and its row): not a collision
    (["a_1", "A_1", "a_2", "A_2"], [["A_1", "a_1"], ["A_2", "a_2"]]),
    (["torch_1", "torch_10"], []),
])
def test_case_collisions(ids, groups):
    assert case_collisions(ids) == groups


def test_validate_reports_ids_that_differ_only_in_case(snapshot, capsys):
    shutil.copytree(layout.case_dir(snapshot, "pandas_1"), layout.benchmark_dir(snapshot) / "Pandas_1")
    problems = [p for p in validate(snapshot) if "differ only in case" in p.problem]
    assert len(problems) == 1 and "Pandas_1 and pandas_1" in problems[0].problem
