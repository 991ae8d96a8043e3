#!/usr/bin/env python3
"""Benchmark ``junobench detect``: request throughput against an endpoint of known speed.

Starts the tests' OpenAI-compatible server (``tests/chat_server.py``) in its own process,
answering every request after a fixed ``--delay``, and runs ``detect`` over the reference
snapshot's tasks (or ``--source``'s) with ``--concurrency`` requests in flight. A perfect
runner finishes ``concurrency / delay`` requests per second; the script prints the
measured throughput and its ratio to that bound (the goal is at least 0.9), for each
concurrency given. One run measures everything; numbers depend on what else the machine
is doing, so report them with that caveat.

    python scripts/benchmark_detect.py [--source ../shared/reference/junobench-snapshot]
        [--delay 1.0] [--concurrency 8 32] [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reference import reference_dir  # noqa: E402

from junobench.detection.detect import detect  # noqa: E402
from junobench.detection.tasks import tasks  # noqa: E402


def serve(delay: float) -> tuple[subprocess.Popen[str], str]:
    """The test server in a child process (so it does not share this one's GIL) and its URL."""
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "chat_server.py"),
                               "--delay", str(delay)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    if not url.startswith("http://"):
        server.kill()
        raise SystemExit(f"the test server did not start (printed {url!r})")
    return server, url


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=str(reference_dir() / "junobench-snapshot"))
    parser.add_argument("--delay", type=float, default=1.0,
                        help="seconds per answer (default 1: a short LLM answer)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    source = args.source if Path(args.source).exists() else "sample"
    items, _ = tasks(source)
    server, url = serve(args.delay)
    print(f"{len(items)} tasks from {source}, {args.runs} runs each, server answers after "
          f"{args.delay:.3f} s")
    print(f"{'concurrency':>11}  {'requests':>8}  {'seconds':>8}  {'req/s':>8}  "
          f"{'bound':>8}  {'ratio':>6}  {'client CPU s':>12}")
    try:
        for concurrency in args.concurrency:
            with tempfile.TemporaryDirectory() as work:
                out = Path(work) / "pred.jsonl"
                cpu = _cpu()
                started = time.perf_counter()
                summary = detect(items, out, endpoint=url, model="bench", runs=args.runs,
                                 concurrency=concurrency, progress=False)
                elapsed = time.perf_counter() - started
                cpu = _cpu() - cpu
            if not summary.complete or len(summary.written) != len(items):
                raise SystemExit(f"concurrency {concurrency}: not every task was answered")
            requests = len(items) * args.runs
            rate, bound = requests / elapsed, concurrency / args.delay
            print(f"{concurrency:>11}  {requests:>8}  {elapsed:>8.2f}  {rate:>8.1f}  "
                  f"{bound:>8.1f}  {rate / bound:>6.3f}  {cpu:>12.2f}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
