"""Each rule of the library-cause estimator, one phase at a time: the clue it gives (library,
weight, kind, text) and the answer it leads to, on small hand-made tracebacks."""

from __future__ import annotations

import pytest

from junobench.construct.library_cause import WEIGHTS, estimate, explain, score

HEADER = "-" * 75


def literal(*items: str) -> str:
    """A traceback as the tables store it: the repr of a list of strings."""
    return repr([HEADER, *items])


def frame(path: str, code: str = "x = f(y)", root: str = "site-packages") -> str:
    return f"File /opt/conda/lib/python3.10/{root}/{path}:10, in f(x)\n      9 def f():\n---> 10     {code}\n"


def cell(line: str, number: int = 3) -> str:
    return f"Cell In[{number}], line 2\n      1 import os\n----> 2 {line}\n      3 print(1)\n"


def clues(traceback: object, code: str | None = None, **options: bool) -> set[tuple]:
    return {(e.library, e.weight, e.kind, e.text) for e in explain(traceback, code, **options)}


# --------------------------------------------------------------------------- frames


def test_the_first_library_frame_is_the_entry_the_last_raised_the_others_deep() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                        frame("sklearn/base.py"), frame("pandas/core/frame.py"),
                        frame("numpy/core/fromnumeric.py"), "ValueError: boom")
    assert clues(traceback) == {
        ("sklearn", WEIGHTS["entry_frame"], "entry_frame", "first library frame"),
        ("pandas", WEIGHTS["deep_frame"], "deep_frame", "library frame"),
        ("numpy", WEIGHTS["deep_frame"], "deep_frame", "library frame"),
        ("numpy", WEIGHTS["raise_frame"], "raise_frame", "innermost library frame"),
    }
    assert score(traceback) == {"sklearn": 5.0, "pandas": 1.0, "numpy": 2.0}
    assert estimate(traceback) == "sklearn"


def test_one_library_frame_is_entry_and_raise() -> None:
    traceback = literal("KeyError   Traceback (most recent call last)", cell("run(x)"),
                        frame("pandas/core/indexes/base.py"), "KeyError: 'x'")
    assert score(traceback) == {"pandas": WEIGHTS["entry_frame"] + WEIGHTS["raise_frame"]}


def test_frames_of_the_notebook_machinery_name_no_library() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                        frame("IPython/core/interactiveshell.py"), "ValueError: boom")
    assert score(traceback) == {} and estimate(traceback) is None


def test_with_benchmark_only_the_ten_labels_are_framed() -> None:
    traceback = literal("XGBoostError   Traceback (most recent call last)", cell("run(x)"),
                        frame("xgboost/core.py"), "XGBoostError: bad")
    assert estimate(traceback) == "xgboost"
    assert estimate(traceback, benchmark=True) is None


def test_torch_module_call_hands_the_entry_to_the_model_library() -> None:
    traceback = literal("RuntimeError   Traceback (most recent call last)", cell("run(x)"),
                        frame("torch/nn/modules/module.py"), frame("torchvision/models/resnet.py"),
                        "RuntimeError: bad")
    found = clues(traceback)
    assert ("torchvision", WEIGHTS["entry_frame"], "entry_frame", "first library frame") in found
    assert ("torch", WEIGHTS["deep_frame"], "deep_frame", "library frame") in found
    # Any other first torch frame stays the entry.
    other = literal("RuntimeError   Traceback (most recent call last)", cell("run(x)"),
                    frame("torch/functional.py"), frame("torchvision/models/resnet.py"),
                    "RuntimeError: bad")
    assert ("torch", WEIGHTS["entry_frame"], "entry_frame", "first library frame") in clues(other)


def test_cython_hub_and_array_dispatch_frames_count_without_site_packages() -> None:
    cython = literal("KeyError   Traceback (most recent call last)", cell("run(x)"),
                     "File pandas/_libs/hashtable_class_helper.pxi in "
                     "pandas._libs.hashtable.PyObjectHashTable.get_item()\n", "KeyError: 'x'")
    assert score(cython) == {"pandas": WEIGHTS["entry_frame"] + WEIGHTS["raise_frame"]}
    dispatch = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                       "File <__array_function__ internals>:180, in concatenate(*args)\n",
                       "ValueError: all the input arrays must have same number of dimensions")
    assert estimate(dispatch) == "numpy"
    from_the_frame = ("<__array_function__ internals>:180, in concatenate(*args)\n"
                      "ValueError: need at least one array to concatenate")
    assert score(from_the_frame) == {"numpy": WEIGHTS["entry_frame"] + WEIGHTS["raise_frame"]}
    hub = literal("RuntimeError   Traceback (most recent call last)", cell("run(x)"),
                  "File ~/.cache/torch/hub/pytorch_vision_main/torchvision/models/x.py:3, in f()\n",
                  "RuntimeError: bad")
    assert estimate(hub) == "torchvision"


