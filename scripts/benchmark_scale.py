#!/usr/bin/env python3
"""Benchmark the executors: the same notebooks on local kernels and on a local Ray instance.

Two sets of notebooks, each run with the local executor and with the Ray executor at the
same parallelism (``--jobs``, default 2; Ray started here with that many CPUs):

- ``compute``: ``--notebooks`` notebooks whose one cell keeps a CPU busy for
  ``--seconds`` (default 2 s: the goal's notebooks of >= 2 s);
- ``sample``: the bundled sample's reproduced and fixed notebooks (about 1 s each, most of
  it kernel start-up), as verify replays them.

For each executor, one executor runs the set ``1 + --repeat`` times: the first run starts
the executor's workers and kernels (Ray's worker processes, the kernels started ahead),
the next ones run as in the middle of a long run. It prints both, and the ratio Ray /
local of the median of the next runs (goal for the compute set: <= 1.15); Ray's own
start-up is timed apart. Then, from the measured per-notebook times
(or from a verify report of the whole benchmark, ``--report FILE``) and the measured Ray
overhead per notebook, the projected wall time of the benchmark's 222 notebooks at each
worker count of ``--workers`` (longest first onto the least loaded worker).

    python scripts/benchmark_scale.py [--jobs 2] [--notebooks 8] [--seconds 2] [--repeat 3]
                                      [--workers 2,8,32,128] [--report verify-report.json]

With ``--big SIZE`` (e.g. ``2GiB``; ``0`` skips it), one more run measures memory: a case
whose data file has that size (a sparse file in a temporary folder, read through by the
notebook) replayed on a Ray instance the executor starts itself; it prints the peak
resident memory of the Ray driver process, of its worker (each as its own pages plus what
it shares: Ray's object store is shared memory) and of this process against the file's
size (goal: each one's own well under 2x).

Numbers depend on what else the machine is doing; report them with that caveat.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from junobench.data.notebook import Step
from junobench.data.snapshot import sample_path
from junobench.verify import make_executor
from junobench.verify.executor import Place, ReplayOutcome, ReplayTask
from junobench.verify.runner import run_sync
from junobench.verify.spec import case_specs

GOAL = 1.15
BENCHMARK_NOTEBOOKS = 222
#: Bytes of the object store of the memory run's Ray instance (what a chunked case fills first, then spills).
STORE = 300 << 20


def compute_tasks(folder: Path, count: int, seconds: float) -> list[ReplayTask]:
    """``count`` notebooks that each keep one CPU busy for ``seconds``."""
    import nbformat

    source = ("import time\nstart = time.perf_counter()\n"
              f"while time.perf_counter() - start < {seconds!r}:\n    pass")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbformat.write(notebook, folder / "busy.ipynb")
    return [ReplayTask(f"busy{i}", "case/busy.ipynb", (Step(0, 1),), "case", (Place(str(folder), "case"),),
                       timeout=600) for i in range(count)]


def sample_tasks() -> list[ReplayTask]:
    """The sample's reproduced and fixed notebooks, as verify replays them."""
    tasks = []
    for spec in case_specs(sample_path()):
        for version in ("reproduced", "fixed"):
            tasks.append(ReplayTask(f"{spec.case_id}_{version}", f"{spec.case_id}/{spec.case_id}_{version}.ipynb",
                                    spec.orders[version], spec.case_id, (Place(str(spec.folder), spec.case_id),),
                                    timeout=600, case=spec.case_id))
    return tasks


def batches(name: str, jobs: int, tasks: Sequence[ReplayTask], repeat: int) -> tuple[list[float], list[float]]:
    """Wall times of ``1 + repeat`` runs of ``tasks`` through one executor (the first with
    its workers and kernels still to start, the others as in the middle of a long run), and
    the per-notebook replay times of the last run."""

    async def main() -> tuple[list[float], list[ReplayOutcome]]:
        executor = make_executor(name, jobs=jobs)
        executor.expect(len(tasks) * (repeat + 1))
        walls: list[float] = []
        outcomes: list[ReplayOutcome] = []
        async with executor:
            for _ in range(repeat + 1):
                started = time.perf_counter()
                outcomes = list(await asyncio.gather(*(executor.run(task) for task in tasks)))
                walls.append(time.perf_counter() - started)
        broken = [o.task.key for o in outcomes if o.error or o.log.failure]
        if broken:
            raise SystemExit(f"{name}: replays failed: {', '.join(broken)}")
        return walls, outcomes

    walls, outcomes = run_sync(main())
    return walls, [o.log.seconds for o in outcomes]


