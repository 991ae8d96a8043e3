"""Runtime information in CRANE-LLM's format (``runtime-info --style crane``)."""

from __future__ import annotations

import ast
import json
import re

import numpy as np
import pandas as pd
import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest

from junobench.detection.crane_inputs import parse_document
from junobench.detection.prompt import user_message
from junobench.detection.tasks import read_tasks, read_truth
from junobench.errors import JunoBenchError
from junobench.runtime import (
    crane,
    runtime_annotations,
    runtime_info,
    runtime_style,
    runtime_text,
)
from junobench.runtime.crane import decode, definitions, drop, encode, origins, plain, summarise, text


def published_entries(crane_llm_dir, path: str) -> dict[str, dict]:
    """The runtime information of one of CRANE-LLM's published inputs, as a dict."""
    document = (crane_llm_dir / "llms/llms_inputs/executed_code_runinfo" / path).read_text()
    section = re.search(r"# Current relevent runtime information:\n(.*?)# Target Cell:",
                        document, re.S).group(1)
    tree = ast.parse(section, mode="eval").body
    assert isinstance(tree, ast.Dict)
    entries = {}
    for key, value in zip(tree.keys, tree.values, strict=True):
        try:  # entries holding objects shown by their text (array(...), nan) are left out
            entries[ast.literal_eval(key)] = ast.literal_eval(value)
        except ValueError:
            continue
    return entries


def shown(value) -> dict:
    """A summary as the prompt shows it, read back as Python."""
    return ast.literal_eval(text({"x": plain(value)}))["x"]


def keys(entry: dict) -> set[str]:
    return set(entry) - {"execution_cell_source"}


def test_a_dataframe_has_the_fields_of_a_published_dataframe(crane_llm_dir):
    published = published_entries(crane_llm_dir, "pandas/pandas_4_reproduced.txt")["data"]
    df = pd.DataFrame({"emotion": [0, 2, 4, 6, 3, 1, 5, 2], "pixels": list("abcdefgh"),
                       "Usage": ["Training", "PublicTest"] * 4, "x": [0.5] * 7 + [np.nan]})
    ours = shown(summarise(df))
    assert keys(ours) == keys(published) == {"type", "shape", "has_nan", "per_column"}
    assert ours["type"] == published["type"] == "pandas.core.frame.DataFrame"
    assert ours["shape"] == (8, 4) and ours["has_nan"] is True
    columns = ours["per_column"]
    assert set(columns["Usage"]) == set(published["per_column"]["Usage"])
    assert columns["Usage"]["type"] == "categorical"
    assert columns["Usage"]["unique_values"] == ["Training", "PublicTest"]
    assert set(columns["emotion"]) == set(published["per_column"]["emotion"]) == {
        "dtype", "type", "num_unique", "value_range"}
    assert columns["emotion"] == {"dtype": "int64", "type": "categorical_numeric",
                                  "num_unique": 7, "value_range": (0, 6)}
    assert set(columns["pixels"]) == set(published["per_column"]["pixels"])  # example_values
    assert len(columns["pixels"]["example_values"]) == 5
    assert columns["x"]["type"] == "continuous" and columns["x"]["num_unique"] == 1


def test_other_kinds_have_the_fields_of_published_entries(crane_llm_dir):
    from sklearn.preprocessing import MinMaxScaler

    series = published_entries(crane_llm_dir, "other/statsmodels_2_reproduced.txt")["residuals"]
    ours = shown(summarise(pd.Series([1.5, -2.0, 0.25])))
    assert keys(ours) == keys(series) and ours["type"] == series["type"]
    assert ours["value_info"] == {"value_type": "continuous", "value_range": (-2.0, 1.5)}
    listed = published_entries(crane_llm_dir, "NBspecific/NBspecific_12_fixed.txt")["num"]
    ours = shown(summarise(list(range(18))))
    assert keys(ours) == keys(listed) and ours["type"] == "<class 'list'>"
    module_and_function = published_entries(crane_llm_dir, "pandas/pandas_4_reproduced.txt")
    assert shown(summarise(np)) == module_and_function["plt"] == {"type": "<class 'module'>"}
    assert shown(summarise(len)) == {"type": "<class 'builtin_function_or_method'>"}
    assert shown(summarise(json.dumps)) == module_and_function["__method__plt_show"]
    published_scaler = published_entries(crane_llm_dir, "numpy/numpy_12_reproduced.txt")["scaler"]
    ours = shown(summarise(MinMaxScaler().fit([[0.0], [1.0]])))
    assert ours == {k: v for k, v in published_scaler.items() if k != "execution_cell_source"}
    assert shown(summarise(MinMaxScaler()))["is_fitted"] is False
    array = shown(summarise(np.array([[1.0, np.nan], [3.0, 4.0]], dtype=np.float32)))
    assert array == {"type": "numpy.ndarray", "shape": (2, 2), "dtype": "float32",
                     "has_nan": True, "value_range": (1.0, 4.0)}