# --------------------------------------------------------------------------- exception


def test_the_exception_class_names_its_library() -> None:
    traceback = literal("LinAlgError   Traceback (most recent call last)", cell("run(x)"),
                        "LinAlgError: bad input")
    assert clues(traceback) == {("numpy", WEIGHTS["exception"], "exception", "LinAlgError")}


def test_the_exception_module_names_its_library() -> None:
    traceback = literal("Error   Traceback (most recent call last)", cell("run(x)"),
                        "lightgbm.basic.BoosterStateError: bad")
    assert clues(traceback) == {("lightgbm", WEIGHTS["exception"], "exception",
                                 "lightgbm.basic.BoosterStateError")}


def test_a_cut_traceback_takes_the_header_s_exception() -> None:
    cut = f"{HEADER}\nNotFittedError   Traceback (most recent call last)\n{cell('run(x)')}"
    assert clues(cut) == {("sklearn", WEIGHTS["exception"], "exception", "NotFittedError")}


def test_a_cut_literal_list_takes_the_header_s_exception_without_its_quote() -> None:
    whole = literal("NotFittedError   Traceback (most recent call last)", cell("run(x)"),
                    "NotFittedError: This LinearSVC instance is not fitted yet")
    cut = whole[:whole.index("Cell In")]
    assert clues(cut) == {("sklearn", WEIGHTS["exception"], "exception", "NotFittedError")}
    assert estimate(cut) == "sklearn"
    dotted = literal("tensorflow.python.framework.errors_impl.CancelledError   Traceback "
                     "(most recent call last)", cell("run(x)"))[:-30]
    assert ("tensorflow/keras", WEIGHTS["exception"], "exception",
            "tensorflow.python.framework.errors_impl.CancelledError") in clues(dotted)


def test_the_exception_is_the_last_item_not_a_quote_inside_it() -> None:
    # The message quotes something that looks like the start of another item.
    traceback = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                        'ValueError: expected one of "a", "LinAlgError: b"')
    assert [e.text for e in explain(traceback) if e.kind == "exception"] == []
    assert estimate(traceback) is None
    # A TF message runs over several items; the exception line is not the last one.
    tf = literal("InvalidArgumentError   Traceback (most recent call last)", cell("m.fit(x)"),
                 "InvalidArgumentError: Graph execution error:\n", "Detected at node 'x'",
                 "  [[{{node loss/mul}}]] [Op:__inference_train_function_1]")
    assert ("exception", "InvalidArgumentError") in [(e.kind, e.text) for e in explain(tf)]


def test_the_last_exception_item_is_looked_for_in_the_last_4000_characters() -> None:
    def traceback(tail: int) -> str:
        return literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                       "ValueError: could not broadcast input array", "x" * tail)

    def distance(text: str) -> int:  # from the item's opening quote to the last closing one
        return len(text) - 2 - text.index("'ValueError: could")

    inside = traceback(3998 - distance(traceback(0)))
    outside = traceback(3999 - distance(traceback(0)))
    assert (distance(inside), distance(outside)) == (3998, 3999)
    message = ("numpy", WEIGHTS["message"], "message", "could not broadcast")
    assert message in clues(inside) and message not in clues(outside)


def test_a_plain_text_traceback_ends_with_its_exception_line() -> None:
    text = f"{HEADER}\nParserError   Traceback (most recent call last)\n{cell('run(x)')}" \
           "ParserError: Error tokenizing data"
    assert clues(text) == {("pandas", WEIGHTS["exception"], "exception", "ParserError")}


def test_the_last_exception_item_counts_when_later_items_are_not_exceptions() -> None:
    tf = literal("Error   Traceback (most recent call last)", cell("run(x)"),
                 "InvalidArgumentError: Graph execution error:\n", "Detected at node 'x'")
    assert clues(tf) == {("tensorflow/keras", WEIGHTS["exception"], "exception",
                          "InvalidArgumentError"),
                         ("tensorflow/keras", WEIGHTS["message"], "message",
                          "Graph execution error")}


