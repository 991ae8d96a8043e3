"""Throughput of library-cause estimation at the scale of a crash pool.

Scores N tracebacks (the dev labeled crashes of ../shared/reference repeated; default
64,000) with :func:`junobench.construct.library_cause.estimate` and with a
literal-eval-and-keyword-loop estimator (parse the stored list with ``ast.literal_eval``,
then count library keywords line by line, crash lines weighted higher), in the same
process, alternating chunks so that machine load hits all alike, timed in CPU time of
this process. Prints tracebacks/s, the ratios, and each estimator's accuracy on the dev
rows of the 10 benchmark libraries.

The keyword loop is timed twice: with a keyword table over the libraries the empirical
study names as crash causes (the scope of the published heuristic, which this approach
re-implements) and restricted to the benchmark's 10 libraries (less work per line).

    python scripts/benchmark_library_cause.py [--n 64000] [--reference ../shared/reference]

Each repeated copy gets its own execution count in the cell frame, so no cache of
whole tracebacks could help either estimator.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import time
from collections import Counter
from pathlib import Path

from junobench.construct import library_cause
from junobench.data.tables import read_table

REPO = Path(__file__).resolve().parent.parent
DEV_TABLE = "empirical_labeled_crashes.dev.xlsx"

#: The literal-eval approach's keyword table: a module name (and its usual alias) per
#: library that the empirical study names as a crash cause, as the published heuristic
#: does; tensorflow and keras count as one library.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "tensorflow/keras": ("tensorflow", "keras", "tf."),
    "torch": ("torch", "nn."),
    "matplotlib": ("matplotlib", "plt."),
    "sklearn": ("sklearn", "scikit"),
    "xgboost": ("xgboost", "xgb."),
    "seaborn": ("seaborn", "sns."),
    "scipy": ("scipy",),
    "plotly": ("plotly",),
    "cv2": ("cv2",),
    "lightgbm": ("lightgbm", "lgb."),
    "torchvision": ("torchvision",),
    "nltk": ("nltk",),
    "transformers": ("transformers",),
    "catboost": ("catboost",),
    "statsmodels": ("statsmodels", "sm."),
    "imblearn": ("imblearn",),
    "wordcloud": ("wordcloud",),
    "optuna": ("optuna",),
    "PIL": ("pil.", "from pil"),
    "gensim": ("gensim",),
    "keras_nlp": ("keras_nlp",),
    "prophet": ("prophet",),
    "gym": ("gym.",),
    "yellowbrick": ("yellowbrick",),
    "pandas": ("pandas", "pd."),
    "numpy": ("numpy", "np."),
}
#: The same approach restricted to the benchmark's 10 libraries (less work per line).
BENCHMARK_KEYWORDS: dict[str, tuple[str, ...]] = {
    lib: KEYWORDS[lib] for lib in library_cause.LIBRARY_CAUSES
}
_ANSI = re.compile(r"\\x1b\[[0-9;]*m|\x1b\[[0-9;]*m")
_CELL_COUNT = re.compile(r"(Cell In ?\[|<ipython-input-)(\d+)")


def keyword_estimate(traceback: str, keywords: dict[str, tuple[str, ...]] = KEYWORDS
                     ) -> str | None:
    """The literal-eval-and-keyword-loop approach: most keyword hits, crash lines x3."""
    try:
        frames = ast.literal_eval(_ANSI.sub("", traceback))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        frames = [traceback]
    if not isinstance(frames, list):
        frames = [str(frames)]
    hits: Counter[str] = Counter()
    for frame in frames:
        for line in str(frame).splitlines():
            weight = 3 if "---->" in line else 1
            lowered = line.lower()
            for library, words in keywords.items():
                for keyword in words:
                    if keyword in lowered:
                        hits[library] += weight
    return max(hits, key=hits.__getitem__) if hits else None


def benchmark_keyword_estimate(traceback: str) -> str | None:
    """:func:`keyword_estimate` over the benchmark's 10 libraries only."""
    return keyword_estimate(traceback, BENCHMARK_KEYWORDS)


def workload(rows: list[dict], n: int) -> list[str]:
    """``n`` tracebacks: the dev ones repeated, each copy with its own cell counts."""
    tracebacks = [str(r["traceback"]) for r in rows if r.get("traceback")]
    out = []
    for i in range(n):
        base = tracebacks[i % len(tracebacks)]
        copy = i // len(tracebacks)
        out.append(_CELL_COUNT.sub(lambda m, c=copy: f"{m.group(1)}{int(m.group(2)) + c}", base)
                   if copy else base)
    return out


def accuracy(rows: list[dict], estimator) -> tuple[int, int]:
    wanted = [(r, library_cause.normalise_label(r["Libs-cause"])) for r in rows]
    wanted = [(r, label) for r, label in wanted if label in library_cause.LIBRARY_CAUSES]
    correct = sum(estimator(str(r["traceback"])) == label for r, label in wanted)
    return correct, len(wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=64_000, help="tracebacks to score")
    parser.add_argument("--reference", type=Path, default=REPO.parent / "shared" / "reference")
    parser.add_argument("--chunk", type=int, default=2_000, help="tracebacks per timed chunk")
    args = parser.parse_args(argv)
    table = args.reference / DEV_TABLE
    if not table.is_file():
        print(f"error: {table} not found (pass --reference DIR)", file=sys.stderr)
        return 1
    rows = read_table(table).records()
    tracebacks = workload(rows, args.n)
    estimators = {
        "junobench": library_cause.estimate,
        "keyword loop": keyword_estimate,
        "keyword loop (10 libraries)": benchmark_keyword_estimate,
    }
    timings = dict.fromkeys(estimators, 0.0)
    for number, start in enumerate(range(0, len(tracebacks), args.chunk)):
        chunk = tracebacks[start:start + args.chunk]
        names = list(estimators)
        for name in names[number % len(names):] + names[:number % len(names)]:
            estimator = estimators[name]
            began = time.process_time()
            for traceback in chunk:
                estimator(traceback)
            timings[name] += time.process_time() - began
    print(f"{len(tracebacks):,} tracebacks ({len(rows)} dev tracebacks repeated)")
    for name, seconds in timings.items():
        correct, total = accuracy(rows, estimators[name])
        print(f"  {name:28} {len(tracebacks) / seconds:9,.0f} tracebacks/s  {seconds:6.2f} s"
              f"   dev accuracy {correct}/{total} = {correct / total:.1%}")
    for name in list(estimators)[1:]:
        print(f"  speed-up over {name}: {timings[name] / timings['junobench']:.1f}x")
    print("  (one process, CPU time, chunks interleaved in rotating order)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