def test_callables_get_no_signature_unless_asked():
    def f(a, b=2):
        return a

    assert summarise(f) == {"type": "<class 'function'>"}
    assert summarise(f, signatures=True) == {"type": "<class 'function'>",
                                             "signature": "(a, b=2)"}


def test_columns_past_the_limit_are_left_out_and_the_key_says_so():
    wide = pd.DataFrame({f"c{i}": [i] for i in range(25)})
    ours = summarise(wide)
    assert "per_column" not in ours and len(ours["per_column_max_20"]) == 20
    assert list(summarise(wide, max_columns=30)["per_column"])[-1] == "c24"


def test_examples_do_not_touch_the_notebooks_random_state():
    np.random.seed(7)
    expected = np.random.rand()
    np.random.seed(7)
    df = pd.DataFrame({"name": [f"n{i}" for i in range(40)]})
    first = summarise(df)["per_column"]["name"]["example_values"]
    assert np.random.rand() == expected
    assert summarise(df)["per_column"]["name"]["example_values"] == first


def test_execution_cell_source_follows_crane_llms_tracker():
    assert definitions("a = 1\nb, c = 2, 3\nd: int = 4\ndef f():\n    e = 5\nclass K: pass\n"
                       "import os\nfor i in []: pass\n") == [
        ("a", 1), ("d", 3), ("f", 4), ("e", 5), ("K", 6)]
    assert definitions("x = (") == []
    assert origins([(3, "x = 1"), (0, "y = 2\n\nx = 3")]) == {
        "x": {"cellno": 0, "lineno": 3}, "y": {"cellno": 0, "lineno": 1}}


def test_categories_are_dropped_as_crane_llm_ablated_them():
    summaries = {"df": plain({**summarise(pd.DataFrame({"a": [1, 2]})),
                              "execution_cell_source": {"cellno": 1, "lineno": 2}}),
                 "__method__df_head": {"type": "<class 'method'>"}}
    no_values = drop(summaries, ["V"])
    assert no_values["df"] == {"type": "pandas.core.frame.DataFrame", "shape": (2, 1),
                               "execution_cell_source": {"cellno": 1, "lineno": 2}}
    structure = drop(summaries, ["R", "V"])
    assert structure == {"df": {"shape": (2, 1),
                                "execution_cell_source": {"cellno": 1, "lineno": 2}}}
    assert drop(summaries, []) == summaries


def test_the_json_form_prints_exactly_as_the_python_form():
    value = plain({"t": (1, 2.5), "s": {3}, "o": object, "n": float("nan"),
                   "k": {1: "int key", "__x": [(), []]}, "f": np.float32(0.1),
                   "i": np.int64(3), "b": np.bool_(True)})
    back = decode(json.loads(json.dumps(encode(value))))
    assert text({"v": back}) == text({"v": value})
    assert "'f': 0.1," in text({"v": value}) and "'b': True" in text({"v": value})


@pytest.mark.parametrize("stored", [{"__set__": [[1], {"a": 1}]}, {"__dict__": [[[1], 2]]},
                                    {"__dict__": [1, 2]}, {"__tuple__": "x"}, {"__shown__": 3},
                                    {"__float__": "1e999"}, [{"__set__": []}]])
def test_any_stored_value_decodes_and_prints(stored):
    text({"x": decode(stored)})


