"""Property tests: any input of each class the library reads — notebooks, tables, dataset
metadata, export manifests, prediction (and other JSONL) files — gives a value or one
:class:`JunoBenchError`, never another exception. The strategies include the hostile
values that once ended in tracebacks: lone surrogates, control characters, integers too
large for int32 or for Python's int parser, deep nesting, formulas, infinities, far dates.
A new traceback on any of them fails here."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from junobench.data.cases import parse_case_folder
from junobench.data.export import CARD, CROISSANT, MANIFEST, PARQUET, read_manifest
from junobench.data.metadata import read_metadata
from junobench.data.notebook import NotebookError, parse_notebook
from junobench.data.records import FOLDER_SCHEMA
from junobench.data.snapshot import sample_path
from junobench.data.tables import read_desc, read_table, write_table
from junobench.detection.layouts import read_predictions
from junobench.errors import JunoBenchError
from junobench.hub.check import check
from junobench.hub.write_export import export

FUZZ = settings(max_examples=120,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# --------------------------------------------------------------------------- hostile values

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
controls = st.characters(max_codepoint=0x1F) | st.characters(min_codepoint=0x7F, max_codepoint=0x9F)
hostile_text = st.one_of(
    st.text(max_size=30),
    st.text(st.characters() | surrogates | controls, max_size=30),
    st.sampled_from(["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\t=x", "_x0041_", "\x1b[2J", "../../x",
                     "/etc/passwd", "nodata", "\ud800", "a\x00b", "torch_1", "torch_1_fixed"]),
)
huge_ints = st.one_of(st.integers(), st.sampled_from([2**31, -(2**31) - 1, 2**63, 10**100, 10**4000]))
floats = st.floats(allow_nan=True, allow_infinity=True)
scalars = st.none() | st.booleans() | huge_ints | floats | hostile_text
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=25)


def json_text(value) -> str:
    """JSON text of a value (NaN and infinities as Python writes them; surrogates escaped)."""
    return json.dumps(value, allow_nan=True)


deep = st.integers(500, 200_000).map(lambda n: "[" * n + "]" * n)
huge_number = st.integers(4300, 20_000).map(lambda n: "9" * n)
raw_json = st.one_of(json_values.map(json_text), deep, huge_number, st.binary(max_size=300).map(
    lambda b: b.decode("latin-1")))


# --------------------------------------------------------------------------- notebooks


cells = st.fixed_dictionaries({
    "cell_type": st.sampled_from(["code", "code", "markdown"]),
    "source": st.one_of(hostile_text, st.lists(hostile_text, max_size=3), json_values),
    "execution_count": st.one_of(st.none(), st.integers(0, 50), huge_ints, json_values),
    "outputs": st.one_of(st.just([]), st.lists(st.fixed_dictionaries({
        "output_type": st.just("error"), "ename": hostile_text, "evalue": hostile_text,
        "traceback": st.one_of(st.lists(hostile_text, max_size=3), hostile_text,
                               st.integers(0, 2**45).map(lambda n: [f"Cell In[1], line {n}\n"]))}),
        max_size=1), json_values)})
notebooks = st.fixed_dictionaries({"nbformat": st.sampled_from([4, 4, 4, 3, 5, None]),
                                   "nbformat_minor": st.just(5), "metadata": st.just({}),
                                   "cells": st.lists(cells, max_size=6)})


def _write_case(root: Path, reproduced: str, fixed: str) -> None:
    folder = root / "benchmark" / "torch_1"
    folder.mkdir(parents=True)
    (folder / "torch_1_reproduced.ipynb").write_text(reproduced, encoding="utf-8", errors="surrogatepass")
    (folder / "torch_1_fixed.ipynb").write_text(fixed, encoding="utf-8", errors="surrogatepass")


@FUZZ
@given(notebooks.map(json_text) | raw_json, notebooks.map(json_text) | raw_json)
def test_any_notebook_gives_an_arrow_record_or_named_problems(reproduced, fixed):
    """The case folder's record must convert to the records' Arrow schema (as the builder
    does), or the case must be left out with problems naming the file and the case."""
    with tempfile.TemporaryDirectory() as tmp:
        _write_case(Path(tmp), reproduced, fixed)
        result = parse_case_folder(tmp, "torch_1")
    if result.record is None:
        assert result.problems and all(p.case == "torch_1" and p.file for p in result.problems)
        return
    pa.Table.from_pylist([result.record], schema=FOLDER_SCHEMA)


@FUZZ
@given(st.one_of(notebooks.map(json_text), raw_json, st.binary(max_size=300)))
def test_any_notebook_text_parses_or_is_a_clean_error(raw):
    try:
        parse_notebook(raw, file="x.ipynb", case="torch_1")
    except NotebookError as error:
        assert "x.ipynb" in str(error) and "torch_1" in str(error)


plain_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3), max_leaves=8)
typed_cells = st.fixed_dictionaries({
    "cell_type": st.sampled_from(["code", "code", "markdown", "raw"]),
    "source": st.one_of(st.text(), st.lists(st.text(), max_size=3), hostile_text),
    "execution_count": st.one_of(st.none(), st.integers(0, 50), st.integers(0, 50), huge_ints),
    "outputs": st.none() | st.lists(st.fixed_dictionaries(
        {"output_type": st.sampled_from(["error", "stream", "error", "display_data"])},
        optional={"ename": plain_values, "evalue": plain_values,
                  "traceback": st.lists(st.text(), max_size=2) | plain_values}), min_size=1, max_size=3)},
    optional={"metadata": plain_values})
typed_notebooks = st.fixed_dictionaries({"nbformat": st.sampled_from([4, 4, 4, 4.0, 3, None]),
                                         "cells": st.lists(typed_cells, max_size=5)})


@FUZZ
@given(st.one_of(typed_notebooks, typed_notebooks, notebooks).map(json_text))
def test_typed_decoding_gives_the_cells_of_the_value_by_value_checks(text):
    """The two ways a notebook is parsed agree: a notebook the typed decoder takes has the
    code cells the value-by-value checks give it, and one those checks refuse never gets
    through the typed decoder."""
    from junobench.data.notebook import _checked_notebook, _typed_code_cells

    typed = _typed_code_cells(text)
    try:
        checked = _checked_notebook(text, "x.ipynb", "torch_1").code_cells
    except NotebookError:
        assert typed is None
        return
    assert typed is None or typed == checked


# --------------------------------------------------------------------------- tables


far_dates = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31))
cell_values = st.one_of(st.none(), hostile_text, st.integers(-(10**15), 10**15), huge_ints.filter(
    lambda n: abs(n) < 10**300), st.floats(-1e300, 1e300), far_dates,
    st.booleans())


def _expected(value):
    """What a written cell reads back as (text exactly; surrogates as U+FFFD; numbers as floats)."""
    if isinstance(value, str):  # a cell of nothing but white space reads as empty
        text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
        return None if text.strip(" \t\n") == "" else text
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


@FUZZ
@given(st.lists(st.lists(cell_values, min_size=3, max_size=3), max_size=6))
def test_any_cell_values_are_written_as_text_or_numbers_and_read_back(rows):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.xlsx"
        write_table(path, [dict(zip("abc", row, strict=True)) for row in rows], ["a", "b", "c"])
        table = read_table(path)
    kept = [r for r in rows if any(_expected(v) is not None for v in r)]
    assert len(table.rows) == len(kept)
    for row, read in zip(kept, table.rows, strict=True):
        for value, back in zip(row, read, strict=True):
            expected = _expected(value)
            if isinstance(expected, str):
                assert back == expected
            elif isinstance(expected, float):
                assert math.isclose(back, expected, rel_tol=1e-12)


@FUZZ
@given(st.lists(st.lists(cell_values, min_size=6, max_size=6), max_size=6), st.booleans())
def test_any_case_table_gives_rows_and_problems_or_a_clean_error(rows, with_ids):
    columns = ["nb_name", "label_root_cause", "label_refined_exp_type", "label_ML_pipeline",
               "label_if_ML_bug", "NotebookUrl"]
    with tempfile.TemporaryDirectory() as tmp:
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        if with_ids:
            for i, record in enumerate(records):
                record["nb_name"] = f"torch_{i}"
        write_table(Path(tmp) / "benchmark_desc.xlsx", records, columns)
        try:
            found, problems = read_desc(tmp)
        except JunoBenchError as error:
            assert "benchmark_desc.xlsx" in str(error)
            return
    pa.Table.from_pylist([r.fields for r in found])  # record fields are text
    assert all(p.file == "benchmark_desc.xlsx" for p in problems)


@FUZZ
@given(st.binary(max_size=2000))
def test_any_bytes_as_a_spreadsheet_are_a_clean_error(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "benchmark_desc.xlsx"
        path.write_bytes(data)
        with pytest.raises(JunoBenchError, match=r"benchmark_desc\.xlsx"):
            read_table(path)


# --------------------------------------------------------------------------- metadata


metadata = st.fixed_dictionaries(
    {"title": hostile_text | json_values, "url": st.none() | hostile_text,
     "license": hostile_text, "files": st.lists(hostile_text, max_size=3) | json_values,
     "modifications": st.lists(st.dictionaries(hostile_text, json_values, max_size=3), max_size=2)})


@FUZZ
@given(st.one_of(metadata.map(json_text), raw_json))
def test_any_metadata_file_is_read_or_a_clean_error(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "iris.metadata.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            data = read_metadata(path, case="torch_1")
        except JunoBenchError as error:
            assert "iris.metadata.json" in str(error) and "torch_1" in str(error)
            return
    pa.array([data["title"], data["license"], data["url"], *data["files"]], pa.string())
    assert all(".." not in f.split("/") and not f.startswith("/") for f in data["files"])


# --------------------------------------------------------------------------- manifests


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fuzz-export") / "export"
    export(sample_path(), out)
    return out


names = st.one_of(st.sampled_from([CARD, CROISSANT, *PARQUET.values(), "../x", "/etc/passwd", "a/../../b",
                                   "cases/../README.md", "C:\\x", ".git/config"]), hostile_text)
digests = st.fixed_dictionaries({"sha256": st.one_of(st.just("0" * 64), hostile_text, json_values),
                                 "size": st.one_of(st.integers(0, 10**6), huge_ints, json_values)})
manifests = st.fixed_dictionaries(
    {"format": st.sampled_from(["junobench-export/1", "junobench-export/1", "other"]),
     "files": st.dictionaries(names, digests, max_size=4) | json_values,
     "rows": st.dictionaries(st.sampled_from(["cases", "notebooks", "x"]), huge_ints | json_values,
                             max_size=2) | json_values,
     "report": st.fixed_dictionaries({}, optional={
         "skipped": json_values, "problems": st.lists(st.dictionaries(hostile_text, json_values,
                                                                      max_size=4), max_size=2),
         "absent": json_values, "unlisted_folders": json_values}) | json_values})


@pytest.fixture(scope="module")
def croissant_validated_once():
    """mlcroissant's answer for a Croissant file, computed once for each content: only the
    manifest is fuzzed, so every example would validate the same bytes again (about 0.15 s
    each, most of the test's time)."""
    import junobench.hub.croissant as croissant

    validate = croissant.validate_with_mlcroissant
    answers: dict[bytes, list[str] | None] = {}

    def remembered(path):
        content = Path(path).read_bytes()
        if content not in answers:
            answers[content] = validate(path)
        return answers[content]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(croissant, "validate_with_mlcroissant", remembered)
        yield


@FUZZ
@given(st.one_of(manifests.map(json_text), raw_json))
def test_any_manifest_is_read_and_checked_or_a_clean_error(export_dir, croissant_validated_once, tmp_path, text):
    copy = tmp_path / "copy"
    if not copy.exists():
        shutil.copytree(export_dir, copy)
    (copy / MANIFEST).write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        manifest = read_manifest(copy)
    except JunoBenchError as error:
        assert MANIFEST in str(error)
    else:
        assert all(name in (CARD, CROISSANT, *PARQUET.values()) for name in manifest["files"])
    problems = check(copy)  # every problem is reported, none raised
    assert all(isinstance(str(p), str) for p in problems)


# --------------------------------------------------------------------------- prediction files


runs = st.lists(st.one_of(st.booleans(), hostile_text, json_values), max_size=5)
lines = st.one_of(
    st.fixed_dictionaries({"instance": st.sampled_from(["torch_1_fixed", "torch_1_reproduced"])
                           | hostile_text, "runs": runs | json_values}).map(json_text),
    raw_json)


@FUZZ
@given(st.lists(lines, max_size=4).map("\n".join), st.binary(max_size=200))
def test_any_predictions_file_or_folder_is_read_or_a_clean_error(text, raw):
    with tempfile.TemporaryDirectory() as tmp:
        canonical = Path(tmp) / "predictions.jsonl"
        canonical.write_text(text, encoding="utf-8", errors="surrogatepass")
        folder = Path(tmp) / "outputs"
        (folder / "buggy").mkdir(parents=True)
        (folder / "fixed").mkdir()
        (folder / "buggy" / "torch_1.json").write_text(text, encoding="utf-8", errors="surrogatepass")
        (folder / "fixed" / "torch_1.json").write_bytes(raw)
        for path in (canonical, folder):
            try:
                predictions = read_predictions(path)
            except JunoBenchError as error:
                assert str(path) in str(error) or path.name in str(error)
                continue
            for instance, found in predictions.runs.items():
                assert isinstance(instance, str) and isinstance(found, list)


@FUZZ
@given(st.lists(lines, max_size=4).map("\n".join))
def test_any_tasks_file_is_read_or_a_clean_error(text):
    from junobench.detection.tasks import read_tasks

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tasks.jsonl"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            read_tasks(path)
        except JunoBenchError as error:
            assert "tasks.jsonl" in str(error)
