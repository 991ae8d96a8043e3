"""The construction page's walk-through extends a copy of the bundled sample, as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "construction.md"


def run_first_bash_block(page: Path, heading: str, cwd: Path,
                         replace: tuple[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the first ``bash`` block under ``heading`` of ``page`` in ``cwd``, strictly
    (``-euo pipefail``), with this interpreter's scripts first on the PATH; ``replace``
    (old, new) replaces every ``old`` of the block with ``new`` first (a folder name)."""
    section = page.read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1]
    script = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert script, f"no bash block under {heading!r} in {page.name}"
    text = script.group(1)
    if replace is not None:
        assert replace[0] in text, f"{replace[0]!r} is not in the block under {heading!r} in {page.name}"
        text = text.replace(*replace)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.kernel
def test_the_walkthrough_runs_on_the_bundled_sample(tmp_path: Path) -> None:
    done = run_first_bash_block(PAGE, "## Extending the benchmark by one case", tmp_path)
    # what the edits did is status, on stderr; what the reader asked to see, on stdout
    assert "added pandas_3: pandas_3.ipynb, pandas_3_reproduced.ipynb, pandas_3_fixed.ipynb; " \
           "datasets passengers" in done.stderr
    assert "verified in junobench's own environment: reproduced: crashed at the target" \
           in done.stderr
    assert "the case is already in the snapshot as pandas_3" in done.stderr
    assert "refused; mybench unchanged" in done.stdout
    assert "removed pandas_2: its folder" in done.stderr
    assert "pandas_3 -> pandas_1" in done.stderr
    assert done.stderr.count("mybench: valid (2 cases") >= 2
    assert "Ferry passengers (synthetic) [CC0: Public Domain]" in done.stdout
    assert "downsampled" in (tmp_path / "mybench/benchmark/pandas_1/data/"
                             "passengers.metadata.json").read_text(encoding="utf-8")
    assert not (tmp_path / "mybench/renamed_cases.json").exists()  # the release records renames
    # it ends with the diff, a release dry run and a Croissant file mlcroissant reads
    # the new pandas_1 (renumbered from pandas_3) stands where the sample's pandas_1 stood
    assert "sample → mybench: 0 added, 8 removed, 0 renamed, 1 changed (10 → 2 cases)" in done.stdout
    assert "dry run: would release mybench as version 1.1.0 to dataset repo someone/mybench" in done.stdout
    assert "## 1.1.0 (" in done.stdout and "dry run: nothing was written or sent" in done.stdout
    assert not (tmp_path / "mybench/VERSION").exists()
    assert "ok: release-export" in done.stdout
    assert "croissant: 2 cases, first pandas_1" in done.stdout


@pytest.mark.kernel
def test_the_readme_s_extension_example_runs_on_the_bundled_sample(tmp_path: Path) -> None:
    done = run_first_bash_block(REPO / "README.md", "## Extending the benchmark", tmp_path)
    assert "added pandas_3:" in done.stderr and "mybench: valid (3 cases" in done.stderr
