"""Comparisons of several sets are a family of tests (Holm-adjusted p-values), and groups
too small for the case bootstrap have their intervals flagged."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest
from cli_run import run_cli

from junobench.detection.uncertainty import holm, too_few_cases


def test_holm_matches_statsmodels(monkeypatch):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    # statsmodels collects garbage on every call: a second per call late in a full run
    monkeypatch.setattr("gc.collect", lambda *args: 0)
    rng = random.Random(4)
    for _ in range(100):
        p = [rng.choice([rng.random(), rng.random() / 50, 1.0]) for _ in range(rng.randint(1, 8))]
        expected = multitest.multipletests(p, method="holm")[1]
        assert holm(p) == pytest.approx(list(expected), abs=1e-12)
    assert holm([0.2, None, 0.01]) == [0.2, None, 0.02]


def test_three_settings_get_adjusted_p_values_in_every_format(crane_summary, capsys):
    args = ["evaluate", "--judgments", str(crane_summary), "--resamples", "50",
            "--setting", "gpt_5_crash_detection_code", "--setting",
            "gpt_5_crash_detection_code_runinfo", "--setting", "pylint_crash_detection_code"]
    from junobench.detection.compare import compare_reports
    from junobench.diagnosis.endtoend import score_judgments

    scores = score_judgments(crane_summary, settings=args[6::2], resamples=50)
    comparison = compare_reports(list(scores), [s.report for s in scores.values()], resamples=50)
    raw = [t.mcnemar.p_value for t in comparison.tests]
    assert [t.mcnemar_holm for t in comparison.tests] == holm(raw)
    assert any(t.mcnemar_holm > t.mcnemar.p_value for t in comparison.tests)
    for fmt in ("table", "markdown", "latex"):
        _, out, _ = run_cli(capsys, *args, "--format", fmt)
        assert "McNemar p (Holm)" in out and "bootstrap p (Holm)" in out, fmt


def test_small_groups_are_flagged_in_json_and_csv(qwen, reference_snapshot, capsys):
    assert too_few_cases(2) and not too_few_cases(3)
    code, out, err = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                             "--format", "json", "--resamples", "50")
    assert code == 0, err
    rows = {r["library"]: r for r in json.loads(out)["by_library"]}
    assert rows["statsmodels"]["cases"] == 2 and rows["statsmodels"]["too_few_cases"] is True
    assert rows["torchvision"]["too_few_cases"] is True
    assert rows["pandas"]["too_few_cases"] is False
    _, out, _ = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                        "--format", "csv", "--resamples", "50")
    flagged = {r["library"] for r in csv.DictReader(io.StringIO(out)) if r.get("too_few_cases") == "True"}
    assert flagged == {"statsmodels", "torchvision", "lightgbm"}
    _, out, _ = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                        "--format", "markdown", "--resamples", "50")
    assert "| statsmodels | 4 |" in out and "†" in out.split("| statsmodels")[1].split("\n")[0]
    assert "fewer than 3 cases" in out