def test_records_give_crane_llms_text_and_styles_do_not_mix(tmp_path):
    record = {"instance": "pandas_1_reproduced", "status": "ok", "style": "crane",
              "objects": {"df": encode(plain({"type": "pandas.core.frame.DataFrame",
                                              "shape": (3, 2), "has_nan": False}))}}
    assert runtime_text(record) == ("{'df': {'has_nan': False,\n"
                                    "        'shape': (3, 2),\n"
                                    "        'type': 'pandas.core.frame.DataFrame'}}")
    assert runtime_text(record, exclude=["S", "V"]) == (
        "{'df': {'type': 'pandas.core.frame.DataFrame'}}")
    with pytest.raises(JunoBenchError, match="unknown runtime-information categories X"):
        runtime_text(record, exclude=["X"])
    path = tmp_path / "rt.jsonl"
    other = {"instance": "pandas_1_fixed", "status": "ok", "objects": {}}
    path.write_text(json.dumps(record) + "\n" + json.dumps(other) + "\n")
    with pytest.raises(JunoBenchError, match="records in several styles"):
        runtime_style(path)
    path.write_text(json.dumps(other) + "\n")
    with pytest.raises(JunoBenchError, match="type annotations come from runtime information "
                       "in CRANE-LLM's style"):
        runtime_annotations(path)
    path.write_text(json.dumps({**record, "annotations": {"df": "pandas.DataFrame", "x": 3}})
                    + "\n")
    with pytest.raises(JunoBenchError, match=r"pandas_1_reproduced.*annotations/x: 3 is not"):
        runtime_annotations(path)
    path.write_text(json.dumps({**record, "annotations": {"df": "pandas.DataFrame"}}) + "\n")
    assert runtime_annotations(path) == {"pandas_1_reproduced": {"df": "pandas.DataFrame"}}


@pytest.mark.kernel
def test_crane_style_on_the_sample_in_its_pinned_environment(sample_env, crane_llm_dir, tmp_path,
                                                             capsys):
    out = tmp_path / "crane.jsonl"
    code, stdout, err = run_cli(capsys, "runtime-info", "pandas_1", "--source", "sample",
                                "--style", "crane", "--env", str(sample_env.path),
                                "--out", str(out), "--no-progress")
    assert code == 0 and "2 ok" in err and stdout == ""
    record = next(json.loads(line) for line in out.read_text().splitlines()
                  if json.loads(line)["version"] == "reproduced")
    assert record["style"] == "crane"
    assert record["annotations"] == {"df": "pandas.DataFrame"}
    summaries = ast.literal_eval(runtime_text(record))
    df = summaries["df"]
    assert df["type"] == "pandas.core.frame.DataFrame"
    assert df["execution_cell_source"] == {"cellno": 1, "lineno": 1}
    assert df["per_column"]["Sex"] == {"dtype": "object", "type": "categorical",
                                       "num_unique": 2, "unique_values": ["male", "female"]}
    assert summaries["__method__df_groupby"] == {"type": "<class 'method'>"}
    # the fields of a published DataFrame entry (pandas_4's, CRANE-LLM's latest form)
    published = published_entries(crane_llm_dir, "pandas/pandas_4_reproduced.txt")["data"]
    assert set(df) == set(published)
    allowed = {k for column in published["per_column"].values() for k in column}
    assert all(set(column) <= allowed for column in df["per_column"].values())
    # tasks built from it are CRANE-LLM's documents
    tasks_file = tmp_path / "tasks.jsonl"
    code, _, err = run_cli(capsys, "tasks", "--source", "sample", "--library", "pandas",
                           "--runtime-info", str(out), "--keep-outputs",
                           "--out", str(tasks_file))
    assert code == 1 and "have no cell outputs" in err
    code, _, _ = run_cli(capsys, "tasks", "--source", "sample", "--library", "pandas",
                         "--runtime-info", str(out), "--out", str(tasks_file))
    assert code == 0
    truth = {row["id"]: row["instance"] for row in read_truth(tmp_path / "tasks.truth.jsonl")}
    task = next(t for t in read_tasks(tasks_file) if truth[t["id"]] == "pandas_1_reproduced")
    document = user_message(task)
    assert document.startswith("# Executed Cells:\n## Cell 1:\n")
    assert "\n# Current relevent runtime information:\n{'__method__df_groupby'" in document
    assert parse_document(document)["runtime_info"] == runtime_text(record)
    assert task["style"] == crane.STYLE
    with pytest.raises(JunoBenchError, match="crane style only"):
        runtime_info(["pandas_1"], "sample", signatures=True)
