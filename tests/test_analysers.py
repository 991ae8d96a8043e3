"""Static analysers as detectors, as CRANE-LLM ran them, and its published analyser outputs."""

from __future__ import annotations

import importlib.util
import json
import warnings

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junobench.detection import analysers
from junobench.detection.analysers import (
    analyse,
    analysed_text,
    annotate,
    annotated_target,
    crash_messages,
    detect_analyser,
    imported_modules,
    pylint_messages,
    pyright_messages,
)
from junobench.detection.crane_inputs import read_documents
from junobench.detection.evaluate import evaluate
from junobench.detection.layouts import locate, read_predictions
from junobench.detection.tasks import tasks
from junobench.errors import JunoBenchError

SETTINGS = {"crash_detection_code": "llms/llms_inputs/executed_code",
            "crash_detection_code_runinfo": "sas/sas_inputs/executed_code_runinfo"}
#: CRANE-LLM's published detection results (results_summary.xlsx, Results_summary_detection):
#: false positives and false negatives of each analyser and setting, 222 notebooks.
PUBLISHED = {("pylint", "crash_detection_code"): (13, 83),
             ("pylint", "crash_detection_code_runinfo"): (13, 84),
             ("pyright", "crash_detection_code"): (57, 43),
             ("pyright", "crash_detection_code_runinfo"): (59, 40)}


def detection_only(crane_llm_dir) -> dict[str, dict[str, str]]:
    """The Detection_only sheet: instance → setting column → correct / wrong."""
    from openpyxl import load_workbook

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sheet's data-validation extension
        book = load_workbook(crane_llm_dir / "results" / "results_summary.xlsx", read_only=True,
                             data_only=True)
        rows = list(book["Detection_only"].iter_rows(values_only=True))
    header = rows[0]
    return {row[0]: dict(zip(header[1:], row[1:], strict=False)) for row in rows[1:]
            if isinstance(row[0], str) and row[0].endswith(("_reproduced", "_fixed"))}


@pytest.mark.parametrize("analyser, setting", sorted(PUBLISHED))
def test_published_outputs_reproduce_the_published_detection_results(
        crane_llm_dir, reference_snapshot, analyser, setting):
    folder = crane_llm_dir / "sas/sas_outputs/results_raw" / analyser / setting
    assert locate(folder) == (folder, "crane-sa")
    report = evaluate(folder, reference_snapshot, resamples=10).to_dict()
    fp, fn = PUBLISHED[(analyser, setting)]
    assert (report["n"], report["fp"], report["fn"]) == (222, fp, fn)
    assert report["tp"] == 111 - fn and report["tn"] == 111 - fp
    assert report["precision"] == pytest.approx((111 - fn) / (111 - fn + fp))
    # notebook by notebook, as the published sheet judged each detection
    sheet = detection_only(crane_llm_dir)
    predictions = read_predictions(folder)
    for instance, judged in sheet.items():
        detected = predictions.runs[instance][0]["detection"]
        right = detected == instance.endswith("_reproduced")
        assert judged[f"{analyser}_{setting}"] == ("correct" if right else "wrong"), instance


def test_a_folder_of_both_settings_names_them(crane_llm_dir):
    with pytest.raises(JunoBenchError, match="holds 2 prediction sets"):
        read_predictions(crane_llm_dir / "sas/sas_outputs/results_raw/pylint")


@pytest.mark.parametrize("analyser", ["pylint", "pyright"])
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_parsing_gives_the_published_messages_from_the_published_inputs(
        crane_llm_dir, analyser, setting):
    """Every published message, given back as the analyser's JSON report on the line it
    names, parses to the published message: the file analysed for a task built from
    CRANE-LLM's input is that input, line for line, and the kept fields are CRANE-LLM's.
    (tensorflow_8's published input was made again after pyright ran on it: its lines
    moved, so pyright's messages on it name other lines.)"""
    documents = read_documents(crane_llm_dir / SETTINGS[setting])
    folder = crane_llm_dir / "sas/sas_outputs/results_raw" / analyser / setting
    checked, moved = 0, []
    for file in sorted(folder.glob("*/*.json")):
        published = json.loads(file.read_text())
        if not published:
            continue
        code = analysed_text(documents[file.stem])
        lines = [int(m["code_line"].split(":", 1)[0]) for m in published]
        if analyser == "pylint":
            report = json.dumps([{"type": m["type"], "line": n, "message": m["message"],
                                  "symbol": m["symbol"], "message-id": "E0000"}
                                 for m, n in zip(published, lines, strict=True)])
            parsed = pylint_messages(report, code)
        else:
            report = json.dumps({"generalDiagnostics": [
                {"file": "x.py", "severity": m["severity"], "message": m["message"],
                 "rule": m["rule"], "range": {"start": {"line": n - 1, "character": 0}}}
                for m, n in zip(published, lines, strict=True)]})
            parsed = pyright_messages(report, code)
        if parsed != published:
            moved.append(file.stem)
            assert [m["message"] for m in parsed] == [m["message"] for m in published]
        checked += len(published)
    assert checked > 100
    assert moved == ([] if analyser == "pylint" else ["tensorflow_8_fixed",
                                                      "tensorflow_8_reproduced"])


