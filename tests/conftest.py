"""Shared fixtures: the reference data (real published tables, labels and LLM outputs).

It is found at ``$JUNOBENCH_REFERENCE`` when that is set, else at ``../shared/reference``
beside the checkout. When it is absent, the tests that need it are skipped, all with one
reason, which pytest's summary shows once, on one line, with their count; with
``JUNOBENCH_REQUIRE_REFERENCE=1`` (set by CI) its absence is a failure instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from junobench.data.tables import read_table, write_table

# Property tests do not depend on the machine's speed: no per-example deadline and no
# health check on how long generating the examples takes (a loaded machine trips both);
# a failure is a wrong answer, never a slow one.
settings.register_profile("junobench", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("junobench")

# The suite stops the processes it starts with SIGINT and SIGHUP, which a process inherits
# ignored from a suite run in the background (a shell's `&` ignores SIGINT) or under nohup
# (SIGHUP): they get their usual meaning back here, however the suite was started. (Tests
# of a verb run as a background job ignore them in that verb's process on purpose.)
for _signum in (signal.SIGINT, signal.SIGHUP):
    if signal.getsignal(_signum) is signal.SIG_IGN:
        signal.signal(_signum, signal.default_int_handler if _signum == signal.SIGINT else signal.SIG_DFL)

REPO = Path(__file__).resolve().parent.parent
# The scripts' folder, where scripts (and tests loading them) find their shared helpers,
# among them where the reference data is (one rule for tests and scripts).
sys.path.insert(0, str(REPO / "scripts"))

from reference import reference_dir  # noqa: E402

REFERENCE = reference_dir()
HOW_TO_GET_IT = ("set JUNOBENCH_REFERENCE to the reference folder, or put it at ../shared/reference "
                 "beside the checkout (see docs/development.md)")


class ReferenceMissing(pytest.skip.Exception):
    """The skip of a test that needs the reference data, which is absent."""


def _require(path: Path) -> Path:
    if path.exists():
        return path
    message = f"reference data not found at {path}: {HOW_TO_GET_IT}"
    if os.environ.get("JUNOBENCH_REQUIRE_REFERENCE") == "1":
        pytest.fail(message)
    raise ReferenceMissing(message)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Every skip for want of the reference data is reported at one place with one reason,
    so that pytest's summary folds them into a single line with their count."""
    report = yield
    if report.skipped and call.excinfo is not None and call.excinfo.errisinstance(ReferenceMissing):
        report.longrepr = (__file__, _require.__code__.co_firstlineno, str(call.excinfo.value))
    return report


