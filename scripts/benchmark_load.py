"""Benchmark: loading an export's parquet against building the records from the raw snapshot.

In one run, for each size (default: the reference snapshot beside the checkout as it is,
then 10 and 100 renamed copies of its cases, made as ``benchmark_build.py`` makes them):

- raw build: ``cases`` + ``notebooks`` records from the snapshot, cold records cache
  (every notebook parsed), as ``junobench.load(snapshot)`` does the first time;
- ``junobench export`` of the snapshot (timed once, for information);
- stock ``datasets.load_dataset(EXPORT, config)`` of both configs, warm cache;
- a filtered stock load, ``filters=[("library", "==", "torch")]`` (pushed down), warm,
  against the raw build followed by the same filter;
- ``junobench.load(EXPORT)`` of both configs: the first load (which turns the parquet into
  an Arrow file in the cache) timed once, then warm loads (memory-mapped).

Each timing is the median of ``--repeat`` runs. Prints the times and the speed-ups.
Usage::

    python scripts/benchmark_load.py [--source DIR] [--replicas 1 10 100] [--repeat 3]

The raw build grows with the notebooks parsed; a warm ``load_dataset`` memory-maps its
cache and barely grows, so the speed-up grows with the benchmark's size.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from reference import reference_dir

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = reference_dir() / "junobench-snapshot"
CONFIGS = ("cases", "notebooks")
FILTER = [("library", "==", "torch")]


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(snapshot: Path, work: Path, repeat: int) -> None:
    """Export ``snapshot`` into ``work`` and print the timings and speed-ups."""
    import datasets

    from junobench.data.build import build
    from junobench.data.filters import apply_filters
    from junobench.hub.write_export import export
    from junobench.loader import load

    caches = iter(range(10**6))

    def raw_build(filtered: bool = False) -> None:
        cache = work / f"records-{next(caches)}"  # cold: a new records cache each time
        for config in CONFIGS:
            records, _ = build(snapshot, config, cache_dir=cache)
            if filtered:
                apply_filters(records, {"library": ["torch"]})

    out = work / f"export-{work.name}"  # datasets caches a local dir by its name: keep names apart
    start = time.perf_counter()
    result = export(snapshot, out, cache_dir=work / "records-export")
    export_seconds = time.perf_counter() - start
    export_dir = str(out)

    def stock_load(**kwargs: object) -> None:
        for config in CONFIGS:
            datasets.load_dataset(export_dir, config, split="test", **kwargs)

    stock_load()  # prepare the datasets cache: the timed loads are warm
    stock_load(filters=FILTER)
    torch_cases = len(datasets.load_dataset(export_dir, "cases", split="test", filters=FILTER))

    raw = median_seconds(raw_build, repeat)
    raw_filtered = median_seconds(lambda: raw_build(filtered=True), repeat)
    warm = median_seconds(stock_load, repeat)
    warm_filtered = median_seconds(lambda: stock_load(filters=FILTER), repeat)
    start = time.perf_counter()
    for config in CONFIGS:  # the first load makes the memory-mappable copy in the cache
        load(export_dir, config)
    direct_first = time.perf_counter() - start
    direct = median_seconds(lambda: [load(export_dir, c) for c in CONFIGS], repeat)

    print(f"snapshot        {snapshot} ({result.rows['cases']} cases, {result.rows['notebooks']} notebooks)")
    print(f"export          {export_seconds:8.3f} s (once)")
    print(f"raw build       {raw:8.3f} s   cases + notebooks, cold records cache (median of {repeat})")
    print(f"load_dataset    {warm:8.3f} s   both configs from the export, warm cache")
    print(f"  filtered      {warm_filtered:8.3f} s   filters={FILTER} ({torch_cases} cases); "
          f"raw build + filter {raw_filtered:.3f} s")
    print(f"junobench.load  {direct:8.3f} s   both configs from the export, warm cache "
          f"(first load, making the Arrow copy: {direct_first:.3f} s)")
    print(f"speed-up        {raw / warm:6.1f}x  load_dataset (warm) vs raw build")
    print(f"speed-up        {raw_filtered / warm_filtered:6.1f}x  filtered load_dataset vs raw build + filter")
    print(f"speed-up        {raw / direct:6.1f}x  junobench.load(export) vs raw build")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="snapshot directory")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 10, 100],
                        help="sizes to measure, in copies of the snapshot's cases (default: 1 10 "
                             "100, the last the ~22,200 notebooks of benchmark_build.py)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (median)")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"no snapshot at {args.source}", file=sys.stderr)
        return 1

    work = Path(tempfile.mkdtemp(prefix="junobench-benchmark-load-"))
    os.environ["HF_DATASETS_CACHE"] = str(work / "hf-datasets")  # before datasets is imported
    os.environ["JUNOBENCH_CACHE"] = str(work / "junobench-cache")
    os.environ["HF_HUB_OFFLINE"] = "1"
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    logging.getLogger("junobench").setLevel(logging.ERROR)
    sys.path.insert(0, str(REPO / "scripts"))
    from benchmark_build import replicate

    try:
        for replicas in args.replicas:
            folder = work / f"x{replicas}"
            folder.mkdir()
            snapshot = args.source
            if replicas > 1:
                snapshot = folder / "snapshot"
                replicate(args.source, snapshot, replicas)
            measure(snapshot, folder, args.repeat)
            print()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
