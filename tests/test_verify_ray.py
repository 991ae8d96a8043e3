"""``verify`` and ``runtime-info`` through the executors: Ray gives the local verdicts, a
killed worker is retried and the report says so, a rerun on Ray resumes from the report
(resuming a local run: tests/test_verify.py)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from cli_run import run_cli
from processes import parent_of
from snapshot_files import edit_cell
from test_verify import Unstartable

from junobench.data.checkout import checkout
from junobench.envs.sandbox import Sandbox
from junobench.runtime import runtime_info
from junobench.verify import verify

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(420)]


def _verdicts(report: dict) -> dict:
    return {case: (entry["status"], entry["reproduced"]["reason"], entry["fixed"]["reason"])
            for case, entry in report["cases"].items()}


#: Sample cases whose verdicts differ in kind: the target after a cell that was not run
#: (NBspecific_1), a ``[reexecute]`` target (NBspecific_2), and in junobench's own
#: environment (numpy 2, pandas 3) two crashes before the target (matplotlib_1, numpy_1).
VARIED = ["NBspecific_1", "NBspecific_2", "matplotlib_1", "numpy_1"]


def test_verify_on_ray_gives_the_local_verdicts(ray_cluster, tmp_path, capsys):
    local, remote = tmp_path / "local.json", tmp_path / "ray.json"
    code_local, _, _ = run_cli(capsys, "verify", *VARIED, "--source", "sample", "--report", str(local),
                               "--no-progress")
    code_ray, _, err = run_cli(capsys, "verify", *VARIED, "--source", "sample", "--report", str(remote),
                               "--no-progress", "--executor", "ray", "--cpus-per-notebook", "1", "--retries", "1",
                               "--jobs", "3")
    assert code_ray == code_local
    local_report, ray_report = json.loads(local.read_text()), json.loads(remote.read_text())
    assert sorted(ray_report["cases"]) == VARIED
    assert _verdicts(ray_report) == _verdicts(local_report)
    assert all(entry["attempts"] == {"reproduced": 1, "fixed": 1} and entry["faults"] == {}
               for entry in ray_report["cases"].values() if entry["status"] != "skipped")
    # --jobs 3 on 2 CPUs: lowered to what the cluster holds at once, not a wait without end
    assert "ray, 2 jobs, 1 CPU per notebook (--jobs 3 lowered to 2" in err


def test_a_killed_worker_is_retried_and_the_report_says_so(ray_cluster, tmp_path):
    snap = checkout(["pandas_1"], "sample", tmp_path / "snap")
    marker = tmp_path / "kernel.pid"
    edit_cell(snap, "pandas_1", "reproduced", 0,
              f"import os, pathlib, time\nmarker = pathlib.Path({str(marker)!r})\nfirst = not marker.exists()\n"
              "marker.write_text(str(os.getpid()))\nif first:\n    time.sleep(120)\nimport numpy as np\n"
              "import pandas as pd")

    def kill_the_first_worker() -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (marker.exists() and marker.read_text()):
            time.sleep(0.2)
        kernel = int(marker.read_text())
        os.kill(parent_of(kernel), signal.SIGKILL)  # the Ray worker that started the kernel

    killer = threading.Thread(target=kill_the_first_worker)
    killer.start()
    report_file = tmp_path / "r.json"
    # unconfined: the test finds the kernel by the pid it writes outside its copy, which a sandbox forbids
    report = verify(source=snap, executor="ray", report=report_file, progress=False, sandbox=Sandbox("none"))
    killer.join()
    case = report["pandas_1"]
    assert case.status == "passed", case.reproduced.reason
    written = json.loads(report_file.read_text())["cases"]["pandas_1"]
    assert written["status"] == "passed"
    assert written["attempts"] == {"reproduced": 2, "fixed": 1}
    (fault,) = written["faults"]["reproduced"]
    assert fault.startswith("attempt 1: the worker died")


def test_runtime_info_on_ray_and_resumed(ray_cluster, tmp_path):
    out = tmp_path / "runtime.jsonl"
    records = runtime_info(["pandas_1"], "sample", executor="ray", out=out, progress=False)
    assert [r["status"] for r in records] == ["ok", "ok"], [r["problem"] for r in records]
    assert "df" in records[0]["objects"] and records[0]["inputs"]
    local = runtime_info(["pandas_1"], "sample", progress=False)
    assert [r["objects"] for r in local] == [r["objects"] for r in records]
    seen = []
    again = runtime_info(["pandas_1"], "sample", out=out, progress=False, on_record=seen.append,
                         executor=Unstartable(1))
    assert seen == [] and again == records  # every record kept, and nothing started to keep them


def test_ray_workers_run_kernels_in_a_shared_environment(ray_cluster, sample_env):
    # numpy_1 depends on the pinned NumPy: it passes only when the workers' kernels run in
    # the environment at the path given (shared: this machine is every worker).
    pinned = verify(["numpy_1"], "sample", env=sample_env.path, executor="ray", progress=False)
    assert pinned.ok, pinned["numpy_1"].reproduced.reason
    own = verify(["numpy_1"], "sample", executor="ray", progress=False)
    assert own["numpy_1"].status == "failed"


def test_verify_from_the_hub_on_ray_lets_each_worker_fetch_its_case(ray_cluster, tmp_path, monkeypatch):
    """The driver reads the tables and notebooks only; each worker fetches its case's
    folder, data included, from the Hub."""
    from hub_server import HubServer, Repo

    from junobench.data.snapshot import sample_path

    sample = sample_path()
    tree = {p.relative_to(sample).as_posix(): p.read_bytes() for p in sample.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
    driver_cache = tmp_path / "driver-cache"
    with HubServer(token="hf_unused") as hub:
        repo = hub.repos[("dataset", "someone/junobench-hub")] = Repo(private=False)
        hub.commit(repo, "main", tree, set(), "the sample")
        monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", hub.url)  # as HF_ENDPOINT would set
        monkeypatch.setattr("huggingface_hub.constants.HUGGINGFACE_CO_URL_TEMPLATE",
                            hub.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(driver_cache))
        report = verify(["pandas_1", "sklearn_1"], "someone/junobench-hub", executor="ray", progress=False)
        fetched = [path for method, path in hub.requests if "/resolve/" in path]
    assert report.ok, [case.row() for case in report]
    assert [case.status for case in report] == ["passed", "passed"]
    on_driver = {p.name for p in driver_cache.rglob("*") if p.is_file()}
    assert "pandas_1_reproduced.ipynb" in on_driver
    assert "passengers.csv" not in on_driver  # the data went to the worker only
    assert any(path.endswith("/benchmark/pandas_1/data/passengers.csv") for path in fetched)
    assert not any("/benchmark/numpy_1/data/" in path and not path.endswith(".metadata.json")
                   for path in fetched)  # only the verified cases' data


def test_the_same_files_give_the_same_verdict_on_both_executors(ray_cluster, tmp_path):
    """One check of case files for both: a data file named with a newline, a tab, a
    carriage return or a byte that is not UTF-8 is a file like any other; a FIFO is refused
    as an input error, before any kernel starts."""
    snap = checkout(["pandas_1", "pandas_2"], "sample", tmp_path / "snap")
    data = snap / "benchmark" / "pandas_1" / "data"
    names = ["odd\nname.csv", "tab\tname.csv", "cr\rname.csv", os.fsdecode(b"byte\xffname.csv")]
    for name in names:
        (data / name).write_text("a,b\n1,2\n")
    reads = "".join(f"assert pd.read_csv(os.path.join('data', {name!r})).shape == (1, 2)\n" for name in names)
    edit_cell(snap, "pandas_1", "fixed", 0, "import os\nimport numpy as np\nimport pandas as pd\n" + reads)
    os.mkfifo(snap / "benchmark" / "pandas_2" / "data" / "pipe")
    local = verify(source=snap, progress=False, jobs=2)
    remote = verify(source=snap, progress=False, executor="ray", executor_options={"retries": 0})
    assert [(c.status, c.reproduced, c.fixed) for c in remote] == [(c.status, c.reproduced, c.fixed) for c in local]
    assert remote["pandas_1"].status == "passed", remote["pandas_1"].fixed.reason
    refused = remote["pandas_2"]
    assert refused.status == "failed" and refused.reproduced.reason.startswith("input error: ")
    assert "a FIFO" in refused.reproduced.reason and "pipe" in refused.reproduced.reason


def test_a_notebook_that_kills_its_worker_gets_a_verdict_kept_on_resume(ray_cluster, tmp_path):
    snap = checkout(["pandas_1"], "sample", tmp_path / "snap")
    edit_cell(snap, "pandas_1", "fixed", 0, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    report_file = tmp_path / "r.json"
    # unconfined: in a sandbox the notebook's parent is the sandbox's watchdog, never the worker
    report = verify(source=snap, executor="ray", report=report_file, progress=False,
                    executor_options={"retries": 1}, sandbox=Sandbox("none"))
    case = report["pandas_1"]
    assert case.status == "failed", case.fixed.reason
    assert "the notebook killed the Ray worker running it, on each of the 2 attempts" in case.fixed.reason
    written = json.loads(report_file.read_text())["cases"]["pandas_1"]
    assert written["attempts"]["fixed"] == 2 and len(written["faults"]["fixed"]) == 2
    seen = []
    again = verify(source=snap, executor="ray", report=report_file, progress=False,
                   on_case=lambda c: seen.append(c.case_id), sandbox=Sandbox("none"))
    assert seen == [] and again["pandas_1"].kept and again["pandas_1"].fixed.reason == case.fixed.reason


def test_a_replay_past_its_deadline_is_a_fault_that_is_retried(ray_cluster, tmp_path):
    from junobench.verify.ray_executor import RayExecutor

    snap = checkout(["pandas_1"], "sample", tmp_path / "snap")
    edit_cell(snap, "pandas_1", "reproduced", 0, "import time\ntime.sleep(600)")
    report = verify(source=snap, executor=RayExecutor(retries=1, deadline=12), progress=False)
    case = report["pandas_1"]
    assert case.status == "infrastructure error"
    assert case.attempts["reproduced"] == 2
    assert all("passed its deadline of 12 s" in fault for fault in case.faults["reproduced"])
    assert case.fixed.ok  # the other notebook ran within its deadline


def test_keep_outputs_on_ray_keeps_what_the_workers_replayed(ray_cluster, tmp_path):
    """--keep-outputs with Ray: the notebooks come back from the workers with their outputs,
    as the local executor keeps them (the same runs, the same outputs but for the worker)."""
    import nbformat

    local, remote = tmp_path / "local", tmp_path / "ray"
    verify(["NBspecific_2", "pandas_1"], "sample", jobs=2, progress=False, keep_outputs=local)
    report = verify(["NBspecific_2", "pandas_1"], "sample", executor="ray", progress=False, keep_outputs=remote,
                    executor_options={"retries": 0})
    assert report.ok
    names = sorted(p.relative_to(remote).as_posix() for p in remote.rglob("*.ipynb"))
    assert names == sorted(p.relative_to(local).as_posix() for p in local.rglob("*.ipynb"))
    assert len(names) == 4
    for name in names:
        ours, theirs = (nbformat.read(folder / name, as_version=4) for folder in (local, remote))
        replay = theirs.metadata["junobench"].pop("replay")
        assert replay["worker"]  # where it ran
        assert replay["runs"] == ours.metadata["junobench"].pop("replay")["runs"]
        assert [(c.get("execution_count"), [o.output_type for o in c.get("outputs", [])]) for c in theirs.cells] == \
            [(c.get("execution_count"), [o.output_type for o in c.get("outputs", [])]) for c in ours.cells], name