def test_an_item_with_an_unknown_exception_name_is_read_by_the_pattern() -> None:
    # complete (ends with its exception item): the pandas call on the crash line is not
    # framed and weighs half
    traceback = literal("Error   Traceback (most recent call last)", cell("df = pd.x()"),
                        "tensorflow.python.framework.errors_impl.CustomError: Graph "
                        "execution error: x")
    assert clues(traceback) == {
        ("tensorflow/keras", WEIGHTS["exception"], "exception",
         "tensorflow.python.framework.errors_impl.CustomError"),
        ("tensorflow/keras", WEIGHTS["message"], "message", "Graph execution error"),
        ("pandas", WEIGHTS["crash_alias"] / 2, "crash_alias", "pd")}


def test_the_exception_and_the_message_add_up_and_equal_totals_take_the_preference() -> None:
    traceback = literal("LinAlgError   Traceback (most recent call last)", cell("run(x)"),
                        "LinAlgError: read_csv() got an unexpected keyword argument 'sep'")
    assert score(traceback) == {"numpy": WEIGHTS["exception"], "pandas": WEIGHTS["message_api"]}
    assert estimate(traceback) == "pandas"  # a tie: pandas is built on numpy


# --------------------------------------------------------------------------- message


def test_a_library_s_own_phrase_in_the_message_counts_once() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                        "ValueError: cannot reshape array of size 3; operands could not be "
                        "broadcast together")
    ((library, weight, kind, text),) = clues(traceback)  # two numpy phrases: one clue
    assert (library, weight, kind) == ("numpy", WEIGHTS["message"], "message")
    assert text in ("cannot reshape array", "operands could not be broadcast")
    both = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                   "ValueError: Input contains NaN in a 'DataFrame'")
    assert clues(both) == {("sklearn", WEIGHTS["message"], "message", "Input contains NaN"),
                           ("pandas", WEIGHTS["message"], "message", "'DataFrame'")}


def test_whose_object_the_message_names() -> None:
    traceback = literal("AttributeError   Traceback (most recent call last)", cell("run(x)"),
                        "AttributeError: 'Series' object has no attribute 'foo'")
    assert ("pandas", WEIGHTS["message_type"], "message_type", "'Series' object") in clues(traceback)
    dotted = literal("AttributeError   Traceback (most recent call last)", cell("run(x)"),
                     "AttributeError: 'numpy.ndarray' object has no attribute 'append'")
    assert ("numpy", WEIGHTS["message_type"], "message_type",
            "'numpy.ndarray' object") in clues(dotted)


def test_a_message_that_starts_with_the_object_or_call_phrase_names_nothing() -> None:
    for message in ("AttributeError: ' object has no attribute 'x'",
                    "TypeError: () got an unexpected keyword argument 'x'"):
        traceback = literal("Error   Traceback (most recent call last)", cell("run(x)"), message)
        assert clues(traceback) == set() and estimate(traceback) is None


@pytest.mark.parametrize("message, estimated", [
    # a tie at 5 with pandas' entry frame goes to pandas (built on numpy) ...
    ("ValueError: 'ndarray' object has no attribute 'x'", "pandas"),
    ("ValueError: module 'numpy' has no attribute 'x'", "pandas"),
    # ... as does a tie at 4 with pandas' exception class; a lead of 1 wins
    ("ParserError: concatenate() got an unexpected keyword argument 'x'", "pandas"),
    ("ParserError: module 'numpy' has no attribute 'x'", "numpy"),
])
def test_each_message_clue_adds_its_weight_once(message: str, estimated: str) -> None:
    frames = () if message.startswith("ParserError") else (
        frame("pandas/core/frame.py"), frame("scipy/linalg/basic.py"))
    traceback = literal("Error   Traceback (most recent call last)", cell("run(x)"), *frames,
                        message)
    assert estimate(traceback) == estimated


def test_whose_object_a_dotted_or_module_named_kind_is() -> None:
    for kind, library in (("mylib.models.DataFrame", "pandas"), ("pandas.core.Thing", "pandas"),
                          ("sklearn.base.Thing", "sklearn")):
        traceback = literal("AttributeError   Traceback (most recent call last)",
                            cell("run(x)"), f"AttributeError: '{kind}' object has no attribute 'x'")
        assert clues(traceback) == {(library, WEIGHTS["message_type"], "message_type",
                                     f"'{kind}' object")}


