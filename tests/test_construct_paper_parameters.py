"""The construction steps run as docs/construction.md shows them, with the paper's
parameters (the published draw's seed and size are the defaults of `construct resample`;
downsampling and synthetic data take theirs on the command line, as the page writes them)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from cli_run import run_cli

from junobench.data.tables import read_table


def test_filter_keeps_the_papers_168_candidates(reference_dir: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "construct", "filter",
                           str(reference_dir / "empirical_labeled_crashes.dev.xlsx"),
                           "--out", str(tmp_path / "candidates.xlsx"))
    assert code == 0, err
    assert "wrote 168 candidates" in err
    assert len(read_table(tmp_path / "candidates.xlsx").rows) == 168


def test_library_cause_evaluates_the_dev_rows(reference_dir: Path, capsys) -> None:
    code, out, err = run_cli(capsys, "construct", "library-cause",
                             str(reference_dir / "empirical_labeled_crashes.dev.xlsx"), "--evaluate")
    assert code == 0, err
    correct, total = out.split("accuracy: ")[1].split(" = ")[0].split("/")
    assert int(correct) / int(total) >= 0.92


def test_downsample_and_synthetic_with_the_papers_parameters(tmp_path: Path, capsys) -> None:
    source = tmp_path / "kdd.csv"
    pd.DataFrame({"label": ["a"] * 50 + ["b"] * 30, "x": range(80)}).to_csv(source, index=False)
    data = tmp_path / "data"
    data.mkdir()
    for name in ("kdd", "fake"):
        (data / f"{name}.metadata.json").write_text(json.dumps(
            {"title": "KDD", "url": None, "license": "Unknown", "files": [f"{name}.csv"],
             "modifications": []}))
    code, _, err = run_cli(capsys, "construct", "downsample", "table", str(source), "--out",
                           str(data / "kdd.csv"), "--fraction", "0.1", "--label-column", "label",
                           "--seed", "42")
    assert code == 0, err
    assert len(pd.read_csv(data / "kdd.csv")) == 8  # 10% of each class
    entry = json.loads((data / "kdd.metadata.json").read_text())["modifications"][0]
    assert (entry["seed"], entry["ratio"]) == (42, 0.1)
    code, _, err = run_cli(capsys, "construct", "synthetic", str(source), "--out",
                           str(data / "fake.csv"), "--seed", "42")
    assert code == 0, err
    assert json.loads((data / "fake.metadata.json").read_text())["modifications"][0]["seed"] == 42