def compare(label: str, jobs: int, tasks: Sequence[ReplayTask], repeat: int) -> dict[str, float | list[float]]:
    """Both executors on ``tasks``: the first run and the median of the next ``repeat``."""
    local, per_notebook = batches("local", jobs, tasks, repeat)
    ray, _ = batches("ray", jobs, tasks, repeat)
    warm_local, warm_ray = statistics.median(local[1:]), statistics.median(ray[1:])
    overhead = max(0.0, (warm_ray - warm_local) * jobs / len(tasks))
    print(f"{label}: {len(tasks)} notebooks (median {statistics.median(per_notebook):.2f} s each), "
          f"{jobs} at a time")
    print(f"  first run (workers and kernels start)   local {local[0]:7.2f} s   ray {ray[0]:7.2f} s   "
          f"ratio {ray[0] / local[0]:.3f}")
    print(f"  next {repeat} runs, median                  local {warm_local:7.2f} s   ray {warm_ray:7.2f} s   "
          f"ratio {warm_ray / warm_local:.3f}")
    print(f"    local {', '.join(f'{w:.2f}' for w in local[1:])}; ray {', '.join(f'{w:.2f}' for w in ray[1:])}; "
          f"Ray overhead {overhead:.3f} s per notebook")
    return {"local": warm_local, "ray": warm_ray, "ratio": warm_ray / warm_local, "first": ray[0] / local[0],
            "overhead": overhead, "times": per_notebook}


def makespan(times: Sequence[float], workers: int, overhead: float) -> float:
    """Wall time of ``times`` on ``workers``, longest first onto the least loaded."""
    loads = [0.0] * workers
    for seconds in sorted(times, reverse=True):
        heapq.heapreplace(loads, loads[0] + seconds + overhead)
    return max(loads)


def benchmark_times(report: Path | None, measured: Sequence[float]) -> tuple[list[float], str]:
    """Per-notebook seconds of the whole benchmark: from a verify report (each case's two
    notebooks split its seconds evenly), else the measured times repeated to 222 notebooks."""
    if report is not None:
        cases = json.loads(report.read_text())
        times = [float(case["seconds"]) / 2 for case in cases.values() for _ in range(2)
                 if case.get("status") != "skipped"]
        return times, f"{len(times)} notebooks of {report}"
    times = [measured[i % len(measured)] for i in range(BENCHMARK_NOTEBOOKS)]
    return times, f"{BENCHMARK_NOTEBOOKS} notebooks at the sample's measured times"


def _memory(pid: int) -> tuple[int, int]:
    """Resident memory of process ``pid`` now (bytes; Linux ``smaps_rollup``): its own
    (private pages) and what it shares (Ray's object store is shared memory, mapped by
    every process that reads or writes it); (0, 0) when it is gone."""
    fields: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[name] = int(rest.split()[0]) * 1024
    except OSError:
        return 0, 0
    own = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return own, fields.get("Shared_Clean", 0) + fields.get("Shared_Dirty", 0)


def _worker_of(driver: int) -> int | None:
    """The long-lived Ray worker below ``driver`` (the instance it started), if it runs."""
    from junobench.verify.lifeline import command_line, descendants

    return next((pid for pid in descendants(driver) if "ReplayWorker" in command_line(pid)), None)