def test_without_a_crash_line_the_start_of_the_text_breaks_ties() -> None:
    assert estimate("sns.heatmap(df)\nValueError: bad") == "seaborn"


def test_whose_function_was_called_wrongly() -> None:
    traceback = literal("TypeError   Traceback (most recent call last)", cell("run(x)"),
                        "TypeError: train_test_split() got an unexpected keyword argument 'x'")
    assert clues(traceback) == {("sklearn", WEIGHTS["message_api"], "message_api",
                                 "train_test_split()")}
    method = literal("TypeError   Traceback (most recent call last)", cell("run(x)"),
                     "TypeError: DataFrame.groupby() missing 1 required positional argument")
    assert ("pandas", WEIGHTS["message_api"], "message_api", "groupby()") in clues(method)


def test_whose_module_the_message_names() -> None:
    traceback = literal("AttributeError   Traceback (most recent call last)", cell("run(x)"),
                        "AttributeError: module 'seaborn' has no attribute 'displot2'")
    assert ("seaborn", WEIGHTS["message_type"], "message_module",
            "module 'seaborn'") in clues(traceback)
    imported = literal("ImportError   Traceback (most recent call last)", cell("run(x)"),
                       "ImportError: cannot import name 'x' from 'sklearn.metrics'")
    assert ("sklearn", WEIGHTS["message_type"], "message_module",
            "from 'sklearn.metrics'") in clues(imported)


# --------------------------------------------------------------------------- code lines


@pytest.mark.parametrize(("line", "library", "kind", "word"), [
    ("df = pd.read_csv(path)", "pandas", "crash_alias", "pd"),
    ("a, b = train_test_split(x)", "sklearn", "crash_api", "train_test_split"),
    ("g = table.groupby('x')", "pandas", "crash_method", "groupby"),
])
def test_the_crash_line_s_strongest_clue_per_library(line, library, kind, word) -> None:
    traceback = literal("ValueError   Traceback (most recent call last)", cell(line))  # cut
    assert clues(traceback) == {(library, WEIGHTS[kind], kind, word)}
    assert estimate(traceback) == library


def test_an_alias_beats_a_name_of_the_same_library_on_one_line() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("x = np.zeros(3).reshape(2)"), "ValueError: boom")
    assert clues(traceback) == {("numpy", WEIGHTS["crash_alias"], "crash_alias", "np")}
    api = literal("ValueError   Traceback (most recent call last)",
                  cell("x = train_test_split(a).fit_transform(b)"))
    assert clues(api) == {("sklearn", WEIGHTS["crash_api"], "crash_api", "train_test_split")}


def test_the_user_line_that_called_into_a_library_weighs_less() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                        "Cell In[2], line 5, in run(x)\n----> 5 return pd.concat(x)\n",
                        frame("pandas/core/reshape/concat.py"), "ValueError: boom")
    assert ("pandas", WEIGHTS["call_alias"], "call_alias", "pd") in clues(traceback)


def test_a_library_on_a_complete_crash_line_but_not_framed_weighs_half() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("plt.plot(pd.Series(x))"), frame("matplotlib/pyplot.py"),
                        "ValueError: boom")
    found = clues(traceback)
    assert ("pandas", WEIGHTS["crash_alias"] / 2, "crash_alias", "pd") in found
    assert ("matplotlib", WEIGHTS["crash_alias"], "crash_alias", "plt") in found


def test_compiled_libraries_keep_their_weight_without_any_frame() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("y = np.dot(a, b)"), "ValueError: shapes not aligned")
    assert ("numpy", WEIGHTS["crash_alias"], "crash_alias", "np") in clues(traceback)
    plain = literal("ValueError   Traceback (most recent call last)",
                    cell("y = pd.concat(a)"), "ValueError: boom")
    assert ("pandas", WEIGHTS["crash_alias"] / 2, "crash_alias", "pd") in clues(plain)
    cut = literal("ValueError   Traceback (most recent call last)", cell("y = pd.concat(a)"))
    assert ("pandas", WEIGHTS["crash_alias"], "crash_alias", "pd") in clues(cut)


