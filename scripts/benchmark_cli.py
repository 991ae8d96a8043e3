"""Benchmark: how long the light verbs take, start to end, as a user runs them.

In one run, each command is run ``--repeat`` times as a new process (the median is
printed), with the records cache warm (one ``ls`` first):

- ``junobench --version`` (target: under 0.3 s);
- ``junobench ls --source sample``, the records read from the prepared Arrow files without
  importing datasets (target: under 1 s);
- for comparison, ``junobench show pandas_1 --source sample``, which loads the same records
  through datasets, and a bare ``python -c "import datasets"``.

Prints the medians and the ratios of ``ls`` to the two comparisons. Usage::

    python scripts/benchmark_cli.py [--repeat 7] [--cache DIR]

``--cache`` (default: a new temporary folder) is the records cache (``JUNOBENCH_CACHE``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def command() -> list[str]:
    """The ``junobench`` console script beside this interpreter, else ``python -m junobench``."""
    script = Path(sys.executable).parent / "junobench"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "junobench"]


def median_seconds(argv: list[str], repeat: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cache", type=Path, default=None, help="records cache (default: a new temporary one)")
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="junobench-benchmark-cli-"))
    env = {**os.environ, "JUNOBENCH_CACHE": str(cache)}
    junobench = command()
    try:
        subprocess.run([*junobench, "ls", "--source", "sample"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warms the cache
        subprocess.run([*junobench, "show", "pandas_1", "--source", "sample"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        version = median_seconds([*junobench, "--version"], args.repeat, env)
        ls = median_seconds([*junobench, "ls", "--source", "sample"], args.repeat, env)
        show = median_seconds([*junobench, "show", "pandas_1", "--source", "sample"], args.repeat, env)
        bare = median_seconds([sys.executable, "-c", "import datasets"], args.repeat, env)
    finally:
        if args.cache is None:
            shutil.rmtree(cache, ignore_errors=True)
    print(f"median of {args.repeat} runs each, {os.cpu_count()} cores, warm records cache")
    print(f"junobench --version                     {version:6.3f} s   (target < 0.3 s)")
    print(f"junobench ls --source sample            {ls:6.3f} s   (target < 1 s)")
    print(f"junobench show pandas_1 (via datasets)  {show:6.3f} s   {show / ls:.1f}x the time of ls")
    print(f"python -c 'import datasets'             {bare:6.3f} s   ls takes {ls / bare:.2f}x its time")


if __name__ == "__main__":
    main()
