#!/usr/bin/env python3
"""Benchmark ``junobench verify`` on the bundled sample, in its pinned environment, and
``junobench env create``; every figure from this one run.

Prints, for 1 and 2 jobs, with kernels started ahead (the default pool of ``jobs + 1`` kernels) and
without (each kernel started when its notebook's turn comes): the wall time and the
share of wall time spent waiting for a kernel (the sum of the waits over jobs × wall
time; goal with the pool: <= 10%); the speed-up of 2 jobs over 1 (target >= 1.6 on 2
free cores); and the time ``env create`` takes cold (an empty uv cache: every wheel
downloaded), cached (a new folder, uv's cache warm) and reused (the same selection in
the same folder). A warm-up run first brings the libraries into the file cache. Then the
cost of the sandbox: 2 jobs with the pool, sandboxed (bubblewrap) and unsandboxed
(``--sandbox none``), alternated three times each, the best of each compared (target:
sandboxed <= 1.10x unsandboxed; the waiting share sandboxed <= 10%). Numbers depend on what
else the machine is doing; report them with that caveat. ``--sandbox-only`` (with
``--env``) runs only that comparison.

    python scripts/benchmark_verify.py [--source sample] [--env DIR] [--timeout 600] [--sandbox-only]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from junobench.envs.create import create_environment
from junobench.envs.kernel import env_kernel
from junobench.envs.sandbox import Sandbox
from junobench.selection import select
from junobench.verify import VerifyReport, case_specs, verify_specs

SHARE_GOAL = 0.10
SPEEDUP_TARGET = 1.6
SANDBOX_TARGET = 1.10


def waiting_share(report: VerifyReport) -> float:
    """Share of the jobs' wall time spent waiting for a kernel."""
    waits = sum(log.kernel_seconds for case in report for log in case.logs.values())
    return waits / (report.seconds * report.jobs) if report.seconds else 0.0


def run(specs: list, target, jobs: int, pool: int, timeout: float, sandbox: Sandbox | None = None) -> VerifyReport:
    report = verify_specs(specs, jobs=jobs, timeout=timeout, progress=False, target=target, pool=pool,
                          sandbox=(sandbox or Sandbox()).resolved())
    if not report.ok:
        failed = [f"{c.case_id}: {c.reproduced.reason} / {c.fixed.reason}" for c in report if not c.passed]
        raise SystemExit(f"verify did not pass (jobs {jobs}, pool {pool}): {'; '.join(failed)}")
    return report


def timed_create(dest: Path, selection) -> float:
    started = time.perf_counter()
    create_environment(dest, selection)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="sample")
    parser.add_argument("--env", type=Path, default=None,
                        help="the environment to verify in (default: made in a temporary folder)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--sandbox-only", action="store_true",
                        help="only the sandboxed / unsandboxed comparison (needs --env)")
    args = parser.parse_args(argv)
    if args.sandbox_only:
        if args.env is None:
            parser.error("--sandbox-only needs --env")
        target = env_kernel(args.env)
        specs = case_specs(_root(args.source))
        run(specs, target, 2, 3, args.timeout)  # warm-up, not timed
        sandbox_cost(specs, target, args.timeout)
        return 0

    with tempfile.TemporaryDirectory(prefix="junobench-bench-") as tmp:
        scratch = Path(tmp)
        selection = select(args.source)
        saved = os.environ.get("UV_CACHE_DIR")
        os.environ["UV_CACHE_DIR"] = str(scratch / "uv-cache")  # empty: every wheel downloaded
        try:
            cold = timed_create(scratch / "cold", selection)
        finally:
            if saved is None:
                os.environ.pop("UV_CACHE_DIR")
            else:
                os.environ["UV_CACHE_DIR"] = saved
        cached = timed_create(scratch / "cached", selection)
        reused = timed_create(scratch / "cached", selection)
        env_dir = args.env or scratch / "cached"

        target = env_kernel(env_dir)
        specs = case_specs(_root(args.source))
        run(specs, target, 2, 3, args.timeout)  # warm-up, not timed
        reports = {(jobs, pool): run(specs, target, jobs, pool, args.timeout)
                   for jobs in (1, 2) for pool in (0, jobs + 1)}

    notebooks = 2 * len(specs)
    print(f"verify --source {args.source} --env: {len(specs)} cases, {notebooks} notebooks, "
          f"interpreter {target.python}")
    for (jobs, pool), report in reports.items():
        share = waiting_share(report)
        goal = f"  (goal <= {SHARE_GOAL:.0%}: {'met' if share <= SHARE_GOAL else 'NOT met'})" if pool else ""
        print(f"  --jobs {jobs}, {'pool of ' + str(pool) if pool else 'no pool  '}  {report.seconds:7.2f} s   "
              f"waiting for a kernel {share:5.1%} of wall time{goal}")
    for pool_on in (False, True):
        one = reports[(1, 2 if pool_on else 0)].seconds
        two = reports[(2, 3 if pool_on else 0)].seconds
        print(f"  speed-up 2 jobs / 1 job ({'pool' if pool_on else 'no pool'}): {one / two:.2f}x "
              f"(target >= {SPEEDUP_TARGET})")
    print(f"env create ({len(selection.requirements)} requirements): cold {cold:.1f} s (empty uv cache), "
          f"cached {cached:.1f} s (new folder), reused {reused:.1f} s (same folder)")
    sandbox_cost(specs, target, args.timeout)
    return 0


def sandbox_cost(specs: list, target, timeout: float, rounds: int = 3) -> None:
    """Print verify's wall time sandboxed against unsandboxed (2 jobs, pool of 3), the load
    of the machine while it was measured, and how the sandbox applied its limits."""
    load_before = os.getloadavg()[0]
    times: dict[str, list[float]] = {"none": [], "bwrap": []}
    shares: dict[str, list[float]] = {"none": [], "bwrap": []}
    for _ in range(rounds):
        for kind in ("none", "bwrap"):
            report = run(specs, target, 2, 3, timeout, Sandbox(kind))
            times[kind].append(report.seconds)
            shares[kind].append(waiting_share(report))
    bare, boxed = min(times["none"]), min(times["bwrap"])
    share = min(shares["bwrap"])
    met = "met" if boxed / bare <= SANDBOX_TARGET else "NOT met"
    print(f"sandbox (--jobs 2, pool of 3, best of {rounds}): unsandboxed {bare:.2f} s, bubblewrap {boxed:.2f} s: "
          f"{boxed / bare:.2f}x (target <= {SANDBOX_TARGET:.2f}x: {met}); "
          f"waiting for a kernel {share:.1%} of wall time sandboxed (goal <= {SHARE_GOAL:.0%}: "
          f"{'met' if share <= SHARE_GOAL else 'NOT met'}; unsandboxed {min(shares['none']):.1%})")
    print(f"  every run, s: unsandboxed {', '.join(f'{t:.2f}' for t in times['none'])}; "
          f"bubblewrap {', '.join(f'{t:.2f}' for t in times['bwrap'])}")
    print(f"  load average (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, on "
          f"{os.cpu_count()} cores: with more load than cores the ratio is noise")
    for what, how in Sandbox("bwrap").resolved().enforcement().items():
        print(f"  {what}: {how}")


def _root(source: str) -> Path:
    from junobench.data.snapshot import resolve

    return resolve(source, include_data=True)


if __name__ == "__main__":
    sys.exit(main())
