#!/usr/bin/env python3
"""Benchmark ``junobench runtime-info``: what the inspection adds to running the cells.

For every notebook of the source (one job, so timings do not interfere), in one run:
replay the executed cells alone, then replay them again followed by the inspection.
Prints both totals, their ratio, the inspection's own time (median and slowest
notebook) and the size of the summaries. A warm-up notebook runs first so that the
libraries are in the file cache. Numbers depend on what else the machine is doing;
report them with that caveat.

    python scripts/benchmark_runtime.py [--source sample] [--timeout 600]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from junobench import vocab
from junobench.data import layout
from junobench.data.notebook import read_notebook
from junobench.data.snapshot import resolve
from junobench.runtime.extract import Inspection, request_for
from junobench.verify import replay_in_copy
from junobench.verify.runner import run_sync
from junobench.verify.spec import case_specs


def timed(spec, version, steps, timeout, after=None) -> float:
    started = time.perf_counter()
    log = run_sync(replay_in_copy(spec, version, steps, timeout=timeout, after=after))
    if log.failure or any(s.status != "ok" for s in log.steps):
        raise SystemExit(f"{spec.case_id} {version}: the executed cells did not all run")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="sample")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    root = resolve(args.source, include_data=True)
    work = [(spec, version) for spec in case_specs(root) if spec.runnable
            for version in vocab.EVALUATED_VERSIONS]
    if not work:
        raise SystemExit("no runnable notebooks (is the input data there?)")
    timed(work[0][0], work[0][1], work[0][0].orders[work[0][1]][:-1], args.timeout)  # warm-up
    cells_only, with_inspection, inspection_times, sizes = [], [], [], []
    for spec, version in work:
        notebook, _ = read_notebook(layout.notebook_path(root, spec.case_id, version))
        request = request_for(notebook.code_cells[spec.target].source)
        steps = spec.orders[version][:-1]
        cells_only.append(timed(spec, version, steps, args.timeout))
        inspection = Inspection(request, args.timeout)
        spent: list[float] = []

        async def after(client, inspection=inspection, spent=spent):
            started = time.perf_counter()
            await inspection(client)
            spent.append(time.perf_counter() - started)

        with_inspection.append(timed(spec, version, steps, args.timeout, after))
        if inspection.problem:
            raise SystemExit(f"{spec.case_id} {version}: {inspection.problem}")
        inspection_times.append(spent[0])
        sizes.append(len(json.dumps(inspection.payload["objects"], ensure_ascii=False)))
    plain, full = sum(cells_only), sum(with_inspection)
    print(f"runtime-info --source {args.source}: {len(work)} notebooks, 1 job")
    print(f"  executed cells only      {plain:7.2f} s")
    print(f"  cells + inspection       {full:7.2f} s   ratio {full / plain:.2f}")
    print(f"  inspection per notebook  median {statistics.median(inspection_times):.3f} s, "
          f"slowest {max(inspection_times):.3f} s")
    print(f"  summaries per notebook   median {statistics.median(sizes):.0f} JSON chars, "
          f"largest {max(sizes)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
