"""Benchmark: building the records of a large snapshot against the floor of reading it.

Makes a synthetic snapshot of N replicas of a snapshot (default: the reference snapshot
beside the checkout, N=100 → 11,100 cases, 22,200 notebooks), then measures in one run,
each phase in a fresh process with a cold records cache:

- the floor: read and ``json.loads`` every notebook, nothing else (also printed with
  msgspec, the faster parser the build uses, for comparison);
- the load, the public path: ``junobench.load(S, "cases")`` then ``junobench.load(S,
  "notebooks")`` in a fresh process from empty caches (records and digest memo), the
  import of ``datasets`` included, as a user's first load runs;
- the build alone: ``cases`` + ``notebooks`` records from a cold cache, as ``junobench
  build`` prepares them (content fingerprint, tables, notebooks, Arrow files of both
  configs), ``datasets`` imported before the clock starts;
- the warm load: the same with the cache current, and the cost of its cache key (every
  file's size, inode, modification and change times) against a key of size and
  modification time alone, which misses edits that keep both.

The file-digest memo of the cache key is kept in the work folder (``$JUNOBENCH_CACHE``),
so every run starts from an empty memo and leaves none of the synthetic snapshot's
digests in the user's cache. Each phase runs ``--repeat`` times (interleaved); the best
time of each is compared, as one-off noise on a shared machine only ever adds time. Prints the times, the
ratios to the floor in wall-clock and in CPU seconds (the process and its workers: the
steadier figure when other work shares the machine), notebooks/s and the peak RSS of
the build (its own process and its worker processes).
Usage::

    python scripts/benchmark_build.py [--replicas 100] [--source DIR] [--workdir DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reference import reference_dir

from junobench.cores import available_cores
from junobench.data import layout
from junobench.data.tables import read_table, write_table

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = reference_dir() / "junobench-snapshot"
_CASE = re.compile(r"^(?P<library>.+)_(?P<number>\d+)$")


def replicate(source: Path, target: Path, replicas: int) -> int:
    """Write ``replicas`` copies of ``source``'s cases into ``target``; returns the case count.

    Replica ``r`` of case ``lib_k`` is ``lib_{k + 1000 r}``, in both tables and folders.
    """
    desc = read_table(source / layout.DESC_TABLE)
    diagnosis_path = source / layout.DIAGNOSIS_TABLE
    diagnosis = read_table(diagnosis_path) if diagnosis_path.is_file() else None
    (target / layout.BENCHMARK_DIR).mkdir(parents=True)

    def renamed(case_id: str, replica: int) -> str:
        match = _CASE.match(case_id)
        assert match, case_id
        return f"{match['library']}_{int(match['number']) + 1000 * replica}"

    rows, diagnosis_rows = [], []
    for replica in range(replicas):
        for record in desc.records():
            case_id = str(record["nb_name"])
            new_id = renamed(case_id, replica)
            rows.append({**record, "nb_name": new_id})
            folder = layout.case_dir(target, new_id)
            folder.mkdir()
            for entry in layout.case_dir(source, case_id).iterdir():
                name = entry.name.replace(case_id, new_id, 1)
                if entry.is_dir():
                    shutil.copytree(entry, folder / name)
                else:
                    shutil.copyfile(entry, folder / name)
        for record in diagnosis.records() if diagnosis else []:
            case_id, _, version = str(record["instance"]).rpartition("_")
            diagnosis_rows.append({**record, "instance": f"{renamed(case_id, replica)}_{version}"})
    write_table(target / layout.DESC_TABLE, rows, desc.columns)
    if diagnosis:
        write_table(target / layout.DIAGNOSIS_TABLE, diagnosis_rows, diagnosis.columns)
    return len(rows)


FLOOR = """
import json, os, resource, sys, time
root = sys.argv[1]
loads = json.loads
if len(sys.argv) > 2:  # the JSON parser the build uses (stdlib json is the floor)
    import msgspec
    loads = msgspec.json.decode
start = time.perf_counter()
count = 0
for case in os.scandir(os.path.join(root, "benchmark")):
    for entry in os.scandir(case.path):
        if entry.name.endswith(".ipynb"):
            with open(entry.path, "rb") as handle:
                loads(handle.read())
            count += 1
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.perf_counter() - start, "notebooks": count,
                  "cpu": usage.ru_utime + usage.ru_stime}))
"""

LOAD = """
import json, os, resource, sys, time
root, cache = sys.argv[1], sys.argv[2]
os.environ["JUNOBENCH_CACHE"] = os.path.join(cache, "junobench")  # records and digest memo: empty
os.environ["HF_HOME"] = os.path.join(cache, "hf")
import logging
logging.getLogger("junobench").disabled = True  # the notes are the same in every run


def cpu():
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


before, start = cpu(), time.perf_counter()
import junobench
cases = junobench.load(root, "cases")
notebooks = junobench.load(root, "notebooks")
seconds, used = time.perf_counter() - start, cpu() - before
result = {"seconds": seconds, "cpu": used, "cases": len(cases), "notebooks": len(notebooks)}
del cases, notebooks
import shutil
shutil.rmtree(cache)
print(json.dumps(result))
"""

BUILD = """
import json, resource, sys, time
import datasets
datasets.disable_progress_bars()
from junobench.data.build import prepare
from pathlib import Path
root, cache = Path(sys.argv[1]), sys.argv[2]


def cpu():
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


before, start = cpu(), time.perf_counter()
built, _ = prepare(root, ("cases", "notebooks"), cache_dir=cache)  # what `junobench build` does
seconds, used = time.perf_counter() - start, cpu() - before
cases, notebooks = built["cases"], built["notebooks"]
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
result = {"seconds": seconds, "cpu": used, "cases": len(cases), "notebooks": len(notebooks),
          "peak_rss_mb": rss}
