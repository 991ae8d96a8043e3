"""``junobench tasks`` and the prompt: what a detector sees, and the answers kept apart."""

from __future__ import annotations

import json

import pytest

from junobench.cli import main
from junobench.detection.prompt import messages, sections, system_message, user_message
from junobench.detection.tasks import (
    build_tasks,
    cell_outputs,
    make_task,
    read_tasks,
    strip_comments,
    truth_path,
    write_tasks,
)
from junobench.errors import JunoBenchError

HIDDEN = {"crash", "diagnosis", "exception", "version"}


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tasks_of_the_reference_with_the_truth_apart(reference_snapshot, tmp_path, capsys):
    out = tmp_path / "tasks.jsonl"
    code = main(["tasks", "--source", str(reference_snapshot), "--out", str(out)])
    assert code == 0
    assert "wrote 222 tasks" in capsys.readouterr().out
    tasks = lines(out)
    truth = lines(truth_path(out))
    assert truth_path(out).name == "tasks.truth.jsonl"
    assert len(tasks) == len(truth) == 222
    assert [t["instance"] for t in tasks] == [t["instance"] for t in truth]
    for task in tasks:
        assert not HIDDEN & set(task), task["instance"]
        assert {"executed_cells", "target_cell", "library", "root_cause"} <= set(task)
    assert sum(t["crash"] for t in truth) == 111
    by_instance = {t["instance"]: t for t in tasks}
    rerun = by_instance["NBspecific_5_reproduced"]
    # The cell ran once before the crash: its first run ends the executed cells.
    assert rerun["executed_cells"][-1]["code_cell_index"] == rerun["target_cell"]["code_cell_index"]
    assert "[reexecute]" not in rerun["target_cell"]["source"]  # comments are stripped
    assert rerun["target_cell"]["source"].startswith("df.drop(columns='num_outbound_cmds'")
    truth_row = next(t for t in truth if t["instance"] == "NBspecific_5_reproduced")
    assert truth_row["exception"] == "KeyError" and truth_row["diagnosis"]


def test_tasks_filters_and_comments(reference_snapshot, tmp_path):
    out = tmp_path / "torch.jsonl"
    assert main(["tasks", "--source", str(reference_snapshot), "--out", str(out),
                 "--library", "torch", "--root-cause", "API misuse", "--keep-comments"]) == 0
    tasks = lines(out)
    assert tasks and all(t["library"] == "torch" and t["root_cause"] == "API misuse"
                         for t in tasks)
    assert len(tasks) % 2 == 0  # both notebooks of each case
    everything = main(["tasks", "--source", str(reference_snapshot), "--out",
                       str(tmp_path / "all.jsonl"), "--keep-comments", "--library", "NBspecific"])
    assert everything == 0
    rerun = {t["instance"]: t for t in lines(tmp_path / "all.jsonl")}["NBspecific_5_reproduced"]
    assert rerun["target_cell"]["source"].startswith("# [reexecute]")


def test_keep_outputs_adds_executed_outputs_but_never_the_targets(tmp_path):
    out = tmp_path / "sample.jsonl"
    assert main(["tasks", "--source", "sample", "--out", str(out), "--keep-outputs"]) == 0
    tasks = {t["instance"]: t for t in lines(out)}
    with_outputs = [c for t in tasks.values() for c in t["executed_cells"] if c.get("outputs")]
    assert with_outputs
    for task in tasks.values():
        assert "outputs" not in task["target_cell"]
        target = task["target_cell"]["code_cell_index"]
        assert all("outputs" not in c for c in task["executed_cells"]
                   if c["code_cell_index"] == target)
    rerun = tasks["NBspecific_2_reproduced"]
    assert "KeyError" not in json.dumps(rerun)  # the crash output stays hidden


def test_truth_file_must_differ_from_the_tasks_file(tmp_path):
    with pytest.raises(JunoBenchError, match="different file"):
        write_tasks([], [], tmp_path / "t.jsonl", tmp_path / "t.jsonl")


