"""The construction page's walk-through extends a copy of the bundled sample, as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "construction.md"


def test_the_walkthrough_runs_on_the_bundled_sample(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Extending the benchmark by one case\n", 1)[1]
    script = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert script, "no bash block in the walk-through"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script.group(1)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "added pandas_3: pandas_3.ipynb, pandas_3_reproduced.ipynb, pandas_3_fixed.ipynb; " \
           "datasets passengers" in done.stdout
    assert "mybench: valid (4 cases" in done.stdout
    assert "Ferry passengers (synthetic) [CC0: Public Domain]" in done.stdout
    assert "downsampled" in (tmp_path / "mybench/benchmark/pandas_3/data/"
                             "passengers.metadata.json").read_text(encoding="utf-8")


def test_the_readme_s_extension_example_runs_on_the_bundled_sample(tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Extending the benchmark\n", 1)[1]
    script = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert script, "no bash block in the README's extension section"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script.group(1)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "added pandas_3:" in done.stdout and "mybench: valid (4 cases" in done.stdout