def test_the_cell_s_imports_add_aliases_and_names() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("out = tts(x, y) + sb.x"))
    assert estimate(traceback) is None
    code = "import seaborn as sb\nfrom sklearn.model_selection import train_test_split as tts"
    found = clues(traceback, code)
    assert ("sklearn", WEIGHTS["crash_api"], "crash_api", "tts") in found
    assert ("seaborn", WEIGHTS["crash_alias"], "crash_alias", "sb") in found
    assert estimate(traceback, code) == "seaborn"


def test_an_import_s_names_end_with_its_line_unless_bracketed() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("sb.heatmap(NuSVC().fit(x, y))"))
    code = "from sklearn.svm import NuSVC\nimport seaborn as sb\n"
    assert clues(traceback, code) == {
        ("seaborn", WEIGHTS["crash_alias"], "crash_alias", "sb"),
        ("sklearn", WEIGHTS["crash_api"], "crash_api", "NuSVC"),
        ("sklearn", WEIGHTS["code"], "code", "used in the cell")}
    bracketed = "from sklearn.svm import (LinearSVR,\n    NuSVC as nu)\nimport seaborn as sb"
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("sb.heatmap(nu().fit(x, y))"))
    assert clues(traceback, bracketed) == {
        ("seaborn", WEIGHTS["crash_alias"], "crash_alias", "sb"),
        ("sklearn", WEIGHTS["crash_api"], "crash_api", "nu"),
        ("sklearn", WEIGHTS["code"], "code", "used in the cell")}


def test_the_standard_library_is_no_library() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("o.listdir(join(p))"), "ValueError: boom")
    assert estimate(traceback, "import os as o\nfrom os.path import join\no.getcwd()") is None
    assert estimate(traceback, "import skimage as o\nfrom os.path import join") == "skimage"


# --------------------------------------------------------------------------- decision


def test_a_clear_lead_wins_without_the_tie_breakers() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("df = pd.read_csv(p)"), frame("pandas/io/parsers.py"),
                        "ValueError: boom")
    assert estimate(traceback, "import numpy as np\nnp.ones(1)\nnp.zeros(2)") == "pandas"


def test_a_close_call_goes_to_the_library_the_cell_uses() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("run(x)"), "ValueError: boom")
    assert estimate(traceback) is None
    assert estimate(traceback, "model = lgb.train(p)\nrun(x)") == "lightgbm"
    assert ("lightgbm", WEIGHTS["code"], "code", "used in the cell") in clues(
        traceback, "model = lgb.train(p)\nrun(x)")


def test_equal_totals_go_to_the_library_built_on_the_others() -> None:
    traceback = literal("ValueError   Traceback (most recent call last)",
                        cell("x = np.ones(2) + pd.x"))
    assert score(traceback) == {"numpy": WEIGHTS["crash_alias"], "pandas": WEIGHTS["crash_alias"]}
    assert estimate(traceback) == "pandas"
    assert estimate(literal("ValueError   Traceback (most recent call last)",
                            cell("x = plt.x + sns.y"))) == "seaborn"


# --------------------------------------------------------------------------- entry points


def test_every_entry_point_answers_any_library_unless_asked_for_the_benchmark_s() -> None:
    from junobench.construct.library_cause import estimate_many

    xgb = literal("XGBoostError   Traceback (most recent call last)", cell("run(x)"),
                  frame("xgboost/core.py"), "XGBoostError: bad")
    pandas = literal("KeyError   Traceback (most recent call last)", cell("run(x)"),
                     frame("pandas/core/frame.py"), "KeyError: 'x'")
    assert score(xgb) == {"xgboost": WEIGHTS["entry_frame"] + WEIGHTS["raise_frame"]
                          + WEIGHTS["exception"]}
    assert score(xgb, benchmark=True) == {}
    assert {e.library for e in explain(xgb)} == {"xgboost"}
    assert explain(xgb, benchmark=True) == []
    assert estimate_many([xgb, pandas]) == ["xgboost", "pandas"]
    assert estimate_many([xgb, pandas], benchmark=True) == [None, "pandas"]
    plain = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                    "ValueError: boom")
    assert estimate_many([plain, plain], ["sns.set()", None]) == ["seaborn", None]
    with pytest.raises(ValueError):
        estimate_many([plain, plain], ["sns.set()"])