def big_file(size: int) -> dict[str, float]:
    """One replay of a case holding a ``size``-byte data file on a Ray instance of its own;
    the peak memory of the Ray driver and of this process, in bytes."""
    import resource
    import threading

    import nbformat

    from junobench.verify.ray_executor import RayExecutor

    with tempfile.TemporaryDirectory(prefix="junobench-big-") as folder:
        case = Path(folder) / "case"
        (case / "data").mkdir(parents=True)
        with open(case / "data" / "big.bin", "wb") as out:
            out.truncate(size)  # sparse: no disk, no memory, here
        source = ("import os\nsize = 0\nwith open('data/big.bin', 'rb') as f:\n"
                  "    while chunk := f.read(1 << 24):\n        size += len(chunk)\n"
                  f"assert size == os.path.getsize('data/big.bin') == {size}")
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), case / "nb.ipynb")
        task = ReplayTask("big", "case/nb.ipynb", (Step(0, 1),), "case", (Place(str(case), "case"),), timeout=600)
        peaks = {"driver": 0, "driver shared": 0, "worker": 0, "worker shared": 0}

        def look(driver: int) -> None:
            for name, pid in (("driver", driver), ("worker", _worker_of(driver))):
                own, shared = _memory(pid) if pid is not None else (0, 0)
                peaks[name] = max(peaks[name], own)
                peaks[f"{name} shared"] = max(peaks[f"{name} shared"], shared)

        async def run() -> ReplayOutcome:
            executor = RayExecutor(jobs=1, init_options={"num_cpus": 1, "include_dashboard": False,
                                                         "object_store_memory": STORE})
            async with executor:
                stop = threading.Event()
                pid = executor.driver_pid
                assert pid is not None

                def watch() -> None:
                    while not stop.wait(0.2):
                        look(pid)

                watcher = threading.Thread(target=watch)
                watcher.start()
                try:
                    return await executor.run(task)
                finally:
                    look(pid)
                    stop.set()
                    watcher.join()

        started = time.perf_counter()
        outcome = run_sync(run())
        seconds = time.perf_counter() - started
    if outcome.error or outcome.log.failure or outcome.log.steps[-1].status != "ok":
        raise SystemExit(f"the big-file replay failed: {outcome.error or outcome.log}")
    this = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {**peaks, "this": this, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--notebooks", type=int, default=8, help="compute notebooks")
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds of each compute notebook")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default="2,8,32,128", help="worker counts to project for")
    parser.add_argument("--report", type=Path, help="a verify --report of the benchmark (per-case seconds)")
    parser.add_argument("--big", default="2GiB", help="size of the data file of the memory run (0: skip it)")
    parser.add_argument("--only-big", action="store_true", help="run the memory run only")
    args = parser.parse_args(argv)
    from junobench.cli.common import parse_size

    big = parse_size(args.big) if args.big not in ("0", "") else 0
    if big:
        memory = big_file(big)
        mib = 1 << 20
        print(f"memory: one case with a {big / (1 << 30):.3g} GiB data file on Ray ({memory['seconds']:.1f} s), "
              f"peaks, own + shared (the object store, {STORE / mib:.0f} MiB): "
              f"the Ray driver {memory['driver'] / mib:.0f} + {memory['driver shared'] / mib:.0f} MiB "
              f"({memory['driver'] / big:.3f}x the file, own), its worker {memory['worker'] / mib:.0f} + "
              f"{memory['worker shared'] / mib:.0f} MiB ({memory['worker'] / big:.3f}x), this process "
              f"{memory['this'] / mib:.0f} MiB ({memory['this'] / big:.3f}x); goal: each own well under 2x")
    if args.only_big:
        return 0
    workers = [int(w) for w in args.workers.split(",") if w.strip()]

    import ray

    started = time.perf_counter()
    ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False, logging_level="warning",
             object_store_memory=200 * 1024 * 1024)
    print(f"Ray start-up (local instance, {args.jobs} CPUs): {time.perf_counter() - started:.2f} s, not counted below")
    try:
        with tempfile.TemporaryDirectory(prefix="junobench-bench-") as folder:
            compute = compare(f"compute ({args.seconds:g} s of CPU each)", args.jobs,
                              compute_tasks(Path(folder), args.notebooks, args.seconds), args.repeat)
        sample = compare("sample (verify's replays)", args.jobs, sample_tasks(), args.repeat)
    finally:
        ray.shutdown()
    ratio = float(compute["ratio"])  # type: ignore[arg-type]
    print(f"goal: Ray <= {GOAL}x local at {args.jobs} workers for notebooks of >= 2 s: "
          f"{'met' if ratio <= GOAL else 'NOT met'} ({ratio:.3f}x)")

    times, what = benchmark_times(args.report, sample["times"])  # type: ignore[arg-type]
    overhead = float(sample["overhead"])  # type: ignore[arg-type]
    print(f"projected wall time, {what} (total {sum(times):.0f} s of kernel time, "
          f"+{overhead:.3f} s Ray overhead per notebook):")
    for count in workers:
        print(f"  {count:4d} workers  {makespan(times, count, overhead):9.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
