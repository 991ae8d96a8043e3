"""Benchmark: mining a corpus of notebooks against the floor of reading it, at two sizes.

Makes (or reuses) a corpus of realistic notebooks (``scripts/make_corpus.py``: markdown,
code, tables, PNG figures of typical sizes), then measures in one run, each phase in a
fresh process:

- the floor: read every notebook, parse its JSON (msgspec, the parser mine uses; the
  standard library's ``json`` printed beside it) and base64-decode every image, nothing
  else; in one process, and in ``--jobs`` processes (the corpus split between them);
- mine: ``junobench mine CORPUS --out OUT --jobs N`` as the user runs it (the public
  path: sources, parsing, figures, static analysis, rows, parquet, card, croissant,
  manifest), and its peak RSS (its own process and its largest worker);
- the same at a quarter of the corpus, for memory flat in the corpus size;
- with ``--ray``: mine on a local Ray instance, and whether its files are those of the
  local run (the manifest's sha256 of every file).

Each phase runs ``--repeat`` times, interleaved; the best time counts (noise on a shared
machine only ever adds time), printed with the machine's load average as it started. Prints
the times, their ratios, notebooks/s, RSS, the output's size per notebook, and the
extrapolation to KGTorrent's 248,761 notebooks (time on this machine, on a cluster of a
given size, disk).

    python scripts/benchmark_mine.py [--notebooks 10000] [--corpus DIR] [--jobs 2] [--repeat 2] [--ray]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from make_corpus import make_corpus

REPO = Path(__file__).resolve().parent.parent
KGTORRENT = 248_761

FLOOR = r"""
import base64, json, resource, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import msgspec

def floor(paths, parser):
    decode = msgspec.json.decode if parser == "msgspec" else json.loads
    images = 0
    for path in paths:
        notebook = decode(Path(path).read_bytes())
        for cell in notebook["cells"]:
            for output in cell.get("outputs") or ():
                for mime, value in (output.get("data") or {}).items():
                    if mime in ("image/png", "image/jpeg"):
                        images += len(base64.b64decode(value if isinstance(value, str) else "".join(value)))
    return images

if __name__ == "__main__":
    corpus, parser, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    paths = sorted(str(p) for p in Path(corpus).rglob("*.ipynb"))
    started = time.perf_counter()
    if jobs == 1:
        images = floor(paths, parser)
    else:
        with ProcessPoolExecutor(jobs) as pool:
            images = sum(pool.map(floor, [paths[i::jobs] for i in range(jobs)], [parser] * jobs))
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    print(json.dumps({"seconds": time.perf_counter() - started, "images": images, "cpu": cpu}))
"""

MINE = r"""
import json, resource, sys, time
from junobench.cli import main

started = time.perf_counter()
code = main(sys.argv[1:])
seconds = time.perf_counter() - started
rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "code": code, "rss_mib": rss, "self_mib": own.ru_maxrss / 1024,
                  "self_cpu": own.ru_utime + own.ru_stime,
                  "cpu": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime}))
