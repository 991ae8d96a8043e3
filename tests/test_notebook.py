"""Notebook parsing: execution order, target cell, tracebacks (no kernel)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import junobench.data.notebook as notebook_module
from junobench.data.notebook import (
    NotebookError,
    crash_line,
    execution_order,
    find_target,
    parse_notebook,
    parse_traceback,
    strip_ansi,
)


def notebook(*cells: dict, nbformat: int = 4) -> str:
    return json.dumps({"nbformat": nbformat, "nbformat_minor": 5, "metadata": {}, "cells": list(cells)})


def code(source: str, count: int | None = None, error: tuple[str, str] | None = None) -> dict:
    outputs = []
    if error:
        outputs.append({"output_type": "error", "ename": error[0], "evalue": error[1],
                        "traceback": [f"{error[0]}: {error[1]}"]})
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": outputs,
            "source": source}


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def order(nb_text: str, target: int) -> list[tuple[int, int | None]]:
    nb = parse_notebook(nb_text)
    return [(s.code_cell_index, s.execution_count) for s in execution_order(nb.code_cells, target)]


def test_cells_run_in_count_order_and_uncounted_cells_do_not_run():
    text = notebook(markdown("# Title"), code("b = a", 3, ("NameError", "x")), code("a = 1", 1),
                    code("unused()"), code("c = 2", 2))
    nb = parse_notebook(text)
    assert [c.index for c in nb.code_cells] == [0, 1, 2, 3]  # markdown is not a code cell
    assert nb.target_index == 0
    assert order(text, 0) == [(1, 1), (3, 2), (0, 3)]


def test_only_cells_counted_below_the_target_run_before_it():
    text = notebook(code("x", 5), code("y", 2, ("ValueError", "v")), code("z", 1), code("w", 9))
    assert order(text, 1) == [(2, 1), (1, 2)]


def test_reexecute_target_runs_twice_first_without_count():
    text = notebook(code("df = load()", 1),
                    code("# [reexecute]\ndf.drop(columns='a', inplace=True)", 3,
                         ("KeyError", "\"['a'] not found in axis\"")))
    assert order(text, 1) == [(0, 1), (1, None), (1, 3)]


def test_reexecute_marker_only_counts_on_a_comment_first_line():
    text = notebook(code("x = '[reexecute]'", 1), code("y", 2, ("E", "e")))
    assert order(text, 1) == [(0, 1), (1, 2)]


def test_duplicate_counts_keep_notebook_order():
    text = notebook(code("a", 6), code("b", 1), code("c", 6), code("t", 7, ("E", "e")))
    assert order(text, 3) == [(1, 1), (0, 6), (2, 6), (3, 7)]


def test_target_without_count_runs_after_every_counted_cell():
    text = notebook(code("a", 2), code("fixed target"), code("b", 1))
    assert order(text, 1) == [(2, 1), (0, 2), (1, None)]


def test_first_crash_in_execution_order_is_the_target():
    text = notebook(code("late", 9, ("ValueError", "v")), code("early", 4, ("KeyError", "k")))
    assert find_target(parse_notebook(text).code_cells) == 1


def test_nbformat3_notebook_is_upgraded():
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "x = 1", "prompt_number": 1, "outputs": [],
         "language": "python", "collapsed": False}]}]}
    nb = parse_notebook(json.dumps(v3))
    assert nb.upgraded_from == 3
    assert nb.code_cells[0].source == "x = 1"
    assert nb.code_cells[0].execution_count == 1


def test_json_the_typed_decoder_refuses_is_still_read():
    # Notebooks written with Python's json may hold NaN literals; their text is kept as it is.
    metadata = '"metadata": {"loss": NaN, "seed": 123456789012345678901234567890}'
    text = notebook(code("x = 1", 1, ("ValueError", "bad")), markdown("# notes")).replace(
        '"metadata": {}', metadata, 1)
    nb = parse_notebook(text)
    assert nb.text == text
    assert [(c.source, c.execution_count, c.error.ename) for c in nb.code_cells] == [("x = 1", 1, "ValueError")]


def test_a_notebook_upgraded_from_nbformat_3_is_kept_as_version_4_text():
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "x = 1", "prompt_number": 1, "outputs": [],
         "language": "python", "collapsed": False}]}]}
    nb = parse_notebook(json.dumps(v3))
    upgraded = json.loads(nb.text)
    assert upgraded["nbformat"] == 4 and upgraded["cells"][0]["source"] == "x = 1"


def test_ordinary_notebooks_are_decoded_straight_into_typed_cells():
    """The sample's notebooks (nbformat 4, the usual values) take the typed decoder, not the
    value-by-value checks that are there for notebooks of any other shape."""
    from junobench.data.snapshot import sample_path

    paths = sorted(sample_path().glob("benchmark/*/*.ipynb"))
    assert len(paths) >= 20
    for path in paths:
        text = path.read_text(encoding="utf-8")
        typed = notebook_module._typed_code_cells(text)
        assert typed is not None, path
        assert typed == notebook_module._checked_notebook(text, path, None).code_cells


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "not an object"),
        (b'{"nbformat": 4, "cells": 3}', "no 'cells' list"),
        (b'{"nbformat": 9, "cells": []}', "unsupported nbformat"),
        (notebook(code("x", "3")).encode(), "not an integer"),  # type: ignore[arg-type]
    ],
)
def test_bad_notebooks_get_a_clear_error_naming_file_and_case(raw, problem):
    with pytest.raises(NotebookError) as info:
        parse_notebook(raw, file="benchmark/x_1/x_1_fixed.ipynb", case="x_1")
    message = str(info.value)
    assert problem in message
    assert message.startswith("benchmark/x_1/x_1_fixed.ipynb: case x_1: ")


# ---------------------------------------------------------------------------- tracebacks

MODERN = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mKeyError\x1b[0m                                  Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[23], line 4\x1b[0m\n\x1b[1;32m      1\x1b[0m x = 1\n\x1b[0;32m----> 4\x1b[0m d['k']\n",
    "File \x1b[0;32m~/lib/site-packages/pandas/core/frame.py:3761\x1b[0m, in \x1b[0;36mDataFrame.__getitem__\x1b[0m\n",
    "\x1b[0;31mKeyError\x1b[0m: 'k'",
]
LEGACY = [
    "---------------------------------------------------------------------------",
    "KeyError                                  Traceback (most recent call last)",
    "<ipython-input-21-4356dc8164e0> in <module>\n      1 # drop\n----> 2 df.drop(columns='a')\n",
    "/opt/conda/lib/python3.7/site-packages/pandas/core/frame.py in drop(self)\n-> 4169 errors=errors,\n",
    "KeyError: \"['a'] not found in axis\"",
]


def test_crash_line_in_both_ipython_styles_with_ansi_codes():
    assert crash_line(MODERN) == 4
    assert crash_line(LEGACY) == 2
    assert crash_line(["<ipython-input-5-ab> in <cell line: 7>()\n      6 a\n----> 7 b\n"]) == 7
    assert crash_line(["Input In [12], in <cell line: 3>()\n----> 3 f()\n"]) == 3
    assert crash_line(["/tmp/ipykernel_1018/1279619201.py in <module>\n----> 1 tf_idf.toarray()\n"]) == 1


def test_crash_line_skips_library_frames_of_a_chained_traceback():
    chained = ["TypeError   Traceback (most recent call last)",
               "File /site-packages/keras/utils/data_utils.py:1094, in pad_sequences()\n-> 1094 x\n",
               "TypeError: no len()", "ValueError   Traceback (most recent call last)",
               "Cell In[40], line 7\n----> 7 docs = f()\n", "ValueError: bad"]
    assert crash_line(chained) == 7


@settings(max_examples=300)
@given(st.text(max_size=20), st.from_regex(notebook_module._CELL_FRAME), st.text(max_size=20))
def test_the_quick_test_before_the_cell_frame_pattern_never_skips_a_frame_it_matches(before, name, after):
    frame = before + name + after
    assert notebook_module._CELL_FRAME.search(frame)
    assert notebook_module._may_name_cell(frame)


def test_traceback_forms_list_string_literal_and_truncated():
    assert parse_traceback(MODERN)[1].startswith("KeyError")
    assert "\x1b" not in "".join(parse_traceback(MODERN))
    assert parse_traceback(str(LEGACY)) == LEGACY
    assert parse_traceback("KeyError: 'k'") == ["KeyError: 'k'"]
    cut = str(LEGACY)[:200]
    salvaged = parse_traceback(cut)
    assert salvaged[:2] == LEGACY[:2]
    assert LEGACY[2].startswith(salvaged[2])
    assert crash_line(str(LEGACY)) == 2
    assert parse_traceback(None) == []


def test_strip_ansi_removes_colour_codes():
    assert strip_ansi("\x1b[0;31mKeyError\x1b[0m: 'k'") == "KeyError: 'k'"


# ---------------------------------------------------------------------------- properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
cells = st.fixed_dictionaries(
    {"cell_type": st.sampled_from(["code", "markdown", "raw", 3]),
     "source": st.one_of(st.text(), st.lists(st.text(), max_size=3), json_values),
     "execution_count": st.one_of(st.none(), st.integers(-5, 50), json_values),
     "outputs": st.one_of(st.lists(st.fixed_dictionaries(
         {"output_type": st.sampled_from(["error", "stream"]), "ename": json_values,
          "evalue": json_values, "traceback": json_values}), max_size=2), json_values)})
notebooks = st.fixed_dictionaries({"nbformat": st.sampled_from([4, 4, 3, 2, 5, "4", None]),
                                   "cells": st.one_of(st.lists(cells, max_size=6), json_values)})


@settings(max_examples=300)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200), notebooks.map(json.dumps)))
def test_parse_notebook_returns_a_notebook_or_a_clean_error(raw):
    try:
        nb = parse_notebook(raw, file="f.ipynb", case="c_1")
    except NotebookError as error:
        assert "f.ipynb" in str(error)
        return
    target = nb.target_index
    for index in {target, 0} - {None}:
        if index is not None and index < len(nb.code_cells):
            steps = execution_order(nb.code_cells, index)
            assert steps[-1].code_cell_index == index


@settings(max_examples=500)
@given(st.one_of(st.text(), st.lists(st.text(), max_size=6), st.lists(st.text()).map(str),
                 st.lists(st.text()).map(lambda v: str(v)[: len(str(v)) // 2]), json_values))
def test_traceback_parsers_never_raise(value):
    lines = parse_traceback(value)
    assert isinstance(lines, list) and all(isinstance(x, str) for x in lines)
    line = crash_line(value)
    assert line is None or isinstance(line, int)
