"""``junobench tasks`` and the prompt: what a detector sees, and the answers kept apart."""

from __future__ import annotations

import json
import re

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest

from junobench.cli import main
from junobench.detection.evaluate import evaluate
from junobench.detection.ids import blind_id, new_key
from junobench.detection.layouts import read_predictions
from junobench.detection.predictions import write_predictions
from junobench.detection.prompt import messages, sections, system_message, user_message
from junobench.detection.tasks import (
    build_tasks,
    cell_outputs,
    make_task,
    read_tasks,
    read_truth,
    strip_comments,
    task_key,
    truth_path,
    write_tasks,
)
from junobench.errors import JunoBenchError

#: What a detector may see; anything else in a task file would be a leak.
VISIBLE = {"id", "executed_cells", "target_cell", "runtime_info"}


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def reference_tasks(reference_snapshot, tmp_path_factory):
    out = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    code = main(["tasks", "--source", str(reference_snapshot), "--out", str(out)])
    assert code == 0
    return out


def test_tasks_of_the_reference_with_the_truth_apart(reference_tasks):
    tasks = lines(reference_tasks)
    truth = lines(truth_path(reference_tasks))
    assert truth_path(reference_tasks).name == "tasks.truth.jsonl"
    assert len(tasks) == len(truth) == 222
    assert [t["id"] for t in tasks] == [t["id"] for t in truth]
    for task in tasks:
        assert set(task) <= VISIBLE and {"id", "executed_cells", "target_cell"} <= set(task)
    assert sum(t["crash"] for t in truth) == 111
    assert {t["root_cause"] for t in truth} >= {"API misuse", "NB specific"}  # labels live here
    instance_of = {t["id"]: t["instance"] for t in truth}
    by_instance = {instance_of[t["id"]]: t for t in tasks}
    rerun = by_instance["NBspecific_5_reproduced"]
    # The cell ran once before the crash: its first run ends the executed cells.
    assert rerun["executed_cells"][-1]["code_cell_index"] == rerun["target_cell"]["code_cell_index"]
    assert "[reexecute]" not in rerun["target_cell"]["source"]
    assert rerun["target_cell"]["source"].startswith("df.drop(columns='num_outbound_cmds'")
    truth_row = next(t for t in truth if t["instance"] == "NBspecific_5_reproduced")
    assert truth_row["exception"] == "KeyError" and truth_row["diagnosis"]


def test_no_field_or_id_tells_reproduced_from_fixed(reference_tasks):
    tasks = lines(reference_tasks)
    truth = {t["id"]: t for t in lines(truth_path(reference_tasks))}
    # Every task has the same fields, none of them a label; cells carry only notebook content.
    assert len({frozenset(t) for t in tasks}) == 1
    cell_keys = {frozenset(c) for t in tasks for c in [*t["executed_cells"], t["target_cell"]]}
    assert cell_keys == {frozenset({"code_cell_index", "execution_count", "source"})}
    # Besides the code, nothing names a case, a version or an answer.
    skeleton = json.dumps([{**t, "executed_cells": [{**c, "source": ""} for c in t["executed_cells"]],
                            "target_cell": {**t["target_cell"], "source": ""}} for t in tasks])
    for word in ("reproduced", "fixed", "crash", "buggy", "case", "diagnosis", "library"):
        assert word not in skeleton.lower(), word
    assert not re.search(r"(tensorflow|torch|sklearn|numpy|pandas|NBspecific)_\d", skeleton)
    # Ids: one shape, distinct, unrelated to the version, and the order is the ids' order.
    ids = [t["id"] for t in tasks]
    assert all(re.fullmatch(r"task-[0-9a-f]{16}", i) for i in ids) and len(set(ids)) == 222
    assert ids == sorted(ids)
    crash = [truth[i]["crash"] for i in ids]
    assert 0.3 < sum(crash[:111]) / 111 < 0.7  # the first half is not the reproduced half
    pairs = {}
    for i in ids:
        pairs.setdefault(truth[i]["case_id"], []).append(ids.index(i))
    assert sum(abs(a - b) == 1 for a, b in pairs.values()) < 20  # a case's two tasks are not neighbours
    # Hashes under another key share nothing.
    assert not set(ids) & {blind_id(t["instance"], new_key()) for t in truth.values()}


def test_fixed_key_gives_the_same_ids_and_a_fresh_key_others(reference_snapshot, tmp_path):
    runs = []
    for name, extra in (("a", ["--id-key", "s3cret"]), ("b", ["--id-key", "s3cret"]), ("c", [])):
        out = tmp_path / f"{name}.jsonl"
        assert main(["tasks", "--source", str(reference_snapshot), "--library", "torch",
                     "--out", str(out), *extra]) == 0
        runs.append([t["id"] for t in lines(out)])
    assert runs[0] == runs[1] and not set(runs[0]) & set(runs[2])


