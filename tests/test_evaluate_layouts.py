"""Every published layout of predictions scores as the canonical one, read as published."""

from __future__ import annotations

import json
import shutil

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest
from published_layouts import construct_tree, crane_parsed_setting, crane_raw_setting

from junobench.detection.evaluate import evaluate
from junobench.detection.layouts import judged, read_predictions
from junobench.detection.predictions import write_predictions
from junobench.errors import JunoBenchError


@pytest.fixture(scope="module")
def crane(tmp_path_factory, qwen):
    root = tmp_path_factory.mktemp("crane_llm")
    code = crane_raw_setting(root, qwen)
    # A second setting beside it (the runtime-augmented one), here a copy of 40 notebooks.
    runinfo = code.with_name("crash_detection_code_runinfo")
    (runinfo / "other").mkdir(parents=True)
    for file in sorted(code.glob("*.json"))[:40]:
        shutil.copy(file, runinfo / file.name)
    return root, code, crane_parsed_setting(root, code)


def confusion(report):
    c = report.overall
    return c.tp, c.fp, c.tn, c.fn


def test_junobench_construct_layout_as_published(tmp_path, mistral, reference_snapshot, capsys):
    model = construct_tree(tmp_path, mistral)
    predictions = read_predictions(model)
    assert predictions.layout == "junobench-construct"
    assert predictions.runs == read_predictions(mistral).runs
    code, out, err = run_cli(capsys, "evaluate", str(model), "--source", str(reference_snapshot),
                             "--vote", "first-valid")
    assert code == 0, err
    assert "63/108 correct" in out and "65/108 correct" in out
    assert "(junobench-construct layout)" in out
    # The experiment folder, with the prompt inputs beside one model, is read as that model.
    report = evaluate(tmp_path / "llms" / "detect_if_cell_crash", reference_snapshot,
                      vote="first-valid")
    assert report.predictions == str(model) and report.to_dict()["reproduced"]["correct"] == 63


def test_several_models_are_named_not_guessed(tmp_path, mistral, reference_snapshot, capsys):
    construct_tree(tmp_path, mistral)
    construct_tree(tmp_path, mistral, model="llama3_70b")
    base = tmp_path / "llms" / "detect_if_cell_crash"
    code, _, err = run_cli(capsys, "evaluate", str(base), "--source", str(reference_snapshot))
    assert code == 1
    assert "holds 2 prediction sets" in err and "llama3_70b" in err and "mistralsmall31_latest" in err
    assert "input_nb_buggy_processed" not in err and "Traceback" not in err


def test_crane_raw_setting_reproduces_table_2b(crane, reference_snapshot, capsys):
    _, code_setting, _ = crane
    report = evaluate(code_setting, reference_snapshot)
    assert report.layout == "instances" and confusion(report) == (71, 27, 84, 40)
    assert report.missing == []
    # The model folder holds two settings: named, not merged.
    code, _, err = run_cli(capsys, "evaluate", str(code_setting.parent), "--source",
                           str(reference_snapshot))
    assert code == 1 and "crash_detection_code_runinfo" in err and "holds 2" in err


def test_crane_parsed_judge_labels_score_as_the_raw_runs(crane, reference_snapshot):
    _, code_setting, parsed = crane
    predictions = read_predictions(parsed)
    assert predictions.layout == "crane-parsed"
    raw = evaluate(code_setting, reference_snapshot)
    judged_report = evaluate(parsed, reference_snapshot)
    assert confusion(judged_report) == confusion(raw) == (71, 27, 84, 40)
    assert judged_report.unparsable == [] and judged_report.to_dict()["layout"] == "crane-parsed"


def test_judge_labels_mean_the_detection_they_judged():
    assert judged("[Correct]", "reproduced") is True
    assert judged("reasoning wrong", "reproduced") is True
    assert judged("[Wrong]", "reproduced") is False
    assert judged("[Correct]", "fixed") is False and judged("[Wrong]", "fixed") is True
    assert judged("[Partially correct]", "fixed") is None  # not a label a fixed notebook gets
    assert judged("Cannot verify: maybe", "reproduced") is None


def test_layout_override(crane, reference_snapshot, tmp_path, capsys):
    _, _, parsed = crane
    code, out, err = run_cli(capsys, "evaluate", str(parsed), "--source", str(reference_snapshot),
                             "--layout", "instances", "--format", "json")
    assert code == 0, err
    report = json.loads(out)  # judge labels are no detections: every notebook is undecided
    assert report["layout"] == "instances" and len(report["undecided"]) == 222
    file = write_predictions(tmp_path / "p.jsonl", [("torch_1_fixed", ["FALSE"])])
    code, _, err = run_cli(capsys, "evaluate", str(file), "--source", str(reference_snapshot),
                           "--layout", "junobench-construct")
    assert code == 1 and "is a folder, not a file" in err


def test_every_layout_scores_the_same_notebooks_the_same(crane, qwen, reference_snapshot, tmp_path):
    _, code_setting, parsed = crane
    canonical = write_predictions(tmp_path / "qwen.jsonl",
                                  sorted(read_predictions(qwen).runs.items()))
    buggy_fixed = tmp_path / "bf"
    for version, folder in (("reproduced", "buggy"), ("fixed", "fixed")):
        (buggy_fixed / folder).mkdir(parents=True)
        for file in qwen.glob(f"*_{version}.json"):
            shutil.copy(file, buggy_fixed / folder / file.name.replace(f"_{version}", ""))
    results = {path: evaluate(path, reference_snapshot) for path in
               (qwen, canonical, code_setting, parsed, buggy_fixed)}
    assert {confusion(r) for r in results.values()} == {(71, 27, 84, 40)}
    assert [r.layout for r in results.values()] == ["instances", "jsonl", "instances",
                                                    "crane-parsed", "buggy/fixed"]


def test_a_folder_with_both_version_folder_names_is_refused(tmp_path):
    for name in ("buggy", "reproduced", "fixed"):
        (tmp_path / name).mkdir()
    with pytest.raises(JunoBenchError, match="both buggy/ and reproduced/"):
        read_predictions(tmp_path)


def test_links_are_refused_and_fifos_never_opened(tmp_path, qwen):
    import os

    folder = tmp_path / "preds"
    folder.mkdir()
    shutil.copy(qwen / "torch_1_fixed.json", folder / "torch_1_fixed.json")
    os.mkfifo(folder / "torch_2_fixed.json")  # reading it would block: it must be skipped
    assert set(read_predictions(folder).runs) == {"torch_1_fixed"}
    outside = tmp_path / "outside.json"
    outside.write_text('["TRUE"]')
    (folder / "torch_1_reproduced.json").symlink_to(outside)
    with pytest.raises(JunoBenchError, match="symbolic link") as info:
        read_predictions(folder)
    assert "torch_1_reproduced.json" in str(info.value)
    cases = tmp_path / "cases"
    (cases / "results_fixed").mkdir(parents=True)
    (cases / "results_buggy").symlink_to(folder)
    with pytest.raises(JunoBenchError, match="symbolic link"):
        read_predictions(cases)