def test_a_clue_is_a_value() -> None:
    from dataclasses import FrozenInstanceError

    traceback = literal("LinAlgError   Traceback (most recent call last)", cell("run(x)"),
                        "LinAlgError: bad input")
    (clue,) = explain(traceback)
    with pytest.raises(FrozenInstanceError):
        clue.weight = 0.0  # type: ignore[misc]
    assert {clue} == set(explain(traceback))


def test_escaped_quotes_inside_the_last_item_are_not_its_boundary() -> None:
    # repr escapes the quote inside the message ('can\'t'); a backslash that ends an item
    # is escaped itself (two backslashes before the closing quote: not an escaped quote).
    escaped = literal("LinAlgError   Traceback (most recent call last)", cell("run(x)"),
                      "LinAlgError: can't \"invert\" it")
    assert "\\'" in escaped
    assert clues(escaped) == {("numpy", WEIGHTS["exception"], "exception", "LinAlgError")}
    backslash = literal("LinAlgError   Traceback (most recent call last)", cell("run(x)"),
                        "LinAlgError: can't \"read\" C:\\data\\")
    assert backslash.endswith("\\\\']")
    assert clues(backslash) == {("numpy", WEIGHTS["exception"], "exception", "LinAlgError")}


def test_colour_codes_are_stripped_from_a_list_a_literal_or_a_plain_text() -> None:
    items = ["\x1b[0;31mKeyError\x1b[0m    Traceback (most recent call last)",
             "Cell \x1b[0;32mIn[5], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m "
             "df\x1b[38;5;241m.\x1b[39mloc[\x1b[38;5;124m'x'\x1b[39m]\n",
             "\x1b[0;31mKeyError\x1b[0m: 'x'"]
    for form in (items, "\n".join(items), repr(items)):  # (repr escapes the codes)
        assert {(lib, kind, word) for lib, _, kind, word in clues(form)} == \
            {("pandas", "crash_method", "loc")}
        assert estimate(form) == "pandas"


def test_the_tie_breakers_read_the_cell_lines_just_above_a_late_crash_line() -> None:
    above = "".join(f"      {n} x{n} = {n}\n" for n in range(1, 30)) + "     30 sns.set()\n"
    traceback = literal("NameError   Traceback (most recent call last)",
                        f"Cell In[2], line 31\n{above}---> 31 show(z)\n",
                        "NameError: name 'show' is not defined")
    assert traceback.index("---> 31") > 240  # the window starts inside the cell, not at 0
    assert estimate(traceback) == "seaborn"
    assert ("seaborn", WEIGHTS["code"], "code", "used in the cell") in clues(traceback)


# --------------------------------------------------------------------------- windows


def test_the_message_is_read_for_240_characters() -> None:
    def traceback(name: str, length: int) -> str:
        phrase = " could not broadcast"
        return literal("Error   Traceback (most recent call last)", cell("run(x)"),
                       f"{name}: {'y' * (length - len(phrase))}{phrase}")

    message = ("numpy", WEIGHTS["message"], "message", "could not broadcast")
    for name in ("ValueError", "CustomError"):  # a known name or any other
        assert message in clues(traceback(name, 240))
        assert message not in clues(traceback(name, 241))


def test_an_exception_item_is_one_that_starts_with_a_name() -> None:
    digit = literal("Error   Traceback (most recent call last)", cell("run(x)"),
                    "H5Error: could not broadcast")
    assert ("numpy", WEIGHTS["message"], "message", "could not broadcast") in clues(digit)
    # complete (it ends with its exception item): pandas on the crash line, not framed,
    # weighs half
    complete = literal("Error   Traceback (most recent call last)", cell("df = pd.x()"),
                       "H5Error: bad")
    assert clues(complete) == {("pandas", WEIGHTS["crash_alias"] / 2, "crash_alias", "pd")}
    indented = literal("Error   Traceback (most recent call last)", cell("run(x)"),
                       "  LinAlgError: bad", "done")
    assert clues(indented) == set()


