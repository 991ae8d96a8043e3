"""The case-origin filter (``origin`` / ``--origin``, the record field ``source``) in the API
and in every verb that takes label filters, next to ``--source`` (where the benchmark is)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest

import junobench
from junobench.cli import build_parser
from junobench.data.checkout import checkout
from junobench.data.tables import read_table, write_table
from junobench.detection.tasks import read_tasks, read_truth, truth_path
from junobench.errors import JunoBenchError

NEW = "newly sampled"
# The labelling sheet's split (reference README): 74 labeled in the study, 37 newly sampled.
NEW_COUNT, OLD_COUNT = 37, 74


@pytest.fixture(scope="module")
def origins(reference_dir) -> dict[str, str]:
    labels = read_table(reference_dir / "benchmark_labels.xlsx")
    return {r["nb_name"]: r["source"] for r in labels.records()}


def test_api_filters_by_origin_and_keeps_source_for_the_location(labelled_snapshot, origins):
    cases = junobench.load(labelled_snapshot, origin=NEW)
    expected = sorted(c for c, o in origins.items() if o == NEW)
    assert sorted(cases["case_id"]) == expected and len(expected) == NEW_COUNT
    assert set(cases["source"]) == {NEW}  # the record field keeps its published name
    both = junobench.load(labelled_snapshot, "notebooks", origin=[NEW, "labeled in empirical study"])
    assert both.num_rows == 2 * (NEW_COUNT + OLD_COUNT)
    torch_new = junobench.load(source=labelled_snapshot, library="torch", origin=NEW)
    assert all(c.startswith("torch_") and origins[c] == NEW for c in torch_new["case_id"])


def test_the_old_keyword_is_refused_with_the_new_name(labelled_snapshot):
    with pytest.raises(TypeError):  # source= is the benchmark's location, given twice here
        junobench.load(labelled_snapshot, source=NEW)
    from junobench.data.filters import normalise_filters

    with pytest.raises(JunoBenchError, match="origin"):
        normalise_filters({"source": NEW})
    with pytest.raises(JunoBenchError, match=r"no origin 'newly sampeld'.*'newly sampled'"):
        junobench.load(labelled_snapshot, origin="newly sampeld")


def test_ls_and_stats_take_origin_beside_source(labelled_snapshot, origins, capsys):
    code, out, err = run_cli(capsys, "ls", "--source", str(labelled_snapshot), "--origin", NEW,
                             "--format", "json")
    assert code == 0, err
    assert sorted(r["case_id"] for r in json.loads(out)) == sorted(c for c, o in origins.items() if o == NEW)
    code, out, err = run_cli(capsys, "stats", "--source", str(labelled_snapshot), "--origin", NEW,
                             "--format", "json")
    assert code == 0, err
    assert json.loads(out)["source"] == {NEW: NEW_COUNT}


def test_build_takes_origin(labelled_snapshot, capsys):
    code, out, err = run_cli(capsys, "build", "--source", str(labelled_snapshot), "--origin", NEW)
    assert code == 0, err
    assert out == "" and f"cases      {NEW_COUNT}\n" in err and f"notebooks  {2 * NEW_COUNT}\n" in err


def test_tasks_detect_and_evaluate_take_origin(labelled_snapshot, origins, tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    code, _, err = run_cli(capsys, "tasks", "--source", str(labelled_snapshot), "--origin", NEW,
                           "--library", "pandas", "--out", str(tasks))
    assert code == 0, err
    wanted = {c for c, o in origins.items() if o == NEW and c.startswith("pandas_")}
    assert len(read_tasks(tasks)) == 2 * len(wanted)
    assert {t["case_id"] for t in read_truth(truth_path(tasks))} == wanted
    predictions = tmp_path / "pred.jsonl"
    code, _, err = run_cli(capsys, "detect", "--baseline", "static", "--source", str(labelled_snapshot),
                           "--origin", NEW, "--library", "pandas", "--out", str(predictions))
    assert code == 0, err
    code, out, err = run_cli(capsys, "evaluate", str(predictions), "--source", str(labelled_snapshot),
                             "--origin", NEW, "--library", "pandas", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["n"] == 2 * len(wanted)


@pytest.mark.parametrize("verb", ["ls", "build", "stats", "verify", "runtime-info", "tasks", "detect",
                                  "evaluate"])
def test_every_filtering_verb_keeps_source_and_origin_apart(verb):
    extra = {"tasks": ["--out", "t.jsonl"], "detect": ["--baseline", "static", "--out", "p.jsonl"],
             "evaluate": ["p.jsonl"], "runtime-info": ["--out", "r.jsonl"]}.get(verb, [])
    args = build_parser().parse_args([verb, *extra, "--source", "somewhere", "--origin", NEW])
    assert args.source == "somewhere"
    assert args.filter_origin == [NEW]


@pytest.fixture
def sample_with_origins(tmp_path: Path) -> Path:
    """A checkout of two sample cases whose table says where each came from."""
    snap = checkout(["numpy_1", "pandas_2"], "sample", tmp_path / "snap")
    desc = read_table(snap / "benchmark_desc.xlsx")
    rows = [r | {"source": NEW if r["nb_name"] == "numpy_1" else "labeled in empirical study"}
            for r in desc.records()]
    write_table(snap / "benchmark_desc.xlsx", rows, desc.columns)
    return snap


@pytest.mark.kernel
def test_verify_and_runtime_info_run_only_the_cases_of_that_origin(sample_with_origins, sample_env, tmp_path,
                                                                  capsys):
    pytest.importorskip("nbclient", reason="verify needs the run extra")
    report = tmp_path / "verify.json"
    env = str(sample_env.path)  # numpy_1 needs NumPy 1.x (it uses np.NaN)
    code, _, err = run_cli(capsys, "verify", "--source", str(sample_with_origins), "--origin", NEW,
                           "--report", str(report), "--env", env, "--no-progress")
    assert code == 0, err
    assert set(json.loads(report.read_text())["cases"]) == {"numpy_1"}
    out = tmp_path / "runtime.jsonl"
    code, _, err = run_cli(capsys, "runtime-info", "--source", str(sample_with_origins), "--origin", NEW,
                           "--out", str(out), "--env", env, "--no-progress")
    assert code == 0, err
    assert {json.loads(line)["case_id"] for line in out.read_text().splitlines()} == {"numpy_1"}


def test_origin_on_a_source_that_does_not_record_it_is_an_error(reference_snapshot, capsys):
    """The published table has no `source` column: filtering by origin cannot match
    anything, and says so instead of printing an empty table."""
    for verb in ("ls", "stats"):
        code, out, err = run_cli(capsys, verb, "--source", str(reference_snapshot), "--origin", NEW)
        assert code == 1 and out == ""
        assert "error: cannot filter by origin: no case of this source records it" in err
    with pytest.raises(JunoBenchError, match="no case of this source records it"):
        junobench.load(reference_snapshot, origin=NEW)