del built, cases, notebooks
import shutil
shutil.rmtree(cache)  # not needed again; gone before the system writes it back to disk
print(json.dumps(result))
"""


WARM = """
import json, os, sys, time
import datasets
datasets.disable_progress_bars()
from junobench.data.build import prepare
from junobench.data import snapshot
from junobench.data.snapshot import fingerprint
from pathlib import Path
root, cache = Path(sys.argv[1]), sys.argv[2]
prepare(root, ("cases", "notebooks"), cache_dir=cache)  # the cold build, not timed
time.sleep(2.1)  # the files settle: their digests are remembered from now on
fingerprint(root)  # the content digests of every file, computed once and remembered


def size_mtime_entry(entries, name, path, digests, root, entry=None):
    # a key of size and modification time alone (one stat per file, no content)
    try:
        info = os.stat(path) if entry is None else entry.stat()
    except OSError:
        entries.append((name, -1, -1))
        return
    entries.append((name, info.st_size, info.st_mtime_ns))


def best(function, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


warm = best(lambda: prepare(root, ("cases", "notebooks"), cache_dir=cache), 3)
key = best(lambda: fingerprint(root))
snapshot._add = size_mtime_entry
old_key = best(lambda: fingerprint(root))
import shutil
shutil.rmtree(cache)
print(json.dumps({"warm": warm, "fingerprint": key, "size_mtime_fingerprint": old_key}))
"""


def run(code: str, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                            check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _median_ratio(runs: list[dict], floors: list[dict]) -> float:
    return statistics.median(r["seconds"] for r in runs) / statistics.median(f["seconds"] for f in floors)


def _times(runs: list[dict]) -> str:
    return " ".join(f"{r['seconds']:.2f}" for r in runs) + " s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where to build the synthetic snapshot (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the synthetic snapshot")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each phase; the best of each is compared (default 3)")
    args = parser.parse_args()
    if not (args.source / layout.DESC_TABLE).is_file():
        print(f"no snapshot at {args.source}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="junobench-bench-", dir=args.workdir))
    # the digest memo of the phases: in the work folder, so the user's cache keeps no
    # digests of the synthetic snapshot once it is deleted
    os.environ["JUNOBENCH_CACHE"] = str(work / "memo")
    try:
        snapshot = work / "snapshot"
        start = time.perf_counter()
        cases = replicate(args.source, snapshot, args.replicas)
        print(f"synthetic snapshot: {cases} cases ({args.replicas} replicas) "
              f"in {time.perf_counter() - start:.1f}s at {snapshot}")
        run(FLOOR, str(snapshot))  # warm the page cache so both phases read from memory
        floors, fast_floors, loads, builds = [], [], [], []
        for attempt in range(args.repeat):  # interleaved, so all see the same machine
            floors.append(run(FLOOR, str(snapshot)))
            fast_floors.append(run(FLOOR, str(snapshot), "msgspec"))
            loads.append(run(LOAD, str(snapshot), str(work / f"load-{attempt}")))
            builds.append(run(BUILD, str(snapshot), str(work / f"cache-{attempt}")))
        floor, fast_floor, load, build = (min(runs, key=lambda r: r["seconds"])
                                          for runs in (floors, fast_floors, loads, builds))
        print(f"best of {args.repeat} runs each (floor {_times(floors)}; load {_times(loads)}; "
              f"build {_times(builds)})")
        print(f"floor (read + json-parse {floor['notebooks']} notebooks): {floor['seconds']:.2f}s "
              f"({floor['cpu']:.2f} CPU s)")
        print(f"load (junobench.load cases {load['cases']}, then notebooks {load['notebooks']}, "
              f"from empty caches): {load['seconds']:.2f}s ({load['cpu']:.2f} CPU s)")
        print(f"  load/floor ratio: {load['seconds'] / floor['seconds']:.2f} "
              f"(medians {_median_ratio(loads, floors):.2f}; CPU {load['cpu'] / floor['cpu']:.2f})")
        print(f"build alone (cases {build['cases']} + notebooks {build['notebooks']}, datasets "
              f"imported): {build['seconds']:.2f}s ({build['cpu']:.2f} CPU s)")
        print(f"  build/floor ratio: {build['seconds'] / floor['seconds']:.2f} "
              f"(medians {_median_ratio(builds, floors):.2f}; CPU {build['cpu'] / floor['cpu']:.2f})")
        print(f"  (floor with msgspec, the parser the build uses: {fast_floor['seconds']:.2f}s, "
              f"build ratio {build['seconds'] / fast_floor['seconds']:.2f})")
        print(f"notebooks/s: {build['notebooks'] / build['seconds']:,.0f}")
        print(f"peak RSS of the build: {max(b['peak_rss_mb'] for b in builds):.0f} MB")
        warm = run(WARM, str(snapshot), str(work / "cache-warm"))
        print(f"warm load (cache current, both configs): {warm['warm']:.3f}s "
              f"({build['seconds'] / warm['warm']:.0f}x faster than the cold build)")
        print(f"cache key (sha256 of every file, remembered by size, inode, mtime, ctime): "
              f"{warm['fingerprint']:.3f}s; "
              f"size and mtime only: {warm['size_mtime_fingerprint']:.3f}s "
              f"(ratio {warm['fingerprint'] / warm['size_mtime_fingerprint']:.2f})")
        print(f"cores: {available_cores()}  (load average {os.getloadavg()[0]:.2f} at the end)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
