"""The executor seam: local kernels and Ray tasks replay alike; faults are retried, counted
and kept apart from verdicts; cancelling leaves no kernel behind."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
import tarfile
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from processes import gone, parent_of

from junobench.data.notebook import Step
from junobench.data.snapshot import sample_path
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.verify import make_executor
from junobench.verify.case_files import survey
from junobench.verify.executor import LocalExecutor, Place, ReplayTask, Workspace, run_tasks
from junobench.verify.ray_executor import RayExecutor
from junobench.verify.runner import run_sync
from junobench.verify.shipping import TooLarge, receive, ship
from junobench.verify.spec import case_specs

pytest.importorskip("nbclient", reason="replays need the run extra")
# A hung replay fails its test within minutes, with every thread's stack (pytest-timeout).
pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]

#: The fault tests find a kernel by the pid it writes outside its working copy, which a
#: sandbox forbids: they run unconfined (tests/test_containment.py cancels sandboxed runs).
UNCONFINED = Sandbox("none")


def wait_for(path: Path, run: asyncio.Future) -> str:
    """What a kernel wrote to ``path``, once written, as long as ``run`` goes on (a state,
    not a clock: a loaded machine is slower, never red; pytest-timeout bounds a hang)."""
    while True:
        ended = run.done()
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        if ended:
            raise AssertionError(f"{path} never appeared: the run ended first ({run!r})")
        time.sleep(0.2)


def worker_folders(pid: int) -> list[Path]:
    """The folders of the Ray worker ``pid`` (its scratch and kernel files)."""
    from junobench.verify.ray_worker import PREFIX

    return list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{pid}-*"))


def one_cell_task(folder: Path, source: str, key: str = "t", timeout: float = 120) -> ReplayTask:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), folder / "nb.ipynb")
    return ReplayTask(key, "case/nb.ipynb", (Step(0, 1),), "case", (Place(str(folder), "case"),), timeout)


def sample_tasks(case_ids: list[str]) -> list[ReplayTask]:
    tasks = []
    for spec in case_specs(sample_path(), case_ids):
        for version in ("reproduced", "fixed"):
            tasks.append(ReplayTask(f"{spec.case_id}_{version}", f"{spec.case_id}/{spec.case_id}_{version}.ipynb",
                                    spec.orders[version], spec.case_id, (Place(str(spec.folder), spec.case_id),),
                                    60, spec.case_id))
    return tasks


def test_local_and_ray_replay_alike(ray_cluster):
    tasks = sample_tasks(["pandas_1", "NBspecific_2"])
    local = run_sync(run_tasks(LocalExecutor(2), tasks))
    remote = run_sync(run_tasks(RayExecutor(), tasks))
    assert [o.log.steps for o in remote] == [o.log.steps for o in local]
    assert all(o.attempts == 1 and not o.faults and o.ok and o.worker for o in remote)
    assert local[0].log.steps[-1].ename == "KeyError"


def test_files_travel_with_the_task_and_the_workspace_is_a_copy(ray_cluster, tmp_path):
    folder = tmp_path / "case"
    task = one_cell_task(folder, "import os\nprint(sorted(os.listdir('.')), open('data.txt').read())\n"
                         "open('data.txt', 'w').write('changed')")
    (folder / "data.txt").write_text("shipped")
    outcome = run_sync(run_tasks(RayExecutor(), [task]))[0]
    assert outcome.log.steps[0].status == "ok"
    assert (folder / "data.txt").read_text() == "shipped"  # the worker wrote to its own copy


def test_a_worker_fetches_only_its_case_from_the_hub(ray_cluster, tmp_path, monkeypatch):
    from hub_server import HubServer, Repo

    from junobench.verify.executor import HubCase, hub_endpoint

    benchmark = sample_path() / "benchmark"
    tree = {f"benchmark/{case}/{p.relative_to(benchmark / case).as_posix()}": p.read_bytes()
            for case in ("pandas_1", "numpy_1") for p in (benchmark / case).rglob("*") if p.is_file()}
    spec = case_specs(sample_path(), ["pandas_1"])[0]
    with HubServer(token="hf_unused") as hub:
        repo = hub.repos[("dataset", "someone/junobench")] = Repo(private=False)
        hub.commit(repo, "main", tree, set(), "the sample's two cases")
        monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", hub.url)
        fetch = HubCase("someone/junobench", "pandas_1", "pandas_1", endpoint=hub_endpoint())
        assert fetch.endpoint == hub.url
        task = ReplayTask("pandas_1_reproduced", "pandas_1/pandas_1_reproduced.ipynb", spec.orders["reproduced"],
                          "pandas_1", (), 60, "pandas_1", fetch=(fetch,))
        outcome = run_sync(run_tasks(RayExecutor(), [task]))[0]
        fetched = {path for method, path in hub.requests if "/resolve/" in path}
    assert outcome.ok and outcome.log.steps[-1].ename == "KeyError", outcome.log
    assert fetched and all("/benchmark/pandas_1/" in path for path in fetched), fetched
    assert any(path.endswith("/data/passengers.csv") for path in fetched)


def test_a_killed_worker_is_retried_and_its_kernel_does_not_survive(ray_cluster, tmp_path):
    marker = tmp_path / "kernel.pid"
    task = one_cell_task(tmp_path / "case", f"import os, pathlib, time\nmarker = pathlib.Path({str(marker)!r})\n"
                         "first = not marker.exists()\nmarker.write_text(str(os.getpid()))\n"
                         "if first:\n    time.sleep(120)")

    async def kill_first_worker(run: asyncio.Future) -> int:
        kernel = int(await asyncio.to_thread(wait_for, marker, run))
        worker = parent_of(kernel)  # the Ray worker that started the kernel
        assert worker_folders(worker), "the worker keeps its files in a folder of its own"
        os.kill(worker, signal.SIGKILL)
        assert await asyncio.to_thread(gone, kernel), "the first attempt's kernel was left behind"
        return worker

    async def main():
        async with RayExecutor(retries=1, sandbox=UNCONFINED) as executor:
            run = asyncio.ensure_future(executor.run(task))
            worker = await kill_first_worker(run)
            return await run, worker

    outcome, killed = run_sync(main())
    # the replacement worker swept the dead one's folder: the case's copy and the kernel's key
    assert not worker_folders(killed)
    assert outcome.ok and outcome.attempts == 2
    assert outcome.log.steps[0].status == "ok"
    assert len(outcome.faults) == 1 and outcome.faults[0].startswith("attempt 1: the worker died")


def test_faults_past_the_retries_are_infrastructure_errors(ray_cluster, tmp_path):
    marker = tmp_path / "kernel.pid"
    task = one_cell_task(tmp_path / "case", f"import os, pathlib, time\npathlib.Path({str(marker)!r})"
                         ".write_text(str(os.getpid()))\ntime.sleep(120)")

    async def main():
        async with RayExecutor(retries=0, sandbox=UNCONFINED) as executor:
            run = asyncio.ensure_future(executor.run(task))
            kernel = int(await asyncio.to_thread(wait_for, marker, run))
            os.kill(parent_of(kernel), signal.SIGKILL)
            return await run

    outcome = run_sync(main())
    assert not outcome.ok and outcome.attempts == 1
    assert outcome.error.startswith("1 attempt failed, the last: the worker died")
    assert outcome.log.steps == () and outcome.log.failure == outcome.error


@pytest.mark.parametrize("executor", ["local", pytest.param("ray", marks=[pytest.mark.slow, pytest.mark.ray])])
def test_cancelling_stops_the_kernels(executor, tmp_path, request):
    if executor == "ray":
        request.getfixturevalue("ray_cluster")
    markers = [tmp_path / f"kernel{i}.pid" for i in range(2)]
    tasks = [one_cell_task(tmp_path / f"case{i}", f"import os, pathlib, time\npathlib.Path({str(m)!r})"
                           ".write_text(str(os.getpid()))\nwhile True: time.sleep(0.1)", key=f"t{i}")
             for i, m in enumerate(markers)]

    async def main() -> tuple[list[int], list[int]]:
        runner = make_executor(executor, jobs=2)
        runner.sandbox = UNCONFINED
        run = asyncio.ensure_future(run_tasks(runner, tasks))
        kernels = [int(await asyncio.to_thread(wait_for, m, run)) for m in markers]
        workers = [parent_of(pid) for pid in kernels]
        run.cancel()  # what Ctrl-C does to the run
        with pytest.raises(asyncio.CancelledError):
            await run
        return kernels, workers

    kernels, workers = run_sync(main())
    for pid in kernels:
        assert gone(pid), f"kernel {pid} was left behind"
    if executor == "ray":  # the workers removed their folders: the cases' copies, the kernels' keys
        left = [folder for pid in workers for folder in worker_folders(pid)]
        assert not left, [(folder, sorted(map(str, folder.rglob("*"))), [gone(pid) for pid in workers])
                          for folder in left]


def test_pinned_requirements_become_a_uv_runtime_environment(tmp_path):
    task = replace(one_cell_task(tmp_path / "case", "1 + 1"), requirements=("pandas==2.1.4", "numpy==1.26.4"))
    assert RayExecutor(build_envs=False).task_runtime_env(task) is None
    pinned = {"uv": {"packages": ["pandas==2.1.4", "numpy==1.26.4"]}}
    assert RayExecutor(build_envs=True).task_runtime_env(task) == pinned
    given = RayExecutor(build_envs=True, runtime_env={"uv": ["ipykernel"], "env_vars": {"A": "1"}})
    assert given.task_runtime_env(task) == {"uv": {"packages": ["ipykernel", "pandas==2.1.4", "numpy==1.26.4"]},
                                            "env_vars": {"A": "1"}}


def test_an_environment_that_fails_to_build_is_an_infrastructure_error(ray_cluster, tmp_path):
    # A runtime environment naming a conda environment this machine does not have: Ray's
    # agent fails to set it up (quickly; a uv environment clones the whole virtualenv first).
    executor = RayExecutor(retries=1, runtime_env={"conda": "junobench-no-such-environment"})
    outcome = run_sync(run_tasks(executor, [one_cell_task(tmp_path / "case", "1 + 1")]))[0]
    assert not outcome.ok and outcome.attempts == 2
    assert outcome.error.startswith("2 attempts failed, the last: the environment failed to build")
    assert [f.split(": ", 1)[1].split(" (")[0] for f in outcome.faults] == ["the environment failed to build"] * 2


def test_an_environment_missing_on_the_worker_is_an_infrastructure_error(ray_cluster, tmp_path):
    from junobench.envs.kernel import KernelTarget

    elsewhere = KernelTarget(str(tmp_path / "no-env" / "bin" / "python"), str(tmp_path / "no-env"))
    outcome = run_sync(run_tasks(RayExecutor(retries=0, target=elsewhere), [one_cell_task(tmp_path / "case", "1")]))[0]
    assert not outcome.ok and "is not on this worker" in outcome.error


def test_a_wrong_token_is_named_in_the_error(ray_cluster, monkeypatch):
    # Ray's local instances use token authentication (RAY_AUTH_MODE=token); a driver with
    # another token cannot join, and the error says where the token comes from.
    address = ray_cluster.get_runtime_context().gcs_address
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "not-the-cluster-token")
    monkeypatch.setenv("RAY_NUM_REDIS_GET_RETRIES", "2")  # Ray's own retries: 20, a second apart
    with pytest.raises(JunoBenchError, match=r"token authentication is on .*RAY_AUTH_TOKEN"):
        run_sync(run_tasks(RayExecutor(address=address), []))


def test_ray_options_are_checked(ray_cluster):
    with pytest.raises(JunoBenchError, match="asks for 64 CPUs"):
        run_sync(run_tasks(RayExecutor(cpus=64), []))
    with pytest.raises(JunoBenchError, match="--executor ray only"):
        make_executor("local", address="auto")
    with pytest.raises(JunoBenchError, match="must be positive"):
        RayExecutor(memory=0)


def _shipped(entries, out: Path, chunk: int = 7) -> list[bytes]:
    """``entries`` shipped through an in-memory store of ``chunk``-byte objects, received in ``out``."""
    store: list[bytes] = []

    def put(data: bytes) -> int:
        assert len(data) <= chunk  # the driver never holds more than one chunk
        store.append(data)
        return len(store) - 1

    shipment = ship(entries, put=put, chunk=chunk)
    receive(shipment.chunks, Workspace(out, "."), out, get=store.__getitem__)
    return store


def test_shipped_files_arrive_in_chunks_and_escapes_are_refused(tmp_path):
    folder = tmp_path / "case"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "a.csv").write_text("x\n1\n")
    (folder / "data" / "two\nlines.csv").write_text("y\n2\n")  # a name a local copy keeps
    (folder / "data" / "inner").symlink_to("a.csv")
    store = _shipped(survey([Place(str(folder), "case")]), tmp_path / "out")
    assert len(store) > 3
    assert (tmp_path / "out" / "case" / "data" / "a.csv").read_text() == "x\n1\n"
    assert (tmp_path / "out" / "case" / "data" / "two\nlines.csv").read_text() == "y\n2\n"
    assert (tmp_path / "out" / "case" / "data" / "inner").is_symlink()
    with pytest.raises(JunoBenchError, match="leaves the task's workspace"):
        survey([Place(str(folder), "../elsewhere")])
    with pytest.raises(TooLarge, match="more than the 4 B"):
        ship(survey([Place(str(folder), "case")]), put=lambda data: data, limit=4)
    (folder / "data" / "outside").symlink_to("/etc/passwd")
    with pytest.raises(JunoBenchError, match="a link out of the folder"):  # the check a local copy makes
        survey([Place(str(folder), "case")])
    hostile = io.BytesIO()  # a stream that did not come from ship(): refused on the worker
    with tarfile.open(fileobj=hostile, mode="w") as bundle:
        link = tarfile.TarInfo("case/passwd")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        bundle.addfile(link)
    with pytest.raises(JunoBenchError, match="archive member refused"):
        receive([hostile.getvalue()], Workspace(tmp_path / "out2", "."), tmp_path / "out2", get=lambda data: data)


def test_a_driver_that_stops_answering_is_stopped_and_its_replays_lost(ray_cluster, tmp_path, monkeypatch):
    from junobench.verify import ray_executor

    monkeypatch.setattr(ray_executor, "SILENCE", 8.0)
    marker = tmp_path / "kernel.pid"
    task = one_cell_task(tmp_path / "case", f"import os, pathlib, time\npathlib.Path({str(marker)!r})"
                         ".write_text(str(os.getpid()))\ntime.sleep(120)")

    async def main():
        async with RayExecutor(retries=0, sandbox=UNCONFINED) as executor:
            run = asyncio.ensure_future(executor.run(task))
            kernel = int(await asyncio.to_thread(wait_for, marker, run))
            os.kill(executor.driver_pid, signal.SIGSTOP)  # its event loop says nothing more
            return await run, executor, kernel

    outcome, executor, kernel = run_sync(main())
    assert not outcome.ok and "stopped answering" in outcome.error
    assert executor.stopped.startswith("the Ray cluster was lost: the Ray driver stopped answering")
    assert gone(kernel, 60), "the lost replay's kernel was left running"
    assert executor.log.exists() and str(executor.log) in outcome.error  # kept: it says what went wrong
    executor.log.unlink()


def test_a_worker_sweeps_the_folders_of_dead_workers_only(tmp_path):
    import subprocess

    from junobench.verify.ray_worker import PREFIX, _started, sweep

    ended = subprocess.Popen(["true"])
    ended.wait()
    dead = tmp_path / f"{PREFIX}{ended.pid}-{_started(os.getpid())}"
    reused = tmp_path / f"{PREFIX}{os.getppid()}-1"  # a live pid, but another process's start time
    living = tmp_path / f"{PREFIX}{os.getppid()}-{_started(os.getppid())}"
    for folder in (dead, reused, living):
        (folder / "runtime").mkdir(parents=True)
        (folder / "runtime" / "kernel-1.json").write_text('{"key": "secret"}')
    assert sorted(sweep(tmp_path)) == sorted([dead, reused])
    assert [p.name for p in tmp_path.iterdir()] == [living.name]


def test_the_folders_of_killed_workers_go_once_the_workers_have_ended(tmp_path):
    import socket
    import subprocess

    from junobench.verify.ray_worker import PREFIX, _started, sweep, sweep_after

    def worker(seconds: float) -> tuple[subprocess.Popen, Path]:
        process = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
        folder = tmp_path / f"{PREFIX}{process.pid}-{_started(process.pid)}"
        (folder / "runtime").mkdir(parents=True)
        return process, folder

    ending, ending_folder = worker(0.5)  # still ending when the sweep is asked for
    killed, killed_folder = worker(60)
    killed.kill()
    os.waitid(os.P_PID, killed.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: a zombie is no worker
    places = [f"{socket.gethostname()}:{ending.pid}", f"{socket.gethostname()}:{killed.pid}"]
    assert sweep(tmp_path) == [killed_folder]
    assert sweep_after(places, base=tmp_path) == [ending_folder]
    assert ending.poll() == 0 and not list(tmp_path.iterdir())
    killed.wait()


def test_waiting_for_a_free_cpu_is_not_a_fault(ray_cluster, tmp_path):
    # Another job holds every CPU of the cluster for longer than an attempt's deadline: the
    # replay waits for its worker to be placed, then runs once, within its deadline.
    @ray_cluster.remote(num_cpus=ray_cluster.cluster_resources()["CPU"])
    class Holder:
        def ready(self) -> bool:
            return True

    holder = Holder.remote()
    ray_cluster.get(holder.ready.remote())

    async def main():
        # the deadline: what a kernel's start and one cell take on a loaded machine (load 16
        # on 2 cores took more than 4 s), below the time the replay waits to be placed
        async with RayExecutor(retries=0, deadline=12, jobs=1, sandbox=UNCONFINED) as executor:
            run = asyncio.ensure_future(executor.run(one_cell_task(tmp_path / "case", "1 + 1")))
            await asyncio.sleep(15)  # past the deadline, the worker still unplaced
            assert not run.done()
            ray_cluster.kill(holder)
            return await run

    outcome = run_sync(main())
    assert outcome.ok and outcome.attempts == 1 and not outcome.faults, outcome
