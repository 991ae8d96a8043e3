"""``junobench evaluate`` on the published raw outputs reproduces the published numbers."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest

from junobench.detection.evaluate import evaluate, format_report
from junobench.errors import JunoBenchError

# JunoBench_construct README, mistral-small3.1, first valid answer of 5 runs:
# library → (reproduced correct, total, fixed correct, total).
MISTRAL_BY_LIBRARY = {
    "notebook-specific": (15, 20, 7, 20), "pandas": (6, 15, 10, 15), "numpy": (8, 13, 7, 13),
    "sklearn": (7, 15, 13, 15), "tensorflow/keras": (12, 15, 11, 15), "torch": (10, 14, 5, 14),
    "matplotlib": (3, 6, 4, 6), "seaborn": (1, 6, 5, 6), "statsmodels": (0, 2, 2, 2),
    "lightgbm": (0, 1, 1, 1), "torchvision": (1, 1, 0, 1),
}


def test_qwen_code_only_majority_vote_matches_table_2b(qwen, reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                       "--format", "json")
    assert code == 0
    report = json.loads(out)
    # The paper prints percentages with one decimal: 72.4, 64.0, 67.9, 69.8.
    assert tuple(round(100 * report[k], 1) for k in ("precision", "recall", "f1", "accuracy")) == (
        72.4, 64.0, 67.9, 69.8)
    assert report["n"] == 222 and report["notebooks"] == 222
    assert (report["tp"], report["fp"], report["tn"], report["fn"]) == (71, 27, 84, 40)
    assert report["missing"] == [] and report["unparsable"]["count"] == 0
    assert report["layout"] == "instances" and report["vote"] == "majority"
    assert {r["library"] for r in report["by_library"]} >= {"notebook-specific", "torch"}
    assert sum(r["n"] for r in report["by_root_cause"]) == 222


def test_mistral_first_valid_matches_the_junobench_repository(mistral, reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "evaluate", str(mistral), "--source", str(reference_snapshot),
                       "--vote", "first-valid")
    assert code == 0
    assert "63/108 correct" in out and "65/108 correct" in out
    assert "numpy_7, numpy_8, torch_6 (reproduced and fixed)" in out
    assert "2 of 1080 runs" in out and "torch_4_reproduced run 3: '[Error-skipping]'" in out
    rows = {line.split("  ")[0]: line.split() for line in out.splitlines()}
    assert rows["notebook-specific"][2:4] == ["15/20", "7/20"]


def test_mistral_by_library_table_in_json(mistral, reference_snapshot):
    report = evaluate(mistral, reference_snapshot, vote="first-valid").to_dict()
    assert report["reproduced"] == {"correct": 63, "total": 108}
    assert report["fixed"] == {"correct": 65, "total": 108}
    assert sorted(report["missing_cases"]) == ["numpy_7", "numpy_8", "torch_6"]
    assert len(report["missing"]) == 6
    table = {r["library"]: tuple(int(x) for part in (r["reproduced"], r["fixed"])
                                 for x in part.split("/")) for r in report["by_library"]}
    assert table == MISTRAL_BY_LIBRARY
    items = {(u["instance"], u["run"]) for u in report["unparsable"]["items"]}
    assert items == {("torch_4_reproduced", 3), ("sklearn_3_fixed", 2)}


def test_votes_differ_as_defined(mistral, reference_snapshot):
    first = evaluate(mistral, reference_snapshot, vote="first-valid")
    majority = evaluate(mistral, reference_snapshot, vote="majority")
    every = evaluate(mistral, reference_snapshot, vote="all-runs")
    assert len(first.decisions) == len(majority.decisions) == 216
    assert every.overall.n == 1080 - 2  # each parsable run scored on its own
    assert majority.overall != first.overall  # some notebooks have mixed runs


def test_csv_and_root_cause_breakdown(qwen, reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                       "--by", "root-cause", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[-1]["root cause"] == "all" and rows[-1]["f1"] == "0.679"
    causes = {r["root cause"]: int(r["n"]) for r in rows[:-1]}
    assert causes["API misuse"] == 90 and causes["NB specific"] == 40
    assert sum(causes.values()) == 222


def test_filters_restrict_the_scored_notebooks(qwen, reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                       "--library", "torch", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["n"] == 30 and report["missing"] == []
    assert [r["library"] for r in report["by_library"]] == ["torch"]


def test_plot_writes_a_png(qwen, reference_snapshot, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    target = tmp_path / "plots" / "acc.png"
    code, _, err = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                       "--plot", str(target))
    assert code == 0 and "plot written" in err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unparsable_runs_are_counted_and_an_all_unparsable_notebook_stays_in_n_as_no_crash(
        qwen, reference_snapshot, tmp_path):
    folder = tmp_path / "preds"
    shutil.copytree(qwen, folder)
    (folder / "torch_1_fixed.json").write_text(json.dumps(["no idea", "```\nmaybe\n```"]))
    (folder / "torch_2_fixed.json").write_text(json.dumps(
        ['Sure. ```json\n{"reasoning": "fine", "detection": false}\n```', "TRUE", "FALSE"]))
    report = evaluate(folder, reference_snapshot)
    data = report.to_dict()
    assert data["undecided"] == ["torch_1_fixed"]
    assert data["unparsable"]["count"] == 2
    assert data["notebooks"] == 222  # not dropped: scored as no crash (right, on a fixed notebook)
    (folder / "torch_1_reproduced.json").write_text("[NaN, NaN, NaN]")
    data = evaluate(folder, reference_snapshot).to_dict()
    assert data["notebooks"] == 222 and data["unparsable"]["count"] == 5
    assert sorted(data["undecided"]) == ["torch_1_fixed", "torch_1_reproduced"]
    text = format_report(report)
    assert "undecided    1 notebooks with no parsable run" in text
    assert "torch_1_fixed run 1: 'no idea'" in text


def test_unknown_instance_is_an_error_naming_it(qwen, reference_snapshot, tmp_path, capsys):
    folder = tmp_path / "preds"
    shutil.copytree(qwen, folder)
    (folder / "torch_99_fixed.json").write_text(json.dumps(["FALSE"]))
    code, _, err = run_cli(capsys, "evaluate", str(folder), "--source", str(reference_snapshot))
    assert code == 1
    assert "torch_99_fixed" in err and "torch_99_fixed.json" in err
    assert "Traceback" not in err


def test_canonical_jsonl_gives_the_same_scores(qwen, reference_snapshot, tmp_path):
    from junobench.detection.layouts import read_predictions
    from junobench.detection.predictions import write_predictions

    runs = read_predictions(qwen).runs
    path = write_predictions(tmp_path / "qwen.jsonl", sorted(runs.items()))
    assert evaluate(path, reference_snapshot).overall == evaluate(qwen, reference_snapshot).overall


def test_missing_predictions_folder_is_a_clear_error(reference_snapshot, tmp_path):
    with pytest.raises(JunoBenchError, match="no such predictions"):
        evaluate(tmp_path / "nope", reference_snapshot)


def test_library_subfolders_and_a_fallback_for_missing_notebooks(qwen,
                                                                 reference_snapshot, tmp_path):
    folder = tmp_path / "runinfo"
    (folder / "other").mkdir(parents=True)
    for file in sorted(qwen.glob("*.json"))[:40]:
        target = folder / ("other" if file.name.startswith(("seaborn", "matplotlib")) else "")
        shutil.copy(file, target / file.name)
    (folder / "other" / "lightgbm_1_fixed.json").write_text('["FALSE"]')
    report = evaluate(folder, reference_snapshot, fallback=qwen)
    data = report.to_dict()
    assert data["layout"] == "instances" and data["missing"] == []
    assert len(data["filled"]) == 222 - 41 and "lightgbm_1_fixed" not in data["filled"]
    assert "filled       181 notebooks" in format_report(report)
    alone = evaluate(folder, reference_snapshot)
    assert len(alone.missing) == 222 - 41
    with pytest.raises(JunoBenchError, match="two files"):
        shutil.copy(folder / "other" / "lightgbm_1_fixed.json", folder / "lightgbm_1_fixed.json")
        evaluate(folder, reference_snapshot)
