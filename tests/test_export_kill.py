"""A SIGKILL at any point of an export leaves a loadable export (the old or the new one)
at the published path, and the next export cleans up what the killed one left."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import junobench
from junobench.data.snapshot import sample_path
from junobench.data.tables import read_table, write_table
from junobench.hub.write_export import export

# Runs ``export(SOURCE, OUT)`` and SIGKILLs itself at POINT (patched in, test side only).
KILLED_EXPORT = r"""
import os, signal, sys
from junobench.hub import write_export
from junobench.safety import atomic

source, out, point = sys.argv[1:4]


def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


if point == "writing":  # the parquet files are written, the card is not
    import junobench.hub.card
    junobench.hub.card.render_card = die
elif point == "before-swap":  # the new export is complete beside the old one
    atomic.swap_in = die
elif point == "after-swap":  # the new export is in place, the old one not yet removed
    swap = atomic.swap_in
    atomic.swap_in = lambda staging, target: die(swap(staging, target))
elif point == "removing-old":  # half of the old export's files deleted
    def remove(folder, names):
        names = list(names)
        (folder / names[0]).unlink()
        die()
    atomic.remove_files = remove
elif point == "between-renames":  # a file system without an atomic exchange
    atomic.exchange = lambda a, b: False
    rename = os.rename
    def rename_then_die(a, b):
        rename(a, b)
        if str(b).endswith(".old"):
            die()
    os.rename = rename_then_die
write_export.export(source, out)
print("not killed")
"""

NEW = "ML model confusion"
ATOMIC_POINTS = ["writing", "before-swap", "after-swap", "removing-old"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> tuple[Path, Path]:
    """The sample, and a copy of it whose pandas_1 has the root cause NEW."""
    base = tmp_path_factory.mktemp("sources")
    old, new = base / "old", base / "new"
    shutil.copytree(sample_path(), old)
    shutil.copytree(sample_path(), new)
    desc = read_table(new / "benchmark_desc.xlsx")
    rows = [r | {"label_root_cause": NEW} if r["nb_name"] == "pandas_1" else r
            for r in desc.records()]
    write_table(new / "benchmark_desc.xlsx", rows, desc.columns)
    return old, new


def root_cause(export_dir: Path) -> str:
    cases = junobench.load(export_dir, "cases")
    return dict(zip(cases["case_id"], cases["root_cause"], strict=True))["pandas_1"]


def killed_export(source: Path, out: Path, point: str) -> None:
    result = subprocess.run([sys.executable, "-c", KILLED_EXPORT, str(source), str(out), point],
                            capture_output=True, text=True, check=False, timeout=600)
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("point", ATOMIC_POINTS)
def test_a_killed_export_leaves_the_old_or_the_new_export_loadable(sources, tmp_path, point):
    old_source, new_source = sources
    out = tmp_path / "published"
    export(old_source, out)
    old_cause = root_cause(out)

    killed_export(new_source, out, point)
    cause = root_cause(out)  # loads, and checks the parquet against the manifest
    expected = NEW if point in ("after-swap", "removing-old") else old_cause
    assert old_cause != NEW and cause == expected
    assert any(p.name.startswith(".published.") for p in tmp_path.iterdir())  # left behind

    result = export(new_source, out)  # the next run removes what the killed one left
    assert result.rows["cases"] == 10 and root_cause(out) == NEW
    assert sorted(p.name for p in tmp_path.iterdir()) == ["published"]


@pytest.mark.slow
def test_without_an_atomic_exchange_the_next_export_restores_the_old_one(sources, tmp_path, caplog):
    old_source, new_source = sources
    out = tmp_path / "published"
    export(old_source, out)
    old_cause = root_cause(out)
    killed_export(new_source, out, "between-renames")
    assert not out.exists()  # the only window: killed between the two renames
    (left,) = [p for p in tmp_path.iterdir() if p.name.endswith(".old")]

    from junobench.hub.write_export import _is_own_folder
    from junobench.safety.atomic import recover

    recover(out, owned=_is_own_folder)  # what every export does first
    assert root_cause(out) == old_cause
    assert not left.exists() and "restored the previous version" in caplog.text
    export(new_source, out)
    assert root_cause(out) == NEW
    assert sorted(p.name for p in tmp_path.iterdir()) == ["published"]


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")),
                    reason="only Linux and macOS exchange two folders in one step")
def test_the_swap_is_an_atomic_exchange_on_linux_and_macos(tmp_path):
    """The guarantee above holds where the system exchanges two folders in one step."""
    from junobench.safety.atomic import exchange

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    assert exchange(a, b), f"no atomic exchange on {os.uname().release}"
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"
