"""The verify judge and case specs, without kernels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junobench.data.snapshot import sample_path
from junobench.errors import JunoBenchError
from junobench.verify import DATA_ABSENT, case_specs, verify, verify_specs
from junobench.verify.judge import ERROR, OK, TIMEOUT, RunLog, StepOutcome, judge, same_exception
from junobench.verify.report import CaseResult, VerifyReport


def log(*steps: tuple, planned: int | None = None, **kw) -> RunLog:
    outcomes = tuple(StepOutcome(*s) for s in steps)
    return RunLog(outcomes, planned if planned is not None else len(outcomes), **kw)


# --------------------------------------------------------------------------- reproduced


def test_reproduced_crash_at_target_with_recorded_exception_passes():
    v = judge("reproduced", log((0, OK), (1, OK), (3, ERROR, "KeyError", "'x'")),
              target=3, expected="KeyError")
    assert v.ok and v.exception == "KeyError" and v.cell == 3
    assert "as recorded" in v.reason


def test_published_lowercase_ename_matches_class_name():
    v = judge("reproduced", log((0, ERROR, "KeyError", "'x'")), target=0, expected="keyerror")
    assert v.ok
    assert same_exception("pandas.errors.InvalidIndexError", "InvalidIndexError")
    assert not same_exception("KeyError", "ValueError")
    assert not same_exception(None, "KeyError")


def test_reproduced_without_crash_fails_with_no_crash():
    v = judge("reproduced", log((0, OK), (2, OK)), target=2, expected="KeyError")
    assert not v.ok
    assert v.reason.startswith("no crash: the target (code cell 2) ran without error")
    assert v.exception is None


def test_reproduced_with_different_exception_names_both():
    v = judge("reproduced", log((0, OK), (2, ERROR, "ValueError", "bad value\nmore")),
              target=2, expected="KeyError")
    assert not v.ok and v.exception == "ValueError" and v.cell == 2
    assert v.reason == ("different exception at the target (code cell 2): expected KeyError, "
                        "got ValueError: bad value")


def test_reproduced_crash_before_target_fails():
    v = judge("reproduced", log((0, OK), (1, ERROR, "NameError", "name 'pd' is not defined"),
                                planned=3), target=2, expected="NameError")
    assert not v.ok and v.cell == 1
    assert v.reason == "crashed before the target: code cell 1 raised NameError: name 'pd' is not defined"


def test_reexecute_target_must_survive_its_first_run():
    # A [reexecute] target: runs twice, the first must succeed and the second crash.
    good = log((0, OK), (4, OK), (4, ERROR, "KeyError", "'c'"))
    assert judge("reproduced", good, target=4, expected="KeyError").ok
    bad = log((0, OK), (4, ERROR, "KeyError", "'c'"), planned=3)
    v = judge("reproduced", bad, target=4, expected="KeyError")
    assert not v.ok
    assert v.reason.startswith("crashed before the target: the first run of the target (code cell 4)")


def test_timeout_and_kernel_failure_are_reported_as_such():
    v = judge("reproduced", log((0, OK), (1, TIMEOUT), planned=3, timeout=5.0),
              target=2, expected="KeyError")
    assert not v.ok and v.reason == "timed out after 5s at code cell 1" and v.cell == 1
    v = judge("fixed", log(planned=3, failure="the kernel died"), target=2)
    assert not v.ok and v.reason == "kernel failure: the kernel died"


def test_refused_files_are_an_input_error_not_a_kernel_failure():
    from junobench.construct.triage import NOT_RUN, classify

    refused = log(planned=3, input_error="data/pipe: a FIFO (named pipe): only regular files are copied")
    for version in ("reproduced", "fixed"):
        v = judge(version, refused, target=2, expected="KeyError")
        assert not v.ok and v.reason == f"input error: {refused.input_error}"
    triaged = classify(refused, crash_cell=2, expected="KeyError")
    assert triaged.outcome == NOT_RUN and triaged.detail.startswith("input error: data/pipe")


def test_incomplete_replay_is_not_a_pass():
    v = judge("fixed", log((0, OK), planned=3), target=2)
    assert not v.ok and v.reason == "incomplete replay: 1 of 3 runs happened"


# --------------------------------------------------------------------------- fixed


def test_fixed_all_runs_succeed_passes():
    v = judge("fixed", log((0, OK), (1, OK), (2, OK)), target=2)
    assert v.ok and v.reason == "all 3 runs succeeded"


def test_fixed_still_crashing_at_target_fails():
    v = judge("fixed", log((0, OK), (2, ERROR, "AttributeError", "no append")), target=2)
    assert not v.ok
    assert v.reason == "still crashes: the target (code cell 2) raised AttributeError: no append"


def test_judge_rejects_unknown_version_and_missing_expectation():
    with pytest.raises(ValueError):
        judge("original", log((0, OK)), target=0)
    with pytest.raises(ValueError):
        judge("reproduced", log((0, OK)), target=0)


step = st.tuples(st.integers(0, 5), st.sampled_from([OK, ERROR, TIMEOUT]),
                 st.sampled_from(["KeyError", "ValueError", None]))


@given(st.lists(step, max_size=6), st.integers(0, 7), st.none() | st.just("died"))
def test_verdicts_follow_the_rules(steps, planned, failure):
    outcomes = tuple(StepOutcome(i, status, name if status == ERROR else None) for i, status, name in steps)
    run = RunLog(outcomes, planned, failure=failure)
    statuses = [o.status for o in outcomes]
    fixed = judge("fixed", run, target=5)
    assert fixed.ok == (failure is None and len(outcomes) == planned and all(s == OK for s in statuses))
    reproduced = judge("reproduced", run, target=5, expected="KeyError")
    assert reproduced.ok == (
        failure is None and planned > 0 and len(outcomes) == planned
        and statuses[:-1] == [OK] * (planned - 1) and statuses[-1] == ERROR
        and outcomes[-1].ename == "KeyError"
    )
    assert reproduced.reason and fixed.reason


# --------------------------------------------------------------------------- specs


def test_specs_of_the_sample_carry_orders_targets_and_exceptions():
    specs = {s.case_id: s for s in case_specs(sample_path())}
    assert len(specs) >= 8
    reexecute = specs["NBspecific_2"]
    steps = [s.code_cell_index for s in reexecute.orders["reproduced"]]
    assert steps[-2:] == [reexecute.target, reexecute.target]  # the target runs twice
    assert reexecute.orders["fixed"][-1].code_cell_index == reexecute.target
    assert steps.count(reexecute.target) == 2
    assert [s.code_cell_index for s in reexecute.orders["fixed"]].count(reexecute.target) == 1
    skipped = specs["NBspecific_1"]
    assert [s.code_cell_index for s in skipped.orders["reproduced"]] == [0, 1, 2, 4]
    assert [s.code_cell_index for s in skipped.orders["fixed"]] == [0, 1, 2, 3, 4]
    assert skipped.expected_exception == "NameError"
    assert all(s.runnable for s in specs.values())


def test_filters_and_unknown_cases():
    specs = case_specs(sample_path(), filters={"library": ["notebook-specific"]})
    assert {s.case_id for s in specs} == {"NBspecific_1", "NBspecific_2"}
    with pytest.raises(JunoBenchError, match=r"no case 'pandas_99'.*did you mean"):
        case_specs(sample_path(), ["pandas_99"])


def test_removed_crash_output_falls_back_to_last_run_cell_and_table_exception(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(sample_path(), snap)
    path = snap / "benchmark" / "pandas_2" / "pandas_2_reproduced.ipynb"
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
    path.write_text(json.dumps(nb))
    (spec,) = case_specs(snap, ["pandas_2"])
    assert spec.target == 4 and spec.expected_exception == "attributeerror"
    assert "no error output" in spec.note


def test_cases_without_input_data_are_skipped_without_running(reference_snapshot):
    report = verify(["NBspecific_1", "torch_1"], reference_snapshot, progress=False)
    assert not report.ok
    for case in report:
        assert case.status == "skipped"
        assert case.reproduced.reason == DATA_ABSENT == case.fixed.reason
        assert case.logs == {}


def test_unreadable_notebook_fails_that_case_only(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(sample_path(), snap)
    (snap / "benchmark" / "pandas_2" / "pandas_2_fixed.ipynb").write_text("{not json")
    specs = case_specs(snap, ["pandas_2"])
    report = verify_specs(specs, jobs=1, progress=False)
    (case,) = report
    assert case.status == "failed"
    assert case.fixed.reason.startswith("cannot run: benchmark/pandas_2/pandas_2_fixed.ipynb: not valid JSON")


def test_report_json_shape(tmp_path):
    from junobench.verify.judge import Verdict

    report = VerifyReport([CaseResult("a_1", Verdict(True, "crashed", "KeyError", 3),
                                      Verdict(True, "all 4 runs succeeded"), 2.5)])
    out = tmp_path / "r.json"
    report.write(out)
    assert json.loads(out.read_text()) == {"environment": None, "cases": {"a_1": {
        "status": "passed",
        "reproduced": {"ok": True, "reason": "crashed", "exception": "KeyError", "cell": 3},
        "fixed": {"ok": True, "reason": "all 4 runs succeeded"},
        "seconds": 2.5,
        "mismatches": [],
        "inputs": None,
        "attempts": {},
        "faults": {},
        "sandbox": None,
    }}}
    back = CaseResult.from_json("a_1", json.loads(out.read_text())["cases"]["a_1"])
    assert (back.status, back.reproduced, back.fixed, back.kept) == ("passed", report["a_1"].reproduced,
                                                                     report["a_1"].fixed, True)
    assert report.ok
    assert not VerifyReport([]).ok


def test_bad_options_are_clear_errors():
    with pytest.raises(JunoBenchError, match="jobs"):
        verify(source="sample", jobs=0)
    with pytest.raises(JunoBenchError, match="timeout"):
        verify(source="sample", timeout=-1)
    with pytest.raises(JunoBenchError, match="unknown filter"):
        verify(source="sample", filters={"colour": "red"})
    with pytest.raises(JunoBenchError, match="no cases"):
        verify(source="sample", filters={"library": "torch"})


def test_sample_path_is_a_directory():
    assert Path(sample_path()).is_dir()


def test_progress_bar_counts_cases(reference_snapshot, capsys):
    verify(["NBspecific_1", "torch_1"], reference_snapshot, progress=True)
    err = capsys.readouterr().err
    assert "verify: 100%" in err and "2/2" in err and "2 skipped" in err
    verify(["NBspecific_1"], reference_snapshot, progress=False)
    assert "verify:" not in capsys.readouterr().err


def test_a_notebook_out_of_memory_is_its_own_verdict_and_status():
    from junobench.verify.judge import judge
    from junobench.verify.report import CaseResult

    memory = RunLog(steps=(StepOutcome(0, "ok"), StepOutcome(1, "error", "MemoryError", "")), planned=3)
    reproduced = judge("reproduced", memory, target=2, expected="KeyError")
    assert not reproduced.ok and reproduced.reason == "out of memory at code cell 1: expected KeyError, got MemoryError"
    fixed = judge("fixed", memory, target=2)
    assert fixed.reason == "out of memory at code cell 1: MemoryError"
    recorded = RunLog(steps=(StepOutcome(2, "error", "MemoryError", ""),), planned=1)
    assert judge("reproduced", recorded, target=2, expected="MemoryError").ok  # a recorded MemoryError crash
    killed = RunLog(steps=(StepOutcome(0, "ok"),), planned=3,
                    failure="out of memory: the notebook's processes used more than 4 GiB while running code cell 1")
    assert judge("fixed", killed, target=2).reason.startswith("out of memory: the notebook's processes")
    died = RunLog(steps=(), planned=3, failure="the kernel died while running code cell 0")
    assert judge("fixed", died, target=2).reason == "kernel failure: the kernel died while running code cell 0"
    case = CaseResult("a_1", reproduced, judge("fixed", RunLog((StepOutcome(2, "ok"),), 1), target=2),
                      sandbox="bwrap, network off")
    assert case.status == "out of memory" and case.to_json()["sandbox"] == "bwrap, network off"
    assert CaseResult.from_json("a_1", case.to_json()).status == "out of memory"