#: The test modules that start Ray (a test marked ``ray``; every ``ray_cluster`` user is).
#: ``make test``'s workers run them one after the other on one worker, which shares one Ray
#: instance between them: two Ray instances at once on two cores slow each other's runs
#: two- to threefold. As that one worker's run bounds the suite's, a Ray module holds Ray
#: tests and little else (a local test beside a Ray one goes in another module, which
#: runs on the other workers). Collection fails when a module that starts Ray is missing here.
RAY_MODULES = frozenset({
    "tests/test_construct_reproduce_ray.py", "tests/test_containment_ray.py", "tests/test_executor.py",
    "tests/test_hostile_probes_ray.py", "tests/test_mine_ray.py", "tests/test_ray_faults.py",
    "tests/test_ray_joined.py", "tests/test_ray_stopped.py", "tests/test_ray_stops.py", "tests/test_verify_ray.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test on a local Ray cluster is slow and marked ``ray`` (one Ray instance shared,
    workers per run); a module with a ``ray`` test must be one of :data:`RAY_MODULES`."""
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.ray)
    unlisted = {_module(item.nodeid) for item in items if item.get_closest_marker("ray")} - RAY_MODULES
    if unlisted:
        raise pytest.UsageError(f"{', '.join(sorted(unlisted))} start(s) Ray: add it to RAY_MODULES in "
                                "tests/conftest.py, so that make test runs it after the other Ray modules")


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, when it is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` as ``make test`` runs it: each module whole on one worker (its
    module fixtures made once), and the :data:`RAY_MODULES` together, as one unit, given out
    first (the longest unit), then the modules of :data:`FIRST_MODULES`, then the others."""
    if config.getvalue("dist") != "loadfile":
        return None
    from collections import OrderedDict

    from xdist.scheduler import LoadScopeScheduling

    class Queue(OrderedDict):
        def popitem(self, last: bool = True) -> tuple[str, dict[str, bool]]:  # how xdist takes the next unit
            for scope in ("ray", *FIRST_MODULES):
                if scope in self:
                    return scope, self.pop(scope)
            return super().popitem(last)

    class ModulesAndRay(LoadScopeScheduling):
        def __init__(self, config: pytest.Config, log: object) -> None:
            super().__init__(config, log)
            self.workqueue = Queue()

        def _split_scope(self, nodeid: str) -> str:
            module = _module(nodeid)
            return "ray" if module in RAY_MODULES else module

    return ModulesAndRay(config, log)


#: Modules given out right after the Ray unit: those that make a result a Ray test waits for
#: (:func:`shared_run`), so that it is ready, or nearly, when the Ray worker asks.
FIRST_MODULES = ("tests/test_mine_execute.py",)


@pytest.fixture(autouse=True)
def _notes_logged_again() -> None:
    """Each test sees the notes of the records it loads: a process logs each note once
    (junobench.loader), and the tests share their worker process."""
    from junobench import loader

    loader._LOGGED.clear()


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The reference data folder (read-only test data)."""
    return _require(REFERENCE)


@pytest.fixture(scope="session")
def reference_snapshot(reference_dir: Path) -> Path:
    """The reference snapshot: 111 real cases with reconstructed notebooks, no input data."""
    return _require(reference_dir / "junobench-snapshot")


@pytest.fixture(scope="session")
def qwen(reference_dir: Path) -> Path:
    """Published runs of the CRANE-LLM paper's Qwen2.5-Coder-32B-Instruct, code only:
    a folder of ``<instance>.json`` files, 5 runs each (Table 2(b))."""
    return _require(reference_dir / "llm_outputs" / "qwen_2_5_32b_instruct" / "code")


@pytest.fixture(scope="session")
def mistral(reference_dir: Path) -> Path:
    """Published runs of the JunoBench paper's mistral-small3.1: ``buggy/`` and ``fixed/``
    folders of ``<case>.json``, 108 cases."""
    return _require(reference_dir / "llm_outputs" / "mistral_small_3_1")


@pytest.fixture(scope="session")
def crane_llm_dir(reference_dir: Path) -> Path:
    """CRANE-LLM's published files (results/, llms/llms_inputs and llms_outputs/, sas/)."""
    return _require(reference_dir / "crane_llm")


@pytest.fixture(scope="session")
def crane_summary(crane_llm_dir: Path) -> Path:
    """CRANE-LLM's results/results_summary.xlsx: the final human judgments per notebook
    and setting (sheet Final_evaluation) and the paper's tables computed from them."""
    return _require(crane_llm_dir / "results" / "results_summary.xlsx")


@pytest.fixture
def snapshot_copy(reference_snapshot: Path, tmp_path: Path) -> Path:
    """A writable copy of the reference snapshot, for tests that break or edit it."""
    target = tmp_path / "snapshot"
    shutil.copytree(reference_snapshot, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


@pytest.fixture
def labelled_snapshot(snapshot_copy, reference_dir):
    """The reference snapshot whose table also has the labelling sheet's source and
    Dataset_note columns (as the bundled sample's and a rebuilt snapshot's do)."""
    desc_path = snapshot_copy / "benchmark_desc.xlsx"
    desc = read_table(desc_path)
    labels = {r["nb_name"]: r for r in read_table(reference_dir / "benchmark_labels.xlsx").records()}
    rows = [r | {"source": labels[r["nb_name"]]["source"],
                 "Dataset_note": labels[r["nb_name"]]["Dataset_note"]} for r in desc.records()]
    write_table(desc_path, rows, [*desc.columns, "source", "Dataset_note"])
    return snapshot_copy


@pytest.fixture
def ray_cluster(_ray_instance, request):
    """The session's Ray instance (:func:`_ray_instance`) once every CPU of it is free again:
    the workers of an earlier test end a moment after its run, and a test that runs ``jobs``
    notebooks at once needs as many CPUs (a wait on the cluster's state, not a clock; a
    warning names what held them when the wait was long)."""
    ray = _ray_instance
    started = time.monotonic()
    while ray.available_resources().get("CPU", 0) < ray.cluster_resources().get("CPU", 0):
        time.sleep(0.1)
    waited = time.monotonic() - started
    if waited > 5:
        try:
            held = [(a.get("ActorClassName"), a.get("State")) for a in ray._private.state.actors().values()
                    if a.get("State") != "DEAD"]
        except Exception as error:  # Ray's private state API: a name only, for the warning
            held = [f"(actors unknown: {error})"]
        warnings.warn(f"{request.node.nodeid} waited {waited:.0f} s for the Ray cluster's CPUs, held by {held}",
                      stacklevel=1)
    return ray


@pytest.fixture(scope="session")
def _ray_instance():
    """One local Ray instance (2 CPUs, a small object store) for the Ray modules, which
    ``make test`` runs one after the other on one worker: started by the first test that
    asks for it, stopped at the end of the session (a start costs ~5 s and ~8 CPU-s);
    executors in tests join it (their driver process connects to it). Tests that break a
    Ray instance start their own (tests/test_ray_faults.py)."""
    ray = pytest.importorskip("ray", reason="the Ray executor needs the ray extra")
    if not ray.is_initialized():
        # The tests' stand-in Hub speaks the LFS protocol only: workers use the client's switch.
        ray.init(num_cpus=2, object_store_memory=100 * 1024 * 1024, include_dashboard=False,
                 log_to_driver=False, logging_level="warning",
                 runtime_env={"env_vars": {"HF_HUB_DISABLE_XET": "1"}})
    session = ray._private.worker._global_node.get_session_dir_path()
    yield ray
    ray.shutdown()
    from junobench.verify.ray_executor import remove_session

    remove_session(session)  # as junobench does for the instances it starts


#: Where the test suite keeps the pinned environments it makes: outside the per-run caches,
#: so repeated runs (and other checkouts) reuse them; keyed on their requirement set.
TEST_ENVS = Path(os.environ.get("JUNOBENCH_TEST_ENVS", Path.home() / ".cache" / "junobench-test-envs"))


def shared_environment(name: str, source: str | Path = "sample", **kwargs):
    """Make (or reuse) an environment under :data:`TEST_ENVS`, one process at a time."""
    from filelock import FileLock

    from junobench.envs.create import create_environment, selection_key
    from junobench.selection import select

    TEST_ENVS.mkdir(parents=True, exist_ok=True)
    selection = select(source, kwargs.pop("case_ids", None), filters=kwargs.pop("filters", None))
    key = selection_key(selection, kwargs.get("python") or selection.environment.python)
    with FileLock(str(TEST_ENVS / f"{name}-{key}.lock")):
        return create_environment(TEST_ENVS / f"{name}-{key}", selection, **kwargs)


def shared_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``make`` fills, made once per test run however many workers ask for it:
    the first to ask makes it (under a lock, in the run's temporary folder that every
    pytest-xdist worker shares), the others wait for it and reuse it. A test on the Ray
    worker can so compare with a local run that another worker made meanwhile."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def sample_env():
    """The bundled sample's pinned environment (numpy 1.26.4, pandas 2.1.4, …), made once."""
    return shared_environment("sample")


@pytest.fixture(scope="session")
def sample_mined_rerun(tmp_path_factory, sample_env) -> Path:
    """What ``junobench mine sample --rerun`` writes, every notebook run on local kernels in
    the sample's pinned environment: made once per test run (:func:`shared_run`)."""
    from junobench.cli import main

    def make(folder: Path) -> None:
        code = main(["mine", "sample", "--rerun", "--env", str(sample_env.path), "--no-progress",
                     "--timeout", "120", "--out", str(folder / "mined")])
        assert code == 0, "mine sample --rerun failed"

    return shared_run(tmp_path_factory, "sample-mined-rerun", make) / "mined"
