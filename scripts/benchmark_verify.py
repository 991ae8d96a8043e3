#!/usr/bin/env python3
"""Benchmark ``junobench verify`` on the bundled sample: 1 job against 2 jobs, one run.

Prints the wall time of each, the speed-up (target: >= 1.6 on 2 free cores) and the
share of kernel time spent starting kernels. A short warm-up run first brings the
libraries into the file cache so that the first timed run is not penalised.
Numbers depend on what else the machine is doing; report them with that caveat.

    python scripts/benchmark_verify.py [--source sample] [--repeat 1] [--timeout 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from junobench.verify import VerifyReport, verify

TARGET = 1.6


def run(source: str, jobs: int, timeout: float) -> VerifyReport:
    report = verify(source=source, jobs=jobs, timeout=timeout, progress=False)
    if not report.ok:
        failed = [f"{c.case_id}: {c.status}" for c in report if not c.passed]
        raise SystemExit(f"verify did not pass with --jobs {jobs}: {'; '.join(failed)}")
    return report


def kernel_share(report: VerifyReport) -> tuple[float, float, float]:
    """(start-up seconds, kernel seconds, share) summed over every notebook."""
    logs = [log for case in report for log in case.logs.values()]
    startup = sum(log.kernel_seconds for log in logs)
    total = sum(log.seconds for log in logs)
    return startup, total, startup / total if total else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="sample")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per setting (median)")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)

    first = run(args.source, 2, args.timeout)  # warm-up, not timed
    cases = len(first)
    times: dict[int, list[float]] = {1: [], 2: []}
    reports: dict[int, VerifyReport] = {}
    for _ in range(args.repeat):
        for jobs in (1, 2):
            reports[jobs] = run(args.source, jobs, args.timeout)
            times[jobs].append(reports[jobs].seconds)
    one, two = statistics.median(times[1]), statistics.median(times[2])
    speedup = one / two
    startup, total, share = kernel_share(reports[1])
    print(f"verify --source {args.source}: {cases} cases, {2 * cases} notebooks, "
          f"median of {args.repeat} run(s)")
    print(f"  --jobs 1   {one:7.2f} s")
    print(f"  --jobs 2   {two:7.2f} s")
    print(f"  speed-up   {speedup:7.2f}x  (target >= {TARGET}: "
          f"{'met' if speedup >= TARGET else 'NOT met'})")
    print(f"  kernel start-up {startup:.2f} s of {total:.2f} s kernel time "
          f"({share:.0%}, --jobs 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
