"""Intervals, paired tests and the comparison outputs of ``junobench evaluate``."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from math import comb

import numpy as np
import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junobench.detection.compare import compare, unique_names
from junobench.detection.evaluate import evaluate, figure
from junobench.detection.layouts import read_predictions
from junobench.detection.predictions import write_predictions
from junobench.detection.uncertainty import (
    bootstrap,
    case_counts,
    mcnemar,
    metric_values,
    paired_difference,
)

METRICS = ("precision", "recall", "f1", "accuracy")


@pytest.fixture(scope="module")
def qwen_report(qwen, reference_snapshot):
    return evaluate(qwen, reference_snapshot)


def test_json_keeps_plain_top_level_numbers_at_full_precision(qwen_report):
    data = qwen_report.to_dict()
    assert data["f1"] == 2 * 71 / (2 * 71 + 27 + 40)  # not rounded
    assert data["precision"] == 71 / 98 and data["accuracy"] == 155 / 222
    for key in ("precision", "recall", "f1", "accuracy", "tp", "fp", "tn", "fn", "n"):
        assert isinstance(data[key], (int, float)) and not isinstance(data[key], bool), key
    assert isinstance(data["missing"], list)
    assert set(data["intervals"]) == set(METRICS)
    assert data["bootstrap"] == {"unit": "case", "resamples": 2000, "seed": 0,
                                 "confidence": 0.95, "method": "percentile"}
    assert all("intervals" in row for row in data["by_library"])


def test_intervals_are_reproducible_per_seed_and_contain_the_estimate(qwen, reference_snapshot,
                                                                       qwen_report):
    again = evaluate(qwen, reference_snapshot).intervals()
    assert again == qwen_report.intervals()
    other = evaluate(qwen, reference_snapshot, seed=7).intervals()
    assert other != again
    values = qwen_report.to_dict()
    for metric in METRICS:
        low, high = again[metric]
        assert low < values[metric] < high, metric
        assert high - low < 0.2  # 111 cases: a few points either way, not the whole range


def test_resampling_keeps_a_case_s_two_notebooks_together():
    # A detector that says "crash" to both notebooks of every case is right on exactly one
    # of each pair: its accuracy is 0.5 in every resample of cases, never otherwise.
    scored = [(f"torch_{k}", truth, True) for k in range(40) for truth in (True, False)]
    low, high = bootstrap(scored, resamples=500, seed=3)["accuracy"]
    assert low == high == 0.5
    cases, counts = case_counts(scored)
    assert len(cases) == 40 and counts.tolist()[0] == [1, 1, 0, 0]


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 30), st.booleans(), st.booleans()), min_size=1,
                max_size=120), st.integers(0, 2**32 - 1))
def test_any_scores_interval_contains_the_estimate(items, seed):
    scored = [(f"pandas_{case}", truth, decision) for case, truth, decision in items]
    _, counts = case_counts(scored)
    point = metric_values(counts.sum(axis=0))
    intervals = bootstrap(scored, resamples=300, seed=seed)
    assert intervals == bootstrap(scored, resamples=300, seed=seed)
    for metric in METRICS:
        if np.isnan(point[metric]):
            continue
        low, high = intervals[metric]
        assert low - 1e-12 <= point[metric] <= high + 1e-12 or _skewed(counts, metric), metric


def _skewed(counts, metric) -> bool:
    """A percentile interval can miss the estimate only when very few cases define it."""
    defined = {"precision": counts[:, 0] + counts[:, 1], "recall": counts[:, 0] + counts[:, 3]}
    return metric in defined and int((defined[metric] > 0).sum()) <= 3


def test_resamples_are_settable(qwen, reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                           "--resamples", "50", "--seed", "5", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["bootstrap"]["resamples"] == 50 and data["bootstrap"]["seed"] == 5
    code, _, err = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                           "--resamples", "0")
    assert code == 1 and "--resamples" in err


def test_mcnemar_matches_the_hand_computed_exact_test():
    # 2x2 of right/wrong: both right 50, only A right 10, only B right 2, both wrong 8.
    a = [True] * 50 + [True] * 10 + [False] * 2 + [False] * 8
    b = [True] * 50 + [False] * 10 + [True] * 2 + [False] * 8
    test = mcnemar(a, b)
    assert (test.only_a, test.only_b, test.discordant) == (10, 2, 12)
    by_hand = 2 * sum(comb(12, k) for k in range(3)) / 2**12  # two-sided binomial, p = 1/2
    assert test.p_value == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(0.0386, abs=1e-4)
    assert mcnemar(a, a).p_value == 1.0
    assert mcnemar([True, False], [False, True]).p_value == 1.0
    with pytest.raises(ValueError, match="same notebooks"):
        mcnemar([True, False], [True])


def test_paired_difference_of_a_set_with_itself_is_zero():
    scored = [(f"numpy_{k % 9}", k % 2 == 0, k % 3 == 0) for k in range(40)]
    same = paired_difference(scored, scored, resamples=200)
    assert same.estimate == 0 and same.interval == (0.0, 0.0) and same.p_value == 1.0


def test_comparing_two_published_settings(qwen, mistral, reference_snapshot, capsys):
    code, out, err = run_cli(capsys, "evaluate", str(qwen), str(mistral), "--source",
                             str(reference_snapshot), "--name", "qwen", "--name", "mistral",
                             "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["notebooks"] == 216  # Mistral skipped 3 cases: both scored without them
    assert [s["name"] for s in data["sets"]] == ["qwen", "mistral"]
    assert all(s["n"] == 216 for s in data["sets"])
    assert len(data["excluded"]["qwen"]) == 6 and data["excluded"]["mistral"] == []
    (test,) = data["tests"]
    assert (test["a"], test["b"], test["notebooks"]) == ("qwen", "mistral", 216)
    comparison = compare([qwen, mistral], reference_snapshot)
    sets = comparison.scored
    right = [{d.instance: d.truth == d.decision for d in s.decisions} for s in sets]
    only_a = sum(right[0][i] and not right[1][i] for i in right[0])
    only_b = sum(right[1][i] and not right[0][i] for i in right[0])
    assert test["mcnemar"]["only_a_correct"] == only_a and test["mcnemar"]["only_b_correct"] == only_b
    f1 = test["f1_difference"]
    assert f1["estimate"] == pytest.approx(sets[0].overall.f1 - sets[1].overall.f1)
    assert f1["interval"][0] <= f1["estimate"] <= f1["interval"][1]
    code, text, _ = run_cli(capsys, "evaluate", str(qwen), str(mistral), "--source",
                            str(reference_snapshot))
    assert "Paired tests" in text and "McNemar p" in text and "216 notebooks decided" in text


def test_comparison_csv_and_markdown(qwen, mistral, reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "evaluate", str(qwen), str(mistral), "--source",
                           str(reference_snapshot), "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["setting"] for r in rows] == ["code", "mistral_small_3_1",
                                            "code vs mistral_small_3_1"]
    assert {"f1", "f1_low", "f1_high", "tp"} <= set(rows[0])
    # The pair's tests follow the sets, in columns of their own.
    assert rows[2]["f1"] == "" and 0 <= float(rows[2]["mcnemar_p"]) <= 1
    assert rows[2]["mcnemar_p_holm"] == rows[2]["mcnemar_p"]  # one pair: nothing to adjust
    code, out, _ = run_cli(capsys, "evaluate", str(qwen), str(mistral), "--source",
                           str(reference_snapshot), "--format", "markdown")
    tables = [block for block in out.split("\n\n") if block.startswith("|")]
    assert len(tables) == 2
    for block in tables:
        lines = block.strip().splitlines()
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in lines}
        assert len(widths) == 1 and re.fullmatch(r"\|(-{3}|-{2}:)(\|(-{3}|-{2}:))*\|", lines[1])


def latex_rows(text: str) -> tuple[str, list[str]]:
    """The column spec and the body lines of one tabular; fails on anything else."""
    lines = text.strip().splitlines()
    while lines and lines[-1].startswith("% "):  # notes under the table are comments
        lines.pop()
    head = re.fullmatch(r"\\begin\{tabular\}\{([lrc]+)\}", lines[0])
    assert head, lines[0]
    assert lines[-1] == r"\end{tabular}"
    assert text.count(r"\begin{") == text.count(r"\end{") == 1
    body = [line for line in lines[1:-1] if line not in (r"\toprule", r"\midrule", r"\bottomrule")]
    return head.group(1), body


def test_latex_is_a_table_fragment_a_paper_can_include(qwen, mistral, reference_snapshot,
                                                       tmp_path, capsys):
    odd = tmp_path / "runs & 50%" / "qwen_code#1"
    shutil.copytree(qwen, odd)
    code, out, err = run_cli(capsys, "evaluate", str(odd), str(mistral), "--source",
                             str(reference_snapshot), "--format", "latex")
    assert code == 0, err
    scores, tests = out.split("\n% Paired tests")
    spec, body = latex_rows(scores)
    # The paired tests that Markdown shows come as a second tabular, after a comment.
    _test_spec, test_body = latex_rows(tests.split("\n", 1)[1])
    assert "McNemar p" in test_body[0] and "bootstrap p" in test_body[0]
    assert test_body[1].startswith(r"qwen\_code\#1 & mistral\_small\_3\_1 & 216 & ")
    assert len(spec) == 6  # setting, n, precision, recall, F1, accuracy
    for line in body:
        assert line.endswith(r"\\")
        assert len(re.findall(r"(?<!\\)&", line)) == len(spec) - 1, line
        assert line.count("{") == line.count("}")
    assert r"Precision (\%)" in body[0] and "F1" in body[0]
    assert body[1].startswith(r"qwen\_code\#1 & 216 & ")  # names escaped
    assert re.search(r"& \d+\.\d \[\d+\.\d, \d+\.\d\] \\\\$", body[1])
    # One report: a row per library and one for all notebooks.
    code, out, _ = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                           "--format", "latex")
    spec, body = latex_rows(out)
    assert body[-1].startswith("all & 222 & 72.4 [") and "67.9 [" in body[-1]
    assert any(line.startswith(r"tensorflow/keras & 30") for line in body)
    # Libraries of one or two cases: their intervals are flagged, with the note under the table.
    small = [line for line in body if "†" in line]
    assert small and all(line.split(" & ")[1] in ("2", "4") for line in small)
    assert not any("†" in line for line in body if line.startswith(("all", "tensorflow")))
    assert out.rstrip().endswith("the interval says little")
    if shutil.which("pdflatex"):
        document = (r"\documentclass{article}\usepackage{booktabs}\begin{document}"
                    r"\begin{table}\input{t.tex}\end{table}\end{document}")
        (tmp_path / "t.tex").write_text(out)
        (tmp_path / "d.tex").write_text(document)
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "d.tex"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:]


def test_comparison_needs_two_decisions_per_notebook_rule(qwen, reference_snapshot, capsys):
    code, _, err = run_cli(capsys, "evaluate", str(qwen), str(qwen), "--source",
                           str(reference_snapshot), "--vote", "all-runs")
    assert code == 1 and "all-runs" in err
    code, _, err = run_cli(capsys, "evaluate", str(qwen), str(qwen), "--source",
                           str(reference_snapshot))
    assert code == 1 and "distinct name" in err
    code, _, err = run_cli(capsys, "evaluate", str(qwen), "--source", str(reference_snapshot),
                           "--name", "x")
    assert code == 1 and "several PRED" in err


def test_names_from_paths_are_short_and_distinct():
    assert unique_names(["a/qwen/code", "a/gpt/code"]) == ["qwen/code", "gpt/code"]
    assert unique_names(["x/pred.jsonl", "y/other.jsonl"]) == ["pred", "other"]
    assert unique_names(["same", "same"]) == ["same", "same"]  # left to the caller to refuse


def test_a_canonical_copy_compares_equal(qwen, reference_snapshot, tmp_path):
    copy = write_predictions(tmp_path / "copy.jsonl", sorted(read_predictions(qwen).runs.items()))
    (test,) = compare([qwen, copy], reference_snapshot, resamples=100).tests
    assert test.mcnemar.discordant == 0 and test.mcnemar.p_value == 1.0
    assert test.f1.estimate == 0.0 and test.f1.p_value == 1.0


def test_plot_shows_group_sizes_and_keeps_the_legend_off_the_bars(qwen_report):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    fig = figure(qwen_report, "library")
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        (ax,) = fig.axes
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert "torch\n(n=30)" in labels and "lightgbm\n(n=2)" in labels
        legend = ax.get_legend().get_window_extent(renderer)
        bars = [patch.get_window_extent(renderer) for patch in ax.patches]
        assert bars and not any(legend.overlaps(bar) for bar in bars)
        assert not legend.overlaps(ax.get_window_extent(renderer))  # outside the axes
        kinds = [type(c).__name__ for c in ax.containers]
        assert kinds.count("BarContainer") == 3 and "ErrorbarContainer" in kinds  # accuracy CI
    finally:
        plt.close(fig)