"""


def run(code: str, *args: str) -> dict:
    load = os.getloadavg()[0]
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO / "scripts",
                            check=False)
    if result.returncode != 0:
        raise SystemExit(f"failed: {result.stderr[-2000:]}")
    return {**json.loads(result.stdout.strip().splitlines()[-1]), "load": load}


def mine(corpus: Path, out: Path, jobs: int, *extra: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    found = run(MINE, "mine", str(corpus), "--out", str(out), "--jobs", str(jobs), "--no-progress", *extra)
    if found["code"] != 0:
        raise SystemExit(f"mine failed on {corpus}")
    manifest = json.loads((out / "checksums.json").read_text())
    found["bytes"] = sum(entry["size"] for entry in manifest["files"].values())
    found["rows"] = manifest["rows"]
    found["files"] = manifest["files"]
    return found


def subset(corpus: Path, target: Path, count: int) -> Path:
    """A corpus of the first ``count`` notebooks of ``corpus`` (hard links: no copy)."""
    if target.exists():
        shutil.rmtree(target)
    for path in sorted(corpus.rglob("*.ipynb"))[:count]:
        (target / path.parent.name).mkdir(parents=True, exist_ok=True)
        (target / path.parent.name / path.name).hardlink_to(path)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", type=int, default=10_000)
    parser.add_argument("--corpus", type=Path, help="the corpus (made there if missing)")
    parser.add_argument("--workdir", type=Path, help="where outputs go (default: a temporary folder)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="also mine on a local Ray instance and compare")
    parser.add_argument("--cluster-cpus", type=int, default=64, help="CPUs of the cluster in the extrapolation")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="benchmark-mine-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = args.corpus or work / "corpus"
    if not corpus.exists() or not any(corpus.rglob("*.ipynb")):
        print(f"making a corpus of {args.notebooks} notebooks in {corpus} …", file=sys.stderr)
        make_corpus(corpus, args.notebooks)
    count = len(list(corpus.rglob("*.ipynb")))
    quarter = subset(corpus, work / "quarter", count // 4)
    corpus_bytes = sum(p.stat().st_size for p in corpus.rglob("*.ipynb"))

    floors: dict[str, list[dict]] = {"msgspec": [], "json": [], f"msgspec, {args.jobs} processes": []}
    floor_cpu: list[float] = []
    mined: list[dict] = []
    small: list[dict] = []
    for _ in range(args.repeat):
        measured = run(FLOOR, str(corpus), "msgspec", "1")
        floors["msgspec"].append(measured)
        floor_cpu.append(measured["cpu"])
        floors["json"].append(run(FLOOR, str(corpus), "json", "1"))
        floors[f"msgspec, {args.jobs} processes"].append(run(FLOOR, str(corpus), "msgspec", str(args.jobs)))
        mined.append(mine(corpus, work / "out", args.jobs))
        small.append(mine(quarter, work / "out-quarter", args.jobs))
    best = min(mined, key=lambda m: m["seconds"])
    best_small = min(small, key=lambda m: m["seconds"])
    fastest = {name: min(times, key=lambda m: m["seconds"]) for name, times in floors.items()}
    floor = fastest["msgspec"]["seconds"]
    print(f"corpus: {count:,} notebooks, {corpus_bytes / 2**20:,.0f} MiB, {best['rows']['figures']:,} figures, "
          f"{best['rows']['cells']:,} cells; {args.jobs} jobs; best of {args.repeat}")
    for name, found in fastest.items():
        pad = " " * max(1, 26 - len(name))
        print(f"floor ({name}):{pad}{found['seconds']:7.2f} s  {count / found['seconds']:8,.0f} notebooks/s  "
              f"(load {found['load']:.1f})")
    print(f"mine ({args.jobs} jobs):                  {best['seconds']:7.2f} s  {count / best['seconds']:8,.0f} "
          f"notebooks/s  (load {best['load']:.1f}) = {best['seconds'] / floor:.2f}x the msgspec floor, "
          f"{best['seconds'] / fastest[f'msgspec, {args.jobs} processes']['seconds']:.2f}x on {args.jobs} "
          f"processes, {best['seconds'] / fastest['json']['seconds']:.2f}x the json floor")
    print(f"CPU time: mine {best['cpu']:.1f} CPU-s (all its processes), the msgspec floor {min(floor_cpu):.1f} "
          f"CPU-s: {best['cpu'] / min(floor_cpu):.2f}x, {best['cpu'] / args.jobs / min(floor_cpu):.2f}x per core "
          f"(what the wall-clock ratio is on {args.jobs} otherwise idle cores)")
    print(f"peak RSS: {best_small['rss_mib']:.0f} MiB at {count // 4:,} notebooks, {best['rss_mib']:.0f} MiB at "
          f"{count:,} (largest process; the main one: {best_small['self_mib']:.0f} and {best['self_mib']:.0f} MiB)")
    per = best["bytes"] / count
    print(f"output: {best['bytes'] / 2**20:,.0f} MiB ({per / 1024:.0f} KiB a notebook; the corpus "
          f"{corpus_bytes / count / 1024:.0f} KiB a notebook)")
    if args.ray:
        on_ray = mine(corpus, work / "out-ray", args.jobs, "--executor", "ray")
        same = on_ray["files"] == best["files"]
        print(f"mine on Ray ({args.jobs} CPUs): {on_ray['seconds']:7.2f} s; files identical to the local run: {same}")
    rate = count / best["seconds"] / args.jobs  # notebooks per second per core
    writer = count / best["self_cpu"]  # notebooks per second the one writing process can take
    cluster = min(rate * args.cluster_cpus, writer)
    print(f"the writing process: {best['self_cpu']:.1f} CPU-s, at most {writer:,.0f} notebooks/s whatever the workers")
    print(f"KGTorrent ({KGTORRENT:,} notebooks), at this corpus' rate: {KGTORRENT / rate / args.jobs / 3600:.1f} h on "
          f"{args.jobs} cores, {KGTORRENT / cluster / 60:.0f} min on {args.cluster_cpus} CPUs (the writer's bound: "
          f"{'reached' if cluster == writer else 'not reached'}); output about {per * KGTORRENT / 2**30:.0f} GiB "
          f"(and the corpus itself {corpus_bytes / count * KGTORRENT / 2**30:.0f} GiB at these sizes)")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