@pytest.mark.parametrize("analyser", ["pylint", "pyright"])
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_the_filter_is_the_one_behind_the_published_outputs(crane_llm_dir, analyser, setting):
    """CRANE-LLM's filter keeps every published message, except in pyright's code-only
    outputs, which were filtered before three entries joined its lists: there the final
    filter drops 40 messages and turns 3 of 222 verdicts (the published results count
    them as crashes, as `evaluate` reads the outputs: as they are)."""
    folder = crane_llm_dir / "sas/sas_outputs/results_raw" / analyser / setting
    dropped, flipped = [], []
    for file in sorted(folder.glob("*/*.json")):
        published = json.loads(file.read_text())
        kept = crash_messages(published)
        dropped += [m for m in published if m not in kept]
        if published and not kept:
            flipped.append(file.stem)
    if (analyser, setting) != ("pyright", "crash_detection_code"):
        assert dropped == []
        return
    assert len(dropped) == 40
    assert {m["rule"] for m in dropped} == {"reportPossiblyUnboundVariable",
                                            "reportAssignmentType", "reportCallIssue"}
    assert flipped == ["NBspecific_6_fixed", "sklearn_7_fixed", "sklearn_7_reproduced"]


def test_crane_filter_keeps_errors_only_and_drops_its_lists():
    messages = [
        {"source": "pylint", "type": "error", "symbol": "no-member", "message": "x"},
        {"source": "pylint", "type": "warning", "symbol": "unused-import", "message": "y"},
        {"source": "pylint", "type": "error", "symbol": "import-error", "message": "z"},
        {"source": "pylint", "type": "error", "symbol": "no-member",
         "message": "Module 'cv2' has no 'imread' member"},
        {"source": "pyright", "severity": "error", "rule": "reportCallIssue", "message": "a"},
        {"source": "pyright", "severity": "warning", "rule": "reportCallIssue", "message": "b"},
        {"source": "pyright", "severity": "error", "rule": "reportMissingImports",
         "message": "c"},
        {"source": "pyright", "severity": "error", "rule": "reportAttributeAccessIssue",
         "message": '"keras" is not a known attribute of module "tensorflow" (here)'},
        {"source": "flake8", "type": "error", "message": "w"},
    ]
    assert [m["message"] for m in crash_messages(messages)] == ["x", "a"]


@pytest.mark.parametrize("output", ["", "not json", "{}", "[1, 2]", '[{"line": "x"}]',
                                    '{"generalDiagnostics": [{"range": []}]}'])
def test_broken_analyser_output_is_no_message_or_a_message_without_line(output):
    for parse in (pylint_messages, pyright_messages):
        for message in parse(output, "x = 1\n"):
            assert message["code_line"].startswith(("0: ", "0: "))


def fake_runner(reports):
    """A runner that answers each call with the next report and records the file read."""
    seen = []

    def run(command, folder, timeout):
        seen.append((command, (folder / command[-1]).read_text()))
        return reports[len(seen) - 1]
    return run, seen


def test_detector_writes_one_run_per_task_and_resumes(tmp_path):
    task = {"id": "numpy_1_reproduced",
            "executed_cells": [{"source": "import numpy as np"}],
            "target_cell": {"source": "np.foo()"}, "runtime_info": "not code"}
    other = {**task, "id": "numpy_1_fixed", "target_cell": {"source": "np.ones(1)"}}
    report = json.dumps([{"type": "error", "line": 6, "symbol": "no-member",
                          "message": "Module 'numpy' has no 'foo' member"}])
    run, seen = fake_runner([report, "[]"])
    out = tmp_path / "pred.jsonl"
    summary = detect_analyser([task, other], out, "pylint", runner=run)
    assert summary.written == ["numpy_1_reproduced", "numpy_1_fixed"]
    # the file analysed is CRANE-LLM's document, without the runtime information
    assert seen[0][1] == "# Executed Cells:\n## Cell 1:\nimport numpy as np\n\n# Target Cell:\nnp.foo()"
    assert seen[0][0][:3] == analysers.COMMANDS["pylint"][:3]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["runs"][0]["detection"] is True
    assert lines[0]["runs"][0]["messages"][0]["code_line"] == "6: np.foo()"
    assert lines[1]["runs"][0]["detection"] is False
    annotated_run, annotated_seen = fake_runner(["[]"])
    detect_analyser([task], tmp_path / "annotated.jsonl", "pylint", runner=annotated_run,
                    annotations={"numpy_1_reproduced": {"x": "numpy.ndarray"}})
    assert annotated_seen[0][1].endswith(
        "# Annotated Target Code:\nx: np.ndarray\n\nnp.foo()")
    again = detect_analyser([task, other], out, "pylint", runner=fake_runner([])[0])
    assert again.written == [] and again.resumed == ["numpy_1_reproduced", "numpy_1_fixed"]
    with pytest.raises(JunoBenchError, match="unknown analyser"):
        detect_analyser([task], out, "mypy")


