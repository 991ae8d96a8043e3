#!/usr/bin/env python3
"""Benchmark ``junobench verify`` on the bundled sample, in its pinned environment, and
``junobench env create``; every figure from this one run.

Prints, for 1 and 2 jobs, with kernels started ahead (the default pool of ``jobs + 1`` kernels) and
without (each kernel started when its notebook's turn comes): the wall time and the
share of wall time spent waiting for a kernel (the sum of the waits over jobs × wall
time; goal with the pool: <= 10%); the speed-up of 2 jobs over 1 (target >= 1.6 on 2
free cores); and the time ``env create`` takes cold (an empty uv cache: every wheel
downloaded), cached (a new folder, uv's cache warm) and reused (the same selection in
the same folder). A warm-up run first brings the libraries into the file cache. Numbers
depend on what else the machine is doing; report them with that caveat.

    python scripts/benchmark_verify.py [--source sample] [--env DIR] [--timeout 600]
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
from junobench.selection import select
from junobench.verify import VerifyReport, case_specs
from junobench.verify.session import verify_specs

SHARE_GOAL = 0.10
SPEEDUP_TARGET = 1.6


def waiting_share(report: VerifyReport) -> float:
    """Share of the jobs' wall time spent waiting for a kernel."""
    waits = sum(log.kernel_seconds for case in report for log in case.logs.values())
    return waits / (report.seconds * report.jobs) if report.seconds else 0.0


def run(specs: list, target, jobs: int, pool: int, timeout: float) -> VerifyReport:
    report = verify_specs(specs, jobs=jobs, timeout=timeout, progress=False, target=target, pool=pool)
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
    args = parser.parse_args(argv)

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
    return 0


def _root(source: str) -> Path:
    from junobench.data.snapshot import resolve

    return resolve(source, include_data=True)


if __name__ == "__main__":
    sys.exit(main())
