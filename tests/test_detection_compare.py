"""Side-by-side comparisons on hand-built reports: the shared notebooks, the excluded ones,
the pair tests and every output format (no snapshot needed)."""

from __future__ import annotations

import json

import pytest

from junobench.detection.compare import (
    Comparison,
    compare,
    compare_reports,
    format_comparison,
    pair_rows,
    pair_test,
    summary_rows,
    unique_names,
)
from junobench.detection.evaluate import Decision, Report
from junobench.errors import JunoBenchError

LABELS = {"a_1": ("pandas", "API misuse"), "b_2": ("torch", "data confusion"),
          "c_3": ("numpy", "API misuse")}


def report(decisions: dict[str, bool], name: str) -> Report:
    """A report of decisions on ``<case>_<version>`` notebooks (reproduced crash)."""
    made = [Decision(instance, instance.endswith("_reproduced"), decision,
                     {"library_label": LABELS[instance.rsplit("_", 1)[0]][0],
                      "root_cause": LABELS[instance.rsplit("_", 1)[0]][1]})
            for instance, decision in decisions.items()]
    return Report("majority", made, notebooks=6, predictions=name, resamples=4, seed=0)


#: A flags every notebook of a and b, none of c; it did not decide c_3_fixed.
A = report({"a_1_reproduced": True, "a_1_fixed": True, "b_2_reproduced": True,
            "b_2_fixed": True, "c_3_reproduced": False}, "runs/a.jsonl")
#: B is right on a, misses b's crash, flags both of c.
B = report({"a_1_reproduced": True, "a_1_fixed": False, "b_2_reproduced": False,
            "b_2_fixed": False, "c_3_reproduced": True, "c_3_fixed": True}, "runs/b.jsonl")
COMMON = ["a_1_reproduced", "a_1_fixed", "b_2_reproduced", "b_2_fixed", "c_3_reproduced"]


@pytest.fixture
def comparison() -> Comparison:
    made = Comparison(["A", "B"], [A, B], COMMON, resamples=4, seed=0)
    restricted = made.scored
    made.tests.append(pair_test("A", restricted[0], "B", restricted[1], resamples=4, seed=0))
    return made


def test_only_the_shared_notebooks_are_scored_and_the_rest_listed(comparison):
    assert comparison.excluded() == {"A": [], "B": ["c_3_fixed"]}
    a, b = comparison.rows()
    assert (a["setting"], a["n"], a["tp"], a["fp"], a["tn"], a["fn"]) == ("A", 5, 2, 2, 0, 1)
    assert (b["setting"], b["n"], b["tp"], b["fp"], b["tn"], b["fn"]) == ("B", 5, 2, 0, 2, 1)
    assert a["precision"] == 0.5 and b["precision"] == 1.0
    assert a["accuracy"] == 2 / 5 and b["accuracy"] == 4 / 5
    assert a["precision_low"] <= a["precision"] <= a["precision_high"]


def test_the_pair_test_counts_who_was_right_where(comparison):
    (test,) = comparison.tests
    assert (test.a, test.b, test.n) == ("A", "B", 5)
    # A right on a_1_reproduced, b_2_reproduced; B right on a_1 (both), b_2_fixed, c_3_reproduced
    assert (test.mcnemar.only_a, test.mcnemar.only_b) == (1, 3)
    assert test.f1.estimate == pytest.approx(2 * 2 / (4 + 2 + 1) - 2 * 2 / (4 + 0 + 1))
    data = test.to_dict()
    assert {k: data["mcnemar"][k] for k in ("only_a_correct", "only_b_correct", "p_value",
                                            "exact")} == {"only_a_correct": 1, "only_b_correct": 3,
                                                          "p_value": test.mcnemar.p_value,
                                                          "exact": True}
    assert data["f1_difference"]["estimate"] == test.f1.estimate
    with pytest.raises(ValueError, match="same notebooks"):
        pair_test("A", A, "B", B)


def test_json_holds_sets_exclusions_tests_and_settings(comparison):
    data = json.loads(format_comparison(comparison, "json"))
    assert data["notebooks"] == 5
    assert [s["name"] for s in data["sets"]] == ["A", "B"]
    assert data["excluded"] == {"A": [], "B": ["c_3_fixed"]}
    assert data["tests"][0]["a"] == "A" and data["tests"][0]["notebooks"] == 5
    assert data["bootstrap"]["resamples"] == 4 and data["bootstrap"]["seed"] == 0


def test_the_json_states_the_bootstrap_the_text_states():
    made = Comparison(["A", "B"], [A, B], COMMON, resamples=7, seed=3)
    assert json.loads(format_comparison(made, "json"))["bootstrap"] == {
        "unit": "case", "resamples": 7, "seed": 3, "confidence": 0.95, "method": "percentile"}
    assert "95% intervals from 7 case bootstraps (seed 3)" in format_comparison(made)


def test_names_and_reports_that_disagree_in_number_are_refused_not_dropped():
    made = Comparison(["A", "B", "C"], [A, B], COMMON)
    for output in (made.rows, made.excluded, made.to_dict):
        with pytest.raises(ValueError):
            output()