def test_a_missing_or_failing_analyser_is_one_clear_error(tmp_path):
    task = {"executed_cells": [], "target_cell": {"source": "x"}}
    with pytest.raises(JunoBenchError, match="cannot run /nonexistent"):
        analysers.run_command(["/nonexistent/pylint", "a.py"], tmp_path, 5)
    with pytest.raises(JunoBenchError, match="failed \\(exit 3\\)"):
        analysers.run_command(["sh", "-c", "echo broken >&2; exit 3"], tmp_path, 5)
    assert analyse(task, "pyright", runner=lambda c, f, t: "{}")["detection"] is False


def test_bad_published_output_files_are_refused(tmp_path):
    folder = tmp_path / "results" / "numpy"
    folder.mkdir(parents=True)
    good = [{"code_line": "1: x", "message": "m", "symbol": "s", "type": "error",
             "source": "pylint"}]
    (folder / "numpy_1_fixed.json").write_text(json.dumps(good))
    (folder / "numpy_1_reproduced.json").write_text(json.dumps([{"detection": True}]))
    with pytest.raises(JunoBenchError, match=r"numpy_1_reproduced\.json: case numpy_1_reproduced: "
                       "not a list of analyser messages"):
        read_predictions(tmp_path / "results", layout="crane-sa")
    (folder / "numpy_1_reproduced.json").write_text("[]")
    (folder / "notes.json").write_text("[]")
    with pytest.raises(JunoBenchError, match="file name"):
        read_predictions(tmp_path / "results", layout="crane-sa")


needs_pylint = pytest.mark.skipif(importlib.util.find_spec("pylint") is None,
                                  reason="pylint is not installed (the sa extra)")
needs_pyright = pytest.mark.skipif(importlib.util.find_spec("pyright") is None,
                                   reason="pyright is not installed (the sa extra)")


@pytest.mark.slow
@needs_pylint
def test_pylint_runs_on_the_sample_tasks(capsys, tmp_path):
    """The sample's NBspecific_1 crashes on names no executed cell defines; pylint says so,
    and the fixed notebook passes."""
    out = tmp_path / "pylint.jsonl"
    built, _ = tasks("sample", library="NBspecific")
    nb1 = [t for t in built if t["id"].startswith("NBspecific_1_")]
    detect_analyser(nb1, out, "pylint")
    runs = {json.loads(line)["instance"]: json.loads(line)["runs"][0]
            for line in out.read_text().splitlines()}
    assert runs["NBspecific_1_reproduced"]["detection"] is True
    assert "Undefined variable" in runs["NBspecific_1_reproduced"]["reasoning"]
    assert runs["NBspecific_1_fixed"]["detection"] is False


@pytest.mark.slow
@needs_pyright
def test_pyright_runs_live(tmp_path):
    task = {"executed_cells": [{"source": "def f(a: int) -> int:\n    return a"}],
            "target_cell": {"source": "f()"}}
    run = analyse(task, "pyright")
    assert run["detection"] is True
    assert run["messages"][0]["code_line"] == "7: f()"
    assert run["messages"][0]["rule"] == "reportCallIssue"
    assert analyse({**task, "target_cell": {"source": "f(1)"}}, "pyright")["detection"] is False


@pytest.mark.slow
@needs_pylint
def test_detect_verb_runs_an_analyser(capsys, tmp_path):
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(task) + "\n" for task in [
        {"id": "numpy_1_reproduced", "executed_cells": [{"source": "text = 'a'"}],
         "target_cell": {"source": "text.no_such_method()"}},
        {"id": "numpy_1_fixed", "executed_cells": [{"source": "text = 'a'"}],
         "target_cell": {"source": "text.upper()"}}]))
    out = tmp_path / "pred.jsonl"
    code, stdout, stderr = run_cli(capsys, "detect", "--baseline", "pylint", "--tasks",
                                   str(tasks_file), "--out", str(out), "--no-progress")
    assert code == 0 and stdout == "" and "wrote 2 predictions of pylint" in stderr
    runs = {json.loads(line)["instance"]: json.loads(line)["runs"][0]
            for line in out.read_text().splitlines()}
    assert runs["numpy_1_reproduced"]["detection"] is True
    assert "has no 'no_such_method' member" in runs["numpy_1_reproduced"]["reasoning"]
    assert runs["numpy_1_fixed"]["detection"] is False
    code, stdout, stderr = run_cli(capsys, "detect", "--baseline", "pylint", "--tasks",
                                   str(tasks_file), "--out", str(out), "--no-progress")
    assert code == 0 and stdout == "" and "wrote 0 predictions of pylint" in stderr and "2 were already" in stderr


