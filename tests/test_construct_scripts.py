"""The companion scripts run their step with the paper's parameters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from junobench.data.tables import read_table

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPTS / script), *args], capture_output=True,
                          text=True, timeout=300)


def test_filter_script(reference_dir: Path, tmp_path: Path) -> None:
    done = run("construct_filter.py", str(reference_dir / "empirical_labeled_crashes.dev.xlsx"),
               str(tmp_path / "candidates.xlsx"))
    assert done.returncode == 0, done.stderr
    assert "wrote 168 candidates" in done.stderr
    assert len(read_table(tmp_path / "candidates.xlsx").rows) == 168


def test_library_cause_script_evaluates_the_dev_rows(reference_dir: Path) -> None:
    done = run("construct_library_cause.py", "--evaluate",
               str(reference_dir / "empirical_labeled_crashes.dev.xlsx"))
    assert done.returncode == 0, done.stderr
    correct, total = done.stdout.split("accuracy: ")[1].split(" = ")[0].split("/")
    assert int(correct) / int(total) >= 0.92


def test_downsample_and_synthetic_scripts_use_the_papers_parameters(tmp_path: Path) -> None:
    source = tmp_path / "kdd.csv"
    pd.DataFrame({"label": ["a"] * 50 + ["b"] * 30, "x": range(80)}).to_csv(source, index=False)
    data = tmp_path / "data"
    data.mkdir()
    for name in ("kdd", "fake"):
        (data / f"{name}.metadata.json").write_text(json.dumps(
            {"title": "KDD", "url": None, "license": "Unknown", "files": [f"{name}.csv"],
             "modifications": []}))
    done = run("construct_downsample.py", "table", str(source), str(data / "kdd.csv"), "label")
    assert done.returncode == 0, done.stderr
    assert len(pd.read_csv(data / "kdd.csv")) == 8  # 10% of each class
    entry = json.loads((data / "kdd.metadata.json").read_text())["modifications"][0]
    assert (entry["seed"], entry["ratio"]) == (42, 0.1)
    done = run("construct_synthetic.py", str(source), str(data / "fake.csv"))
    assert done.returncode == 0, done.stderr
    assert json.loads((data / "fake.metadata.json").read_text())["modifications"][0]["seed"] == 42
