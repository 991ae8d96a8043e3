"""Benchmark: near-duplicate detection (``junobench.data.similarity``) on the reference
snapshot's 111 cases, as ``validate`` and ``construct add-case`` use it.

In one run:

- the fingerprints of every case (its reproduced, fixed and original notebooks), and
  every pair of distinct cases compared, as ``validate`` does: the time of each, and the
  floor beside it (the same notebooks only read and their code cells joined);
- the highest similarity of two distinct published cases (how far below the threshold);
- the lowest similarity of a case to a copy of itself edited as a copier would (comments,
  spacing, names, import order and aliases, string formatting, docstrings, cells split,
  merged or padded with blank ones, all at once): how far above the threshold.

Usage::

    python scripts/benchmark_similarity.py [--reference DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

from reference import reference_dir

from junobench.data import layout, similarity


def sources(root: Path, case: str, version: str) -> list[str] | None:
    path = layout.notebook_path(root, case, version)
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in data["cells"] if c["cell_type"] == "code"]


def copied(cells: list[str]) -> list[str]:
    """A copy of a notebook's code as a copier edits it, keeping the program."""
    names = {"df": "frame_copied", "X": "features_copied", "y": "target_copied", "model": "estimator_copied"}
    out = []
    for k, cell in enumerate(cells):
        cell = re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: names[m.group(1)], cell)
        cell = re.sub(r"^import numpy as np$", "import numpy as numeric", cell, flags=re.M)
        cell = re.sub(r"(?<![\w.])np\.", "numeric.", cell)
        cell = "# copied\n" + "\n\n".join(f"{line}  # note" if line.strip() and not line.rstrip().endswith(
            ("\\", ",", "(")) and '"""' not in line and "'''" not in line else line for line in cell.splitlines())
        out += [cell, ""] if k % 2 else [cell]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reference", type=Path, default=reference_dir())
    args = parser.parse_args()
    root = args.reference / "junobench-snapshot"
    cases = sorted(os.listdir(root / "benchmark"))
    start = time.perf_counter()
    read = {c: {v: sources(root, c, v) for v in similarity.VERSIONS} for c in cases}
    floor = time.perf_counter() - start
    start = time.perf_counter()
    prints = {c: similarity.folder_prints(root, c) for c in cases}
    fingerprints = time.perf_counter() - start
    start = time.perf_counter()
    top = similarity.highest(prints)
    pairs = time.perf_counter() - start
    lowest = min((similarity.similarity(similarity.fingerprint(cells), similarity.fingerprint(copied(cells))), c, v)
                 for c, versions in read.items() for v, cells in versions.items() if cells)
    count = sum(1 for versions in read.values() for cells in versions.values() if cells)
    print(f"reference snapshot: {len(cases)} cases, {count} notebooks; threshold {similarity.THRESHOLD}")
    print(f"fingerprints of every case   {fingerprints:6.2f} s   ({fingerprints / floor:.1f}x the floor: "
          f"the notebooks read, {floor:.2f} s)")
    print(f"every pair compared          {pairs:6.2f} s   ({len(cases) * (len(cases) - 1) // 2} pairs)")
    assert top is not None
    print(f"most similar distinct cases  {top.similarity:6.3f}   ({top.case} and {top.other}, {top.version})")
    print(f"least similar edited copy    {lowest[0]:6.3f}   ({lowest[1]}, {lowest[2]})")


if __name__ == "__main__":
    main()