@settings(max_examples=200)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(["line", "range", "start", "message",
                                                       "generalDiagnostics", "type",
                                                       "severity", "rule", "symbol"]),
                                      inner, max_size=5), max_leaves=20))
def test_any_analyser_output_parses_without_raising(value):
    output = json.dumps(value)
    for parse in (pylint_messages, pyright_messages):
        messages = parse(output, "a = 1\nb = 2\n")
        assert all(m["source"] in ("pylint", "pyright") for m in messages)
        crash_messages(messages)


#: Published annotated inputs written by a later form of CRANE-LLM's injector, which also
#: wrote ``from M import C`` lines (or whose aliases the published text cannot tell apart).
LATER_FORM = ["NBspecific_20_fixed", "numpy_8_fixed", "numpy_8_reproduced",
              "pandas_13_reproduced", "pandas_3_fixed", "pandas_3_reproduced",
              "sklearn_12_reproduced"]


def test_annotations_are_written_as_in_crane_llms_annotated_inputs(crane_llm_dir):
    """Each published annotated target cell, its annotations given back as dotted types,
    is written again exactly (imports added, aliases, blank lines), but for the inputs of
    a later form of the injector."""
    documents = read_documents(crane_llm_dir / "sas/sas_inputs/executed_code_runinfo")
    different = []
    for instance, task in sorted(documents.items()):
        target = task["target_cell"]["source"]
        lines = target.split("\n")
        start = 0
        while lines[start].startswith("import "):
            start += 1
        start += 1 if start else 0
        end = lines.index("", start)
        executed = "\n".join(cell["source"] for cell in task["executed_cells"])
        module_of = {}
        for module, alias in imported_modules(executed).items():
            module_of.setdefault(alias, module)
        types = {}
        for line in lines[start:end]:
            name, _, kind = line.partition(": ")
            head, _, rest = kind.partition(".")
            types[name] = f"{module_of[head]}.{rest}" if rest and head in module_of else kind
        code = "\n".join(lines[end + 1:])
        if annotated_target(code, types, executed) != target:
            different.append(instance)
    assert different == LATER_FORM


def test_annotate_puts_the_annotations_under_crane_llms_heading():
    task = {"id": "pandas_1_reproduced",
            "executed_cells": [{"source": "import pandas as pd\nimport torch.nn as nn"}],
            "target_cell": {"source": "df.groupby('a')"}}
    annotated = annotate(task, {"df": "pandas.DataFrame", "layer": "torch.nn.Linear",
                                "n": "int", "m": "keras.Sequential", "bad name": "x"})
    assert annotated["target_title"] == "Annotated Target Code"
    assert analysed_text(annotated).endswith(
        "# Annotated Target Code:\nimport keras\n\ndf: pd.DataFrame\nlayer: nn.Linear\n"
        "n: int\nm: keras.Sequential\n\ndf.groupby('a')")
    assert task["target_cell"]["source"] == "df.groupby('a')"  # the task is not changed


def test_public_types_are_those_an_analyser_resolves():
    import sys
    import types

    import numpy as np
    import pandas as pd

    from junobench.runtime.crane import public_type

    assert public_type(pd.DataFrame()) == "pandas.DataFrame"
    assert public_type(pd.Series([1])) == "pandas.Series"
    assert public_type(np.ones(2)) == "numpy.ndarray"
    assert public_type([1]) == "list" and public_type("a") == "str"
    assert public_type(np) is None and public_type(len) is None and public_type(int) is None
    assert public_type(lambda: 0) is None
    fake = types.ModuleType("fakelib")
    private = types.ModuleType("fakelib.ops._impl")

    class Dataset:
        pass

    class _PrefetchDataset(Dataset):
        pass

    Dataset.__module__, _PrefetchDataset.__module__ = "fakelib", "fakelib.ops._impl"
    fake.Dataset, private._PrefetchDataset = Dataset, _PrefetchDataset
    sys.modules.update({"fakelib": fake, "fakelib.ops._impl": private})
    try:
        assert public_type(_PrefetchDataset()) == "fakelib.Dataset"
    finally:
        del sys.modules["fakelib"], sys.modules["fakelib.ops._impl"]