def test_items_whose_quotes_do_not_pair_are_read_by_their_look() -> None:
    # The message item opens with ' and closes with ": no quote opens the last item.
    unpaired = "['Error   Traceback', 'LinAlgError: could not broadcast\", 'y']"
    assert clues(unpaired) == {("numpy", WEIGHTS["exception"], "exception", "LinAlgError"),
                               ("numpy", WEIGHTS["message"], "message", "could not broadcast")}
    # A well-formed literal without an exception item: a quoted look-alike inside an item
    # is no item of its own.
    quoted = literal("Error   Traceback (most recent call last)", cell("run(x)"),
                     'x = "a", "LinAlgError: b"')
    assert clues(quoted) == set() and estimate(quoted) is None
    # An unquoted item ends the walk by quotes: the quoted items before it are read by look
    bare = "['Error   Traceback', 'LinAlgError: could not broadcast', x, 'y']"
    assert ("numpy", WEIGHTS["exception"], "exception", "LinAlgError") in clues(bare)
    # ... where one must start with an exception name, not merely contain one
    inner = "['Error   Traceback', 'xLinAlgError: could not broadcast', x, 'y']"
    assert [e for e in explain(inner) if e.kind == "exception"] == []


def test_a_code_line_is_read_for_300_characters() -> None:
    def traceback(padding: int) -> str:
        return literal("Error   Traceback (most recent call last)",
                       cell(f"x = f({'a' * padding}) + pd.x"))

    def end_of_alias(text: str) -> int:  # from the code's start to the end of "pd."
        return text.index("pd.") + 3 - (text.index("----> 2 ") + len("----> 2 "))

    inside, outside = traceback(300 - end_of_alias(traceback(0))), traceback(301 - end_of_alias(traceback(0)))
    assert (end_of_alias(inside), end_of_alias(outside)) == (300, 301)
    assert score(inside) == {"pandas": WEIGHTS["crash_alias"]}
    assert score(outside) == {}


def test_a_method_called_at_the_start_of_a_code_line_counts() -> None:
    traceback = literal("Error   Traceback (most recent call last)",
                        "Cell In[3], line 2\n      1 df = (df\n----> 2 .fillna(0))\n")
    assert clues(traceback) == {("pandas", WEIGHTS["crash_method"], "crash_method", "fillna")}


def test_a_name_outweighs_a_method_of_the_same_library_on_one_line() -> None:
    traceback = literal("Error   Traceback (most recent call last)", cell("x.loc[read_csv(p)]"))
    assert clues(traceback) == {("pandas", WEIGHTS["crash_api"], "crash_api", "read_csv")}


def test_the_tie_breakers_read_240_characters_above_the_crash_line() -> None:
    def traceback(before: int) -> str:  # "sns." starts ``before`` characters before the arrow
        return f"sns.set()\n{'#' * (before - 13)}\n---> 1 show(z)\nNameError: name 'show' is not defined"

    assert traceback(240).index("-> 1") == 240
    assert estimate(traceback(240)) == "seaborn"
    assert estimate(traceback(241)) is None
    assert estimate(traceback(20)) == "seaborn"


def test_the_header_s_name_is_looked_for_in_the_first_600_characters() -> None:
    def cut(padding: int, gap: int = 3) -> str:  # a cut traceback: only its header
        return f"{'#' * padding}\nNotFittedError{' ' * gap}{_HEADER_LINE}\n"

    def end_of_header(text: str) -> int:
        return text.index(_HEADER_LINE) + len(_HEADER_LINE)

    inside, outside = cut(600 - end_of_header(cut(0))), cut(601 - end_of_header(cut(0)))
    assert (end_of_header(inside), end_of_header(outside)) == (600, 601)
    found = {("sklearn", WEIGHTS["exception"], "exception", "NotFittedError")}
    assert clues(inside) == found and clues(outside) == set()
    # the name is the last word in the 120 characters before the header
    assert clues(cut(0, gap=120 - len("NotFittedError"))) == found
    assert clues(cut(0, gap=121 - len("NotFittedError"))) == set()


_HEADER_LINE = "Traceback (most recent call last)"


def test_an_imported_one_letter_function_called_wrongly_names_its_library() -> None:
    traceback = literal("TypeError   Traceback (most recent call last)", cell("run(x)"),
                        "TypeError: f() got an unexpected keyword argument 'x'")
    code = "from sklearn.metrics import f1_score as f\nrun(x)"
    assert ("sklearn", WEIGHTS["message_api"], "message_api", "f()") in clues(traceback, code)


def test_a_crash_line_at_the_very_start_of_a_text_counts() -> None:
    assert clues("-> 2 pd.read_csv(p)\n") == {
        ("pandas", WEIGHTS["crash_alias"], "crash_alias", "pd")}