def test_tasks_filters_and_comments(reference_snapshot, tmp_path):
    out = tmp_path / "torch.jsonl"
    assert main(["tasks", "--source", str(reference_snapshot), "--out", str(out),
                 "--library", "torch", "--root-cause", "API misuse", "--keep-comments"]) == 0
    truth = lines(truth_path(out))
    assert truth and all(t["library"] == "torch" and t["root_cause"] == "API misuse"
                         for t in truth)
    assert len(lines(out)) == len(truth) and len(truth) % 2 == 0  # both notebooks of each case
    everything = main(["tasks", "--source", str(reference_snapshot), "--out",
                       str(tmp_path / "all.jsonl"), "--keep-comments", "--library", "NBspecific"])
    assert everything == 0
    instance_of = {t["id"]: t["instance"] for t in lines(tmp_path / "all.truth.jsonl")}
    rerun = {instance_of[t["id"]]: t for t in lines(tmp_path / "all.jsonl")}["NBspecific_5_reproduced"]
    # Comments stay, but JunoBench's marker of the crashing re-run is not code: it would tell.
    assert "[reexecute]" not in rerun["target_cell"]["source"]
    assert rerun["target_cell"]["source"].startswith("df.drop(columns='num_outbound_cmds'")


def test_keep_outputs_adds_executed_outputs_but_never_the_targets(tmp_path):
    out = tmp_path / "sample.jsonl"
    assert main(["tasks", "--source", "sample", "--out", str(out), "--keep-outputs"]) == 0
    instance_of = {t["id"]: t["instance"] for t in lines(truth_path(out))}
    tasks = {instance_of[t["id"]]: t for t in lines(out)}
    with_outputs = [c for t in tasks.values() for c in t["executed_cells"] if c.get("outputs")]
    assert with_outputs
    for task in tasks.values():
        assert "outputs" not in task["target_cell"]
        target = task["target_cell"]["code_cell_index"]
        assert all("outputs" not in c for c in task["executed_cells"]
                   if c["code_cell_index"] == target)
    rerun = tasks["NBspecific_2_reproduced"]
    assert "KeyError" not in json.dumps(rerun)  # the crash output stays hidden


def test_blind_predictions_score_through_the_truth_file(reference_tasks, reference_snapshot,
                                                        reference_dir, tmp_path, capsys):
    qwen = read_predictions(reference_dir / "llm_outputs" / "qwen_2_5_32b_instruct" / "code")
    truth = lines(truth_path(reference_tasks))
    id_of = {t["instance"]: t["id"] for t in truth}
    blind = write_predictions(tmp_path / "blind.jsonl",
                              sorted((id_of[i], runs) for i, runs in qwen.runs.items()))
    code, _, err = run_cli(capsys, "evaluate", str(blind), "--source", str(reference_snapshot))
    assert code == 1 and "--truth" in err and "blind task ids" in err
    for extra in (["--source", str(reference_snapshot)], []):  # labels from either place
        code, out, err = run_cli(capsys, "evaluate", str(blind), "--truth",
                                 str(truth_path(reference_tasks)), *extra, "--format", "json")
        assert code == 0, err
        report = json.loads(out)
        assert (report["tp"], report["fp"], report["tn"], report["fn"]) == (71, 27, 84, 40)
        assert {r["library"] for r in report["by_library"]} >= {"torch", "notebook-specific"}
    code, out, _ = run_cli(capsys, "evaluate", str(blind), "--truth",
                           str(truth_path(reference_tasks)), "--library", "torch", "--format", "json")
    assert code == 0 and json.loads(out)["n"] == 30
    # Readable predictions still score, with or without the truth file.
    readable = write_predictions(tmp_path / "named.jsonl", sorted(qwen.runs.items()))
    for extra in ([], ["--truth", str(truth_path(reference_tasks))]):
        code, out, _ = run_cli(capsys, "evaluate", str(readable), "--source",
                               str(reference_snapshot), *extra, "--format", "json")
        assert code == 0 and json.loads(out)["tp"] == 71


def test_a_blind_id_the_truth_file_lacks_is_an_error(reference_tasks, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"instance": "task-0123456789abcdef", "runs": ["TRUE"]}\n')
    with pytest.raises(JunoBenchError, match="task-0123456789abcdef") as info:
        evaluate(path, truth=truth_path(reference_tasks))
    assert str(path) in str(info.value)


def test_old_task_and_truth_files_are_still_read(tmp_path):
    task = make_task(record())
    old = {"instance": "numpy_1_fixed", "library": "numpy",
           **{k: v for k, v in task.items() if k != "id"}}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(old) + "\n")
    assert task_key(read_tasks(path)[0]) == "numpy_1_fixed"
    truth = tmp_path / "t.truth.jsonl"
    truth.write_text('{"instance": "numpy_1_fixed", "crash": false, "exception": null}\n')
    row = read_truth(truth)[0]
    assert row["id"] == "numpy_1_fixed" and row["library_label"] == "numpy"
    assert row["version"] == "fixed"


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