def test_text_outputs(comparison):
    table = format_comparison(comparison, "table")
    assert table.startswith("5 notebooks decided by every set; 95% intervals from 4 case "
                            "bootstraps (seed 0)\nB: 1 notebooks left out")
    assert "Paired tests (exact McNemar" in table
    assert f"{comparison.tests[0].f1.estimate:+.3f}" in table
    (row,) = pair_rows(comparison)
    assert row["F1 A-B"] == f"{comparison.tests[0].f1.estimate:+.3f}"
    assert (row["only A right"], row["only B right"], row["n"]) == (1, 3, 5)
    assert row["McNemar p"] == f"{comparison.tests[0].mcnemar.p_value:.3f}"
    percent = summary_rows(comparison, percent=True)
    assert "Precision (%)" in percent[0] and percent[0]["setting"] == "A"
    assert "| A |" in format_comparison(comparison, "markdown")
    assert "\\begin{tabular}" in format_comparison(comparison, "latex")
    csv = format_comparison(comparison, "csv").splitlines()
    assert csv[0].startswith("setting,n,precision,precision_low")
    assert [line.split(",")[0] for line in csv[1:]] == ["A", "B", "A vs B"]


def test_p_values_and_missing_estimates_are_shown_plainly(comparison):
    from dataclasses import replace

    test = comparison.tests[0]
    tiny = replace(test, mcnemar=replace(test.mcnemar, p_value=0.0002),
                   f1=replace(test.f1, estimate=None, p_value=None, interval=None))
    comparison.tests[0] = tiny
    (row,) = pair_rows(comparison)
    assert row["McNemar p"] == "<0.001" and row["bootstrap p"] == "n/a"
    assert row["F1 A-B"] == "n/a"
    exact = replace(test, mcnemar=replace(test.mcnemar, p_value=0.001))
    comparison.tests[0] = exact
    assert pair_rows(comparison)[0]["McNemar p"] == "0.001"


def test_names_from_paths_grow_until_distinct():
    assert unique_names(["x/qwen/code.jsonl", "x/gpt/code.jsonl", "x/gpt/runinfo"]) == \
        ["qwen/code", "gpt/code", "runinfo"]
    assert unique_names(["a/b/same.eval", "a/c/same.json", "d"]) == ["b/same", "c/same", "d"]
    assert unique_names(["same", "same"]) == ["same", "same"]  # nothing left to add


def test_a_comparison_needs_two_sets_of_one_decision_each():
    with pytest.raises(JunoBenchError, match="at least two"):
        compare(["one.jsonl"], "sample")
    with pytest.raises(JunoBenchError, match="all-runs"):
        compare(["a.jsonl", "b.jsonl"], "sample", vote="all-runs")
    with pytest.raises(JunoBenchError, match="--resamples"):
        compare(["a.jsonl", "b.jsonl"], "sample", resamples=0)


#: C flags only the crashes of a and c.
C = report({"a_1_reproduced": True, "a_1_fixed": False, "b_2_reproduced": False,
            "b_2_fixed": False, "c_3_reproduced": True, "c_3_fixed": False}, "runs/c.jsonl")


def test_three_sets_are_three_pairs_with_holm_adjusted_p_values_in_every_format():
    three = compare_reports(["A", "B", "C"], [A, B, C], resamples=4, seed=0)
    assert three.common == COMMON  # A did not decide c_3_fixed
    assert [(t.a, t.b) for t in three.tests] == [("A", "B"), ("A", "C"), ("B", "C")]
    for test in three.tests:  # Holm multiplies the smallest raw p by the number of pairs
        assert test.mcnemar_holm is not None and test.mcnemar_holm >= test.mcnemar.p_value
    smallest = min(three.tests, key=lambda t: t.mcnemar.p_value)
    assert smallest.mcnemar_holm == min(1.0, 3 * smallest.mcnemar.p_value)
    table = format_comparison(three, "table")
    assert "Holm-adjusted p-values over the 3 pairs)" in table
    assert "B: 1 notebooks left out" in table and "C: 1 notebooks left out" in table
    assert "A: " not in table  # A decided only the shared notebooks
    assert all("McNemar p (Holm)" in row and "bootstrap p (Holm)" in row
               for row in pair_rows(three))
    latex = format_comparison(three, "latex")
    assert "; Holm-adjusted p-values over the pairs\n" in latex
    assert latex.count("\\begin{tabular}") == 2
    assert "McNemar p (Holm)" in latex


def test_one_pair_has_no_holm_columns_and_no_pair_no_test_section(comparison):
    latex = format_comparison(comparison, "latex")
    assert "% Paired tests: exact McNemar on notebooks right/wrong; paired case bootstrap of " \
           "the F1 difference\n" in latex
    assert "Holm" not in latex and "Holm" not in format_comparison(comparison, "table")
    assert "Holm" not in "".join(pair_rows(comparison)[0])
    alone = Comparison(["A", "B"], [A, B], COMMON, resamples=4, seed=0)  # no test run
    assert "Paired tests" not in format_comparison(alone, "latex")
    assert format_comparison(alone, "latex").count("\\begin{tabular}") == 1
    table = format_comparison(alone, "table")
    assert "Paired tests" not in table and "only A right" not in table


def test_markdown_escapes_the_set_names_in_its_notes_and_the_table_keeps_them():
    made = compare_reports(["A", "*b*|"], [A, B], resamples=4, seed=0)
    markdown = format_comparison(made, "markdown")
    assert "\\*b\\*\\|: 1 notebooks left out" in markdown
    assert "*b*|: 1 notebooks left out" in format_comparison(made, "table")


def test_one_distinct_name_per_set_and_the_shared_notebooks_in_the_first_set_s_order():
    with pytest.raises(JunoBenchError, match="one distinct name per prediction set"):
        compare_reports(["A"], [A, B])
    with pytest.raises(JunoBenchError, match="names: A, A"):
        compare_reports(["A", "A"], [A, B])
    from dataclasses import replace

    backwards = replace(B, decisions=list(reversed(B.decisions)))
    assert compare_reports(["B", "A"], [backwards, A], resamples=4).common == COMMON[::-1]
    assert compare_reports(["A", "B"], [A, backwards], resamples=4).common == COMMON
