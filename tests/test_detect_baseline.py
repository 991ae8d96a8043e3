"""The static baseline: certain crashes only."""

from __future__ import annotations

import json

import pytest

from junobench.cli import main
from junobench.detection.baseline import findings, static_detect, unseen_runs
from junobench.detection.evaluate import evaluate
from junobench.pysource import python_source


def task(target: str, *executed: str, counts: list[int | None] | None = None) -> dict:
    counts = counts or list(range(1, len(executed) + 2))
    return {
        "executed_cells": [{"code_cell_index": i, "execution_count": counts[i], "source": s}
                           for i, s in enumerate(executed)],
        "target_cell": {"code_cell_index": len(executed), "execution_count": counts[-1],
                        "source": target},
    }


def crashes(target: str, *executed: str, **kwargs) -> bool:
    return static_detect(task(target, *executed, **kwargs))["detection"]


@pytest.mark.parametrize(("target", "executed"), [
    ("model.fit(X, y)", ["import numpy as np", "X = np.ones((3, 2))"]),
    ("print(total)\ntotal = 1", []),
    ("x = x + 1", []),
    ("counter += 1", []),
    ("del ghost", []),
    ("for c in columns:\n    pass", ["import pandas as pd"]),
    ("f(undefined_arg)", ["def f(a):\n    return a"]),
    ("y = local_only", ["def g():\n    local_only = 1\n    return local_only"]),
    ("print(a)", ["a = 1", "del a"]),
    ("print([v for v in values])", []),
])
def test_certain_name_errors(target, executed):
    assert crashes(target, *executed)


@pytest.mark.parametrize(("target", "executed"), [
    ("model.fit(X, y)", ["from sklearn.linear_model import *", "X = y = 1"]),
    ("print(z)", ["exec('z = 1')"]),
    ("print(z)", ["%run setup.py"]),
    ("print(z)", ["%store -r z"]),
    ("print(files)", ["files = !ls"]),
    ("print(out)", ["%%capture out\nprint(1)"]),
    ("print(w)", ["if True:\n    w = 1"]),
    ("print(v)", ["for v in range(3):\n    pass"]),
    ("print(g)", ["def setter():\n    global g\n    g = 1"]),
    ("try:\n    print(q)\nexcept NameError:\n    pass", []),
    ("if False:\n    print(never)", []),
    ("flag and undefined_maybe", ["flag = False"]),
    ("def later():\n    return not_yet\n", []),
    ("lambda: nothing", []),
    ("print(len(range(3)), __name__, display, In, _3)", []),
    ("%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1])", []),
    ("print(s)", ["s = 1\n for broken indentation"]),
    ("print(x)", ["x = 1"]),
    ("print(x)", ["(x := 5)"]),
    ("with open('f') as fh:\n    data = fh.read()\nprint(data)", []),
])
def test_no_crash_unless_certain(target, executed):
    assert not crashes(target, *executed)


def test_unseen_runs_make_nothing_certain():
    # Count 2 is missing: a cell ran that the task does not show; it may define X.
    assert not crashes("model.fit(X)", "import sklearn", counts=[1, 3])
    assert unseen_runs(task("x", "a = 1", counts=[1, 3]))
    assert not unseen_runs(task("x", "a = 1", "a = 1", counts=[1, None, 3]))


RERUN = "df.drop(columns='num_outbound_cmds', inplace=True)"


@pytest.mark.parametrize(("target", "executed"), [
    (RERUN, ["import pandas as pd\ndf = pd.read_csv('kdd.csv')", RERUN]),
    ("df = df.drop(['Amount'], axis=1)", ["df = load()", "df = df.drop(['Amount'], axis=1)"]),
    ("df.drop([10472], inplace=True)", ["df = load()", "df.drop([10472], inplace=True)"]),
    ("df['scaled'] = df['Amount'] * 2", ["df = load()", "df = df.drop(columns=['Amount'])"]),
    ("d.pop('k')", ["d = {'k': 1}", "d.pop('k')"]),
    ("del d['k']", ["d = {'k': 1}", "del d['k']"]),
    (RERUN, ["df = load()", RERUN, "df.head()\nprint(df.shape)"]),
])
def test_certain_key_errors_from_labels_already_removed(target, executed):
    found = findings(task(target, *executed))
    assert found and found[0].exception == "KeyError"


