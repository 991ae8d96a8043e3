"""Throughput and accuracy of library-cause estimation, against the published heuristic.

Scores N tracebacks (the dev labeled crashes of the reference folder repeated; default
64,000) with :func:`junobench.construct.library_cause.estimate` (any library) and with the
published heuristic as its repository describes it (strip ANSI codes, ``literal_eval`` the
stored list, count keyword hits of 24 libraries line by line, ``---->`` lines x3, ties to
the first library of its table, ``None`` when nothing is found), in the same process,
alternating chunks so that machine load hits both alike, timed in CPU time of this
process; also the keyword loop this script compared with before (the same approach over
the 26 libraries the study names as causes, the raw text when the list does not parse).
The whole workload is scored ``--rounds`` times (default 3) and each estimator's fastest
round counts, so that a burst of load on a shared machine does not decide the ratio.
Prints
tracebacks/s and the ratios, then each estimator's accuracy on the rows
labelled with one of the benchmark's ten libraries and on those labelled with another
library, on the held-out third (never tuned on) and on the tuning rows apart.

    python scripts/benchmark_library_cause.py [--n 64000] [--rounds 3] [--reference DIR]

The reference folder is ``$JUNOBENCH_REFERENCE`` when set, else ``../shared/reference``.

Each repeated copy gets its own execution count in the cell frame, so no cache of
whole tracebacks could help either estimator.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from reference import reference_dir

from junobench.construct import library_cause
from junobench.data.tables import read_table

DEV_TABLE = "empirical_labeled_crashes.dev.xlsx"

#: The published heuristic's keyword table, in its order (the order breaks ties).
KEYWORDS: dict[str, tuple[str, ...]] = {
    "tensorflow": ("tensorflow", "tf."), "torch": ("torch", "pytorch"),
    "matplotlib": ("matplotlib", "plt."), "sklearn": ("sklearn", "scikit"),
    "keras": ("keras",), "xgboost": ("xgboost",), "seaborn": ("seaborn", "sns."),
    "scipy": ("scipy",), "plotly": ("plotly",), "cv2": ("cv2",), "lightgbm": ("lightgbm",),
    "torchvision": ("torchvision",), "nltk": ("nltk",), "transformers": ("transformers",),
    "catboost": ("catboost",), "statsmodels": ("statsmodels",), "imblearn": ("imblearn",),
    "wordcloud": ("wordcloud",), "missingno": ("missingno",), "optuna": ("optuna",),
    "skimage": ("skimage",), "datasets": ("datasets",), "pandas": ("pandas", "pd.", "df"),
    "numpy": ("numpy", "np."),
}
#: The keyword loop this script compared with before: the same approach over the 26
#: libraries the empirical study names as crash causes, falling back to the raw text when
#: the list does not parse (tensorflow and keras as one).
STUDY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "tensorflow/keras": ("tensorflow", "keras", "tf."), "torch": ("torch", "nn."),
    "matplotlib": ("matplotlib", "plt."), "sklearn": ("sklearn", "scikit"),
    "xgboost": ("xgboost", "xgb."), "seaborn": ("seaborn", "sns."), "scipy": ("scipy",),
    "plotly": ("plotly",), "cv2": ("cv2",), "lightgbm": ("lightgbm", "lgb."),
    "torchvision": ("torchvision",), "nltk": ("nltk",), "transformers": ("transformers",),
    "catboost": ("catboost",), "statsmodels": ("statsmodels", "sm."),
    "imblearn": ("imblearn",), "wordcloud": ("wordcloud",), "optuna": ("optuna",),
    "PIL": ("pil.", "from pil"), "gensim": ("gensim",), "keras_nlp": ("keras_nlp",),
    "prophet": ("prophet",), "gym": ("gym.",), "yellowbrick": ("yellowbrick",),
    "pandas": ("pandas", "pd."), "numpy": ("numpy", "np."),
}
_ANSI = re.compile(r"\\x1b\[[0-9;]*m|\x1b\[[0-9;]*m")
_CELL_COUNT = re.compile(r"(Cell In ?\[|<ipython-input-)(\d+)")


def published_estimate(traceback: str) -> str:
    """The published heuristic, step for step: keyword hits per library, ``---->`` lines
    x3, ties to the library listed first (looked up in the table's key list)."""
    lines = _list_traceback(traceback)
    if not lines:
        return "None"
    hits: defaultdict[str, int] = defaultdict(int)
    try:
        for line in lines:
            for subline in line.splitlines():
                is_crash_line = "---->" in subline
                line_lower = subline.lower()
                for library, keywords in KEYWORDS.items():
                    for keyword in keywords:
                        if keyword in line_lower:
                            hits[library] += 3 if is_crash_line else 1
    except (AttributeError, TypeError):  # an item that is not text
        return "None"
    if not hits:
        return "None"
    return max(hits, key=lambda lib: (hits[lib], -list(KEYWORDS.keys()).index(lib)))


def _list_traceback(traceback: str) -> object:
    """The stored list, ANSI codes stripped (the pattern compiled per call, as published);
    None when it is not a Python literal."""
    try:
        ansi = re.compile(r"\\x1b\[[0-9;]*m")
        return ast.literal_eval(ansi.sub("", traceback))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def study_keyword_estimate(traceback: str) -> str:
    """The keyword loop over the study's 26 libraries (the earlier comparison)."""
    try:
        frames = ast.literal_eval(_ANSI.sub("", traceback))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        frames = [traceback]
    if not isinstance(frames, list):
        frames = [str(frames)]
    hits: defaultdict[str, int] = defaultdict(int)
    for frame in frames:
        for line in str(frame).splitlines():
            weight = 3 if "---->" in line else 1
            lowered = line.lower()
            for library, words in STUDY_KEYWORDS.items():
                for keyword in words:
                    if keyword in lowered:
                        hits[library] += weight
    return max(hits, key=hits.__getitem__) if hits else "None"


def junobench_estimate(traceback: str) -> str:
    return library_cause.estimate(traceback) or "None"


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


def accuracy(rows: list[dict], estimator: Callable[[str], str], *, target: bool,
             held_out: bool) -> tuple[int, int]:
    """Right answers (an answer the label names; keras and tensorflow as one) and rows."""
    correct = total = 0
    for row in rows:
        truth = library_cause.labelled_libraries(row["Libs-cause"])
        if not truth or library_cause.held_out(row) != held_out:
            continue
        if bool(truth & set(library_cause.LIBRARY_CAUSES)) != target:
            continue
        answer = estimator(str(row["traceback"]))
        answer = library_cause.LABEL_SPELLINGS.get(answer.lower(), answer)
        correct += answer in truth
        total += 1
    return correct, total


def timed_round(estimators: dict[str, Callable[[str], str]], tracebacks: list[str],
                chunk: int) -> dict[str, float]:
    """CPU seconds each estimator takes to score all ``tracebacks``, chunk by chunk, the
    estimators taking turns on each chunk (in rotating order) so that load hits all alike."""
    timings = dict.fromkeys(estimators, 0.0)
    names = list(estimators)
    for number, start in enumerate(range(0, len(tracebacks), chunk)):
        part = tracebacks[start:start + chunk]
        for name in names[number % len(names):] + names[:number % len(names)]:
            estimator = estimators[name]
            began = time.process_time()
            for traceback in part:
                estimator(traceback)
            timings[name] += time.process_time() - began
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=64_000, help="tracebacks to score")
    parser.add_argument("--reference", type=Path, default=reference_dir(),
                        help="the reference folder (default: $JUNOBENCH_REFERENCE, else ../shared/reference)")
    parser.add_argument("--chunk", type=int, default=2_000, help="tracebacks per timed chunk")
    parser.add_argument("--rounds", type=int, default=3,
                        help="times the whole workload is scored; each estimator's best round counts")
    args = parser.parse_args(argv)
    table = args.reference / DEV_TABLE
    if not table.is_file():
        print(f"error: {table} not found (pass --reference DIR)", file=sys.stderr)
        return 1
    rows = read_table(table).records()
    tracebacks = workload(rows, args.n)
    estimators: dict[str, Callable[[str], str]] = {
        "junobench": junobench_estimate,
        "published heuristic": published_estimate,
        "study keyword loop": study_keyword_estimate,
    }
    rounds = [timed_round(estimators, tracebacks, args.chunk) for _ in range(max(1, args.rounds))]
    timings = {name: min(times[name] for times in rounds) for name in estimators}
    print(f"{len(tracebacks):,} tracebacks ({len(rows)} dev tracebacks repeated), "
          f"best of {len(rounds)} round(s)")
    for name, seconds in timings.items():
        print(f"  {name:24} {len(tracebacks) / seconds:9,.0f} tracebacks/s  {seconds:6.2f} s")
    for name in ("published heuristic", "study keyword loop"):
        print(f"  speed-up over the {name}: {timings[name] / timings['junobench']:.1f}x")
    print("  (one process, CPU time, chunks interleaved in rotating order; each estimator's "
          "fastest round)")
    print("accuracy (held-out third: never tuned on | tuning rows):")
    for name, estimator in estimators.items():
        cells = []
        for target in (True, False):
            for held in (True, False):
                correct, total = accuracy(rows, estimator, target=target, held_out=held)
                cells.append(f"{correct}/{total} = {correct / total:.1%}")
        print(f"  {name:24} benchmark libraries {cells[0]} | {cells[1]};"
              f"  other libraries {cells[2]} | {cells[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