def test_strip_comments():
    assert strip_comments("x = 1  # one\n# alone\ny = '# not a comment'\n") == (
        "x = 1\ny = '# not a comment'\n")
    assert strip_comments('def f():\n    """# doc"""\n    return 1  # r\n') == (
        'def f():\n    """# doc"""\n    return 1\n')
    # IPython syntax the tokenizer rejects: comment-only lines still go.
    assert strip_comments("# [reexecute]\n!pip install x\nprint(1)\n") == (
        "!pip install x\nprint(1)\n")
    assert strip_comments("%%time\n# c\nx = 1") == "%%time\nx = 1"


def test_cell_outputs_reads_text_outputs():
    notebook = {"cells": [
        {"cell_type": "markdown", "source": "x"},
        {"cell_type": "code", "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]},
            {"output_type": "execute_result", "data": {"text/plain": "(3, 4)",
                                                       "image/png": "..."}},
            {"output_type": "error", "ename": "KeyError", "evalue": "'c'", "traceback": []}]},
        {"cell_type": "code", "outputs": []},
    ]}
    assert cell_outputs(json.dumps(notebook), 0) == "a\nb\n(3, 4)\nKeyError: 'c'"
    assert cell_outputs(notebook, 1) is None
    assert cell_outputs(notebook, 5) is None
    assert cell_outputs(notebook, 0, limit=3) == "a\nb\n…"


def record(**extra) -> dict:
    base = {"instance": "numpy_1_fixed", "case_id": "numpy_1", "version": "fixed",
            "crash": False, "library": "numpy", "library_label": "numpy",
            "root_cause": "API misuse", "crash_type": "value error",
            "pipeline_stage": "training", "ml_bug": "ML bug", "source": None,
            "exception": None, "diagnosis": None,
            "executed_cells": [{"code_cell_index": 0, "execution_count": 1,
                                "source": "import numpy as np  # numbers"},
                               {"code_cell_index": 2, "execution_count": 2,
                                "source": "a = np.ones(3)"}],
            "target_cell": {"code_cell_index": 3, "execution_count": 3, "source": "a.reshape(2)"}}
    base.update(extra)
    return base


def test_prompt_has_executed_cells_then_target_and_the_json_contract():
    task = make_task(record())
    text = user_message(task)
    assert text == ("# Executed Cells:\n## Cell 1:\nimport numpy as np\n\n## Cell 2:\n"
                    "a = np.ones(3)\n\n# Target Cell:\na.reshape(2)")
    system = system_message(task)
    assert '{"reasoning":' in system and '"detection": <true or false>' in system
    assert "certain" in system and "Runtime" not in system
    assert [m["role"] for m in messages(task)] == ["system", "user"]


def test_runtime_information_goes_between_executed_cells_and_target():
    tasks, _ = build_tasks([record()], runtime_info={"numpy_1_fixed": "a: ndarray, shape (3,)"})
    task = tasks[0]
    assert [title for title, _ in sections(task)] == [
        "Executed Cells", "Runtime Information", "Target Cell"]
    text = user_message(task)
    assert text.index("# Runtime Information:\na: ndarray, shape (3,)") < text.index(
        "# Target Cell:")
    assert "[Runtime Information]" in system_message(task)


def test_no_executed_cells_is_said_plainly():
    task = make_task(record(executed_cells=[]))
    assert "(no cell has run yet)" in user_message(task)


def test_read_tasks_checks_each_line(tmp_path):
    good = make_task(record())
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "target_cell": 3}) + "\n")
    with pytest.raises(JunoBenchError, match="line 2: 'target_cell'") as info:
        read_tasks(path)
    assert str(path) in str(info.value)
    path.write_text(json.dumps(good) + "\n")
    assert read_tasks(path) == [good]


def test_detect_refuses_filters_with_a_tasks_file(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(make_task(record())) + "\n")
    code = main(["detect", "--baseline", "static", "--tasks", str(path), "--library", "torch",
                 "--out", str(tmp_path / "p.jsonl")])
    assert code == 1 and "filters" in capsys.readouterr().err
