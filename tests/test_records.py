"""The records of the reference snapshot: counts, orders, filters, cache."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest

import junobench

# Facts of the JunoBench paper (Figure 2, section 3), from ../shared/reference/README.md.
LIBRARY_COUNTS = {"tensorflow": 15, "torch": 15, "sklearn": 15, "numpy": 15, "pandas": 15,
                  "seaborn": 6, "matplotlib": 6, "statsmodels": 2, "torchvision": 1,
                  "lightgbm": 1, "NBspecific": 20}
ROOT_CAUSES = {"API misuse": 45, "data confusion": 25, "NB specific": 20,
               "implementation error": 18, "ML model confusion": 2, "library cause": 1}
STAGES = {"training": 31, "data preparation": 30, "evaluation/prediction": 21,
          "data visualization": 20, "model construction": 9}
CRASH_TYPES = {"invalid argument": 21, "tensor shape mismatch": 16, "key error": 11,
               "value error": 11, "variable not found": 10, "index error": 8,
               "attribute error": 8, "data value violation": 7, "unsupported broadcast": 5,
               "type error": 4, "module not found": 3, "runtime error": 3,
               "feature name mismatch": 2, "io error": 1, "model initialization error": 1}



def test_ls_json_lists_the_111_cases_with_the_published_label_counts(reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "ls", "--source", str(reference_snapshot), "--format", "json")
    assert code == 0
    cases = json.loads(out)
    assert len(cases) == 111
    assert {"case_id", "library", "root_cause", "crash_type", "pipeline_stage",
            "exception"} <= set(cases[0])
    assert Counter(c["library"] for c in cases) == LIBRARY_COUNTS
    assert Counter(c["root_cause"] for c in cases) == ROOT_CAUSES
    assert Counter(c["pipeline_stage"] for c in cases) == STAGES
    assert Counter(c["crash_type"] for c in cases) == CRASH_TYPES


def test_notebooks_config_has_222_rows_half_crashing(reference_snapshot, caplog):
    notebooks = junobench.load(reference_snapshot, "notebooks")
    assert len(notebooks) == 222
    assert sum(notebooks["crash"]) == 111
    rows = notebooks.to_list()
    for row in rows:
        if row["version"] == "reproduced":
            assert row["diagnosis"], row["instance"]
            assert row["exception"]
        else:
            assert row["diagnosis"] is None and row["exception"] is None
        assert row["target_cell"]["source"] is not None
    by_instance = {r["instance"]: r for r in rows}
    nb5 = by_instance["NBspecific_5_reproduced"]
    assert nb5["executed_cells"][-1]["code_cell_index"] == 14
    assert nb5["target_cell"]["code_cell_index"] == 14
    assert nb5["executed_cells"][-1]["execution_count"] is None  # the unrecorded first run
    assert "original notebook not in snapshot for 111 case(s)" in caplog.text


def test_absent_originals_are_null(reference_snapshot):
    cases = junobench.load(reference_snapshot, "cases")
    assert cases.data.column("original").null_count == 111
    assert cases.data.column("reproduced").null_count == 0
    record = cases[0]
    assert json.loads(record["reproduced"])["nbformat"] == 4
    assert all(d["files"] == [] for d in record["datasets"])
    assert record["datasets"][0]["title"] and record["datasets"][0]["license"]


def test_case_record_matches_its_notebooks(reference_snapshot):
    case = {c["case_id"]: c for c in junobench.load(reference_snapshot, "cases").to_list()}["torch_11"]
    order = case["execution_order"]["reproduced"]
    assert [r["execution_count"] for r in order][-4:] == [20, 22, 23, 24]
    assert order[-1]["code_cell_index"] == case["target_cell_index"] == 19
    assert case["execution_order"]["fixed"][-1]["code_cell_index"] == 19
    assert case["crash_line"] is not None
    assert case["library_label"] == "torch"


@pytest.mark.parametrize(
    "filters",
    [{"library": "torch", "root_cause": "API misuse"},
     {"library": ["pandas", "numpy"], "pipeline_stage": "data preparation"},
     {"crash_type": "key error"}],
)
def test_load_filters_ls_filters_and_pandas_agree(reference_snapshot, capsys, filters):
    table = pd.read_excel(reference_snapshot / "benchmark_desc.xlsx", engine="openpyxl")
    table["library"] = table["nb_name"].str.rsplit("_", n=1).str[0]
    columns = {"library": "library", "root_cause": "label_root_cause",
               "pipeline_stage": "label_ML_pipeline", "crash_type": "label_refined_exp_type"}
    options = {"library": "--library", "root_cause": "--root-cause",
               "pipeline_stage": "--stage", "crash_type": "--crash-type"}
    mask = pd.Series(True, index=table.index)
    argv = ["ls", "--source", str(reference_snapshot), "--format", "json"]
    for name, value in filters.items():
        values = [value] if isinstance(value, str) else value
        mask &= table[columns[name]].isin(values)
        for v in values:
            argv += [options[name], v]
    expected = sorted(table.loc[mask, "nb_name"])
    assert expected
    loaded = sorted(junobench.load(reference_snapshot, "cases", **filters)["case_id"])
    _, out, _ = run_cli(capsys, *argv)
    assert loaded == sorted(c["case_id"] for c in json.loads(out)) == expected
    notebooks = junobench.load(reference_snapshot, "notebooks", **filters)
    assert sorted(set(notebooks["case_id"])) == expected


def test_unknown_filter_value_suggests_the_right_one(reference_snapshot):
    with pytest.raises(junobench.JunoBenchError, match="did you mean 'API misuse'"):
        junobench.load(reference_snapshot, root_cause="API missuse")
    with pytest.raises(junobench.JunoBenchError, match="unknown filter"):
        junobench.load(reference_snapshot, colour="red")


def test_library_label_is_accepted_as_a_library_filter(reference_snapshot):
    cases = junobench.load(reference_snapshot, library="tensorflow/keras")
    assert set(cases["library"]) == {"tensorflow"} and len(cases) == 15


def test_show_prints_labels_diagnosis_datasets_and_the_order(reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "show", "NBspecific_5", "--source", str(reference_snapshot))
    assert code == 0
    assert "KeyError" in out and "NB specific" in out
    assert "Diagnosis:" in out and "already dropped" in out
    assert "NSL-KDD [Unknown]" in out
    assert "code cell 14 (earlier run, count not recorded)" in out
    assert "code cell 14 (In [6])  <- target" in out
    assert "df.drop(columns='num_outbound_cmds', inplace=True)" in out


def test_show_unknown_case_is_a_clear_error(reference_snapshot, capsys):
    code, _, err = run_cli(capsys, "show", "torch_99", "--source", str(reference_snapshot))
    assert code == 1
    assert "no case 'torch_99'" in err and "Traceback" not in err


def test_edits_are_picked_up_by_the_next_load(snapshot_copy):
    before = junobench.load(snapshot_copy, "notebooks")
    target = {r["instance"]: r for r in before.to_list()}["pandas_1_reproduced"]["target_cell"]
    path = snapshot_copy / "benchmark/pandas_1/pandas_1_reproduced.ipynb"
    nb = json.loads(path.read_text())
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code_cells[target["code_cell_index"]]["source"] = "edited_target_cell()"
    path.write_text(json.dumps(nb))
    after = {r["instance"]: r for r in junobench.load(snapshot_copy, "notebooks").to_list()}
    assert after["pandas_1_reproduced"]["target_cell"]["source"] == "edited_target_cell()"

    table_path = snapshot_copy / "benchmark_desc.xlsx"
    table = pd.read_excel(table_path, engine="openpyxl")
    table.loc[table["nb_name"] == "pandas_1", "label_root_cause"] = "implementation error"
    table.to_excel(table_path, index=False)
    cases = {c["case_id"]: c for c in junobench.load(snapshot_copy, "cases").to_list()}
    assert cases["pandas_1"]["root_cause"] == "implementation error"
    assert len(junobench.load(snapshot_copy, root_cause="implementation error")) == 19


def test_loading_never_writes_into_the_snapshot(snapshot_copy):
    before = {p: p.stat().st_mtime_ns for p in snapshot_copy.rglob("*")}
    junobench.load(snapshot_copy, "notebooks")
    after = {p: p.stat().st_mtime_ns for p in snapshot_copy.rglob("*")}
    assert before == after


def test_notes_name_at_most_eight_cases_and_come_once(reference_snapshot, caplog):
    """However many cases a note concerns, it names eight and counts the rest; loading the
    other config of the same records does not repeat it."""
    from junobench.data.report import BuildReport

    unpinned = {f"seaborn_{n}": ["import kaggle_datasets"] for n in range(1, 301)}
    (line,) = BuildReport(unpinned=unpinned).summary()
    assert line.startswith("imports the environment does not pin, in 300 case(s): seaborn_1 "
                           "(import kaggle_datasets), seaborn_2 (import kaggle_datasets),")
    assert line.endswith(", … (+292)") and line.count("seaborn_") == 8
    with caplog.at_level("WARNING", logger="junobench"):
        junobench.load(reference_snapshot, "cases")
        junobench.load(reference_snapshot, "notebooks")
        junobench.load(reference_snapshot, "cases")
    notes = [r.getMessage() for r in caplog.records if r.name == "junobench"]
    assert len(notes) == len(set(notes)) == 3, notes  # input data, originals, unpinned imports
    assert all(note.count(", ") <= 8 for note in notes), notes