def test_without_a_crash_line_the_first_600_characters_break_ties() -> None:
    def text(padding: int) -> str:  # "sns." ends ``padding + 4`` characters in
        return f"{'#' * padding}sns.set()\nValueError: boom"

    assert estimate(text(596)) == "seaborn"  # "sns." ends on the 600th character
    assert estimate(text(597)) is None


def test_a_text_that_starts_with_an_elision_still_breaks_ties() -> None:
    assert estimate("...\nsns.set()\nValueError: boom") == "seaborn"


def test_an_array_dispatch_frame_at_the_start_of_a_text_counts() -> None:
    entry = ("numpy", WEIGHTS["entry_frame"], "entry_frame", "first library frame")
    for tail in ("ValueError: boom", "ValueError: see pandas/_libs and the hub"):
        assert entry in clues(f"<__array_function__ internals> in concatenate(*args)\n{tail}")


def test_a_cut_single_item_literal_is_read_from_its_start() -> None:
    assert clues("['LinAlgError: bad input") == {
        ("numpy", WEIGHTS["exception"], "exception", "LinAlgError")}


def test_items_told_apart_by_their_look_are_read_in_the_last_4000_characters() -> None:
    def text(tail: int) -> str:  # a cut literal: no "]" ends it, no walk by quotes
        return f"['Error', 'LinAlgError: bad', '{'x' * tail}"

    def distance(t: str) -> int:  # from the quote before ", 'LinAlgError" to the end
        return len(t) - t.index("', 'LinAlgError")

    inside = text(4000 - distance(text(0)))
    outside = text(4001 - distance(text(0)))
    assert (distance(inside), distance(outside)) == (4000, 4001)
    found = ("numpy", WEIGHTS["exception"], "exception", "LinAlgError")
    assert found in clues(inside) and found not in clues(outside)


def test_the_word_before_object_however_short_names_its_library() -> None:
    traceback = literal("TypeError   Traceback (most recent call last)", cell("run(x)"),
                        "TypeError: D' object is not callable")
    code = "from pandas import DataFrame as D\nrun(x)"
    assert ("pandas", WEIGHTS["message_type"], "message_type", "'D' object") in clues(traceback, code)


def test_the_exception_is_the_last_line_not_the_header_s_name() -> None:
    text = f"{HEADER}\nValueError   Traceback (most recent call last)\n{cell('run(x)')}" \
           "ParserError: Error tokenizing data"
    assert clues(text) == {("pandas", WEIGHTS["exception"], "exception", "ParserError")}


def test_an_exception_on_the_last_line_of_the_last_item_is_read_in_600_characters() -> None:
    def traceback(length: int) -> str:  # the last line is ``length`` characters long
        return literal("Error   Traceback (most recent call last)",
                       f"x = 1\nLinAlgError: {'y' * (length - len('LinAlgError: '))}")

    def distance(text: str) -> int:  # from the name to the text's end, "']" included
        return len(text) - text.index("LinAlgError: ")

    inside, outside = traceback(598), traceback(599)
    assert (distance(inside), distance(outside)) == (600, 601)
    found = ("numpy", WEIGHTS["exception"], "exception", "LinAlgError")
    assert found in clues(inside) and found not in clues(outside)


def test_an_escaped_quote_does_not_open_the_last_item() -> None:
    # read by the quotes, the item is a ValueError; a look-alike inside it is not an item
    traceback = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                        'ValueError: can\'t read "a", "LinAlgError: b"')
    assert "\\'" in traceback
    assert clues(traceback) == set()
    # a backslash before the quote: repr writes three, still an escaped quote
    backslash = literal("ValueError   Traceback (most recent call last)", cell("run(x)"),
                        'ValueError: C:\\\'x read "a", "LinAlgError: b"')
    assert "\\\\\\'" in backslash
    assert clues(backslash) == set()


def test_a_quote_after_an_even_run_of_backslashes_is_not_escaped() -> None:
    # (a hand-joined literal: the backslashes escape each other, the quote opens the item)
    for run in (2, 4):
        joined = "['C:" + "\\" * run + "'LinAlgError: bad']"
        assert clues(joined) == {("numpy", WEIGHTS["exception"], "exception", "LinAlgError")}
    odd = "['C:\\\\\\'LinAlgError: bad']"  # three: the quote is escaped, no item opens there
    assert clues(odd) == set()