@pytest.mark.parametrize(("target", "executed"), [
    (RERUN, ["df = load()"]),
    (RERUN, ["df = load()", RERUN, "df = load()"]),  # bound again
    (RERUN, ["df = load()", RERUN, "df['num_outbound_cmds'] = 0"]),  # added again
    (RERUN, ["df = load()", RERUN, "df.insert(0, 'num_outbound_cmds', 0)"]),
    (RERUN, ["df = load()", RERUN, "restore(df)"]),  # passed on: may change unseen
    (RERUN, ["df = load()", RERUN, "other = df", "other['num_outbound_cmds'] = 1"]),
    (RERUN, ["df = load()", RERUN, "df.loc[:, 'num_outbound_cmds'] = 1"]),
    (RERUN, ["df = load()", "if x:\n    " + RERUN]),  # may not have run
    ("df.drop(columns='a', errors='ignore', inplace=True)",
     ["df = load()", "df.drop(columns='a', inplace=True)"]),
    ("df.drop(df[df.x > 1].index, inplace=True)",
     ["df = load()", "df.drop(df[df.x > 1].index, inplace=True)"]),
    ("d.pop('k', None)", ["d = {'k': 1}", "d.pop('k')"]),
    ("items.pop(0)", ["items = [1, 2]", "items.pop(0)"]),
])
def test_no_key_error_unless_certain(target, executed):
    assert not findings(task(target, *executed))


BROKEN = "for c in df.columns:\n if df[c].dtype != 'object':\n num.append(c)\n else:\n cat.append(c)"


def test_cells_that_lost_their_indentation_are_replayed_line_by_line():
    # The reconstructed notebooks flatten nested blocks to one space: such a cell does not
    # parse, but its lines still tell what it may define and change.
    assert crashes(RERUN, "df = load()\nnum, cat = [], []", BROKEN, RERUN)
    assert not crashes(RERUN, "df = load()", RERUN, BROKEN.replace("num.append(c)",
                                                                   "df['num_outbound_cmds'] = 1"))
    assert not crashes(RERUN, "df = load()", RERUN, BROKEN.replace("num.append(c)", "keep(df)"))
    assert not crashes("print(made)", BROKEN.replace("num.append(c)", "made = 1"))
    assert not crashes("print(made)", BROKEN.replace("num.append(c)", "exec(code)"))
    assert not crashes("print(made)", BROKEN.replace("num.append(c)", "exec(code,"))
    assert not crashes(RERUN, "df = load()", RERUN, "x = (1,\n keep(df))\n if y:\n z")


def test_ipython_lines_become_python():
    text, assigned, open_world = python_source("!pip install x\nfiles = !ls\n%timeit f()\nx = 1")
    assert text == "pass\nfiles = None\npass\nx = 1"
    assert assigned == {"files"} and not open_world
    assert python_source("%%bash\necho hi")[0] is None
    assert python_source("%run other.ipynb")[2]


def test_answer_format_matches_the_papers():
    answer = static_detect(task("print(nope)"))
    assert set(answer) == {"reasoning", "detection"}
    assert answer["detection"] is True and "nope" in answer["reasoning"]
    assert static_detect(task("print(1)"))["detection"] is False


def test_baseline_on_the_bundled_sample_is_right_where_it_speaks(tmp_path, capsys):
    out = tmp_path / "static.jsonl"
    assert main(["detect", "--baseline", "static", "--source", "sample", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "wrote 20 predictions" in captured.err
    report = evaluate(out, "sample").to_dict()
    assert report["fp"] == 0 and report["tp"] == 2
    flagged = {json.loads(line)["instance"] for line in out.read_text().splitlines()
               if json.loads(line)["runs"][0]["detection"]}
    assert flagged == {"NBspecific_1_reproduced", "NBspecific_2_reproduced"}


# Numbers reported in the README (section "Crash detection", static baseline).
README_REFERENCE = {"tp": 15, "fp": 9, "tn": 102, "fn": 96, "precision": 0.625, "recall": 0.135,
                    "f1": 0.222, "accuracy": 0.527}


def test_baseline_on_the_reference_as_reported(reference_snapshot, tmp_path, capsys):
    out = tmp_path / "static.jsonl"
    assert main(["detect", "--baseline", "static", "--source", str(reference_snapshot),
                 "--out", str(out)]) == 0
    report = evaluate(out, reference_snapshot).to_dict()
    assert {k: round(report[k], 3) for k in README_REFERENCE} == README_REFERENCE
    runs = {json.loads(line)["instance"]: json.loads(line)["runs"][0]
            for line in out.read_text().splitlines()}
    false_positives = {i for i, r in runs.items() if r["detection"] and i.endswith("_fixed")}
    # Every one reads a name that nothing in the snapshot's notebook defines: eight fixed
    # notebooks of notebook-specific cases whose reconstruction lacks the fixing runs, and
    # sklearn_13_fixed, whose published target cell reads x_encoded before defining it.
    assert all("NameError" in runs[i]["reasoning"] for i in false_positives)
    assert "sklearn_13_fixed" in false_positives
    assert all(i.startswith("NBspecific_") for i in false_positives - {"sklearn_13_fixed"})
