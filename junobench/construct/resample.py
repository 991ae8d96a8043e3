"""A seeded sample of further crashes from the pool of all Kaggle crashes.

From the pool (the empirical study's ``clusters_Kaggle_final.xlsx``: one row per crash,
``fname, eid, ename, evalue, traceback, …``) drop the notebooks already labeled, keep the
notebooks that import at least one target library (``nb_imports_all_final.xlsx``:
``fname`` and ``imports``, a Python-literal list of module names), and draw ``n`` crashes
with the seed. The same inputs and seed always give the same sample.

>>> pool = [{"fname": f"nb{i}.ipynb", "eid": str(i)} for i in range(6)]
>>> imports = {f"nb{i}.ipynb": {"pandas"} if i % 2 else {"os"} for i in range(6)}
>>> [r["eid"] for r in draw(pool, imports, excluded={"nb5.ipynb"}, libraries=["pandas"],
...                          n=2, seed=43).rows]
['1', '3']
"""

from __future__ import annotations

import ast
import random
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError

#: Top-level modules that count as importing a library (``keras`` is TensorFlow's).
LIBRARY_MODULES: dict[str, frozenset[str]] = {
    "tensorflow": frozenset({"tensorflow", "keras", "tf_keras"}),
    "tensorflow/keras": frozenset({"tensorflow", "keras", "tf_keras"}),
    "keras": frozenset({"tensorflow", "keras", "tf_keras"}),
    "sklearn": frozenset({"sklearn"}),
    "scikit-learn": frozenset({"sklearn"}),
}

#: The paper's resampling: the benchmark's ten libraries, 500 crashes, seed 43.
PAPER_LIBRARIES: tuple[str, ...] = (
    "torch", "sklearn", "tensorflow/keras", "seaborn", "matplotlib", "statsmodels",
    "torchvision", "lightgbm", "pandas", "numpy",
)
PAPER_N = 500
PAPER_SEED = 43
MATCHED_COLUMN = "imported_libraries"


@dataclass
class Sample:
    """The drawn crashes (pool rows plus the target libraries each notebook imports) and
    the counts behind them."""

    rows: list[dict[str, Any]]
    counts: list[tuple[str, int, int]] = field(default_factory=list)  # (step, crashes, notebooks)
    short: bool = False  # the pool had fewer than n crashes: all were taken


def draw(pool: Sequence[Mapping[str, Any]], imports: Mapping[str, Iterable[str]], *,
         excluded: Iterable[str] = (), libraries: Sequence[str], n: int, seed: int,
         notebook_column: str = "fname") -> Sample:
    """Draw ``n`` crashes of ``pool`` (rows in pool order) from notebooks not ``excluded``
    that import one of ``libraries`` (``imports``: notebook → imported module names)."""
    if n < 0:
        raise JunoBenchError(f"cannot draw {n} crashes", hint="give --n 0 or more")
    wanted = {lib: _modules(lib) for lib in libraries}
    excluded = set(excluded)
    counts = [_count("crashes in the pool", pool, notebook_column)]
    rows = [dict(r) for r in pool if r.get(notebook_column) not in excluded]
    counts.append(_count("not labeled before", rows, notebook_column))
    kept = []
    for row in rows:
        top = {m.split(".", 1)[0] for m in imports.get(str(row.get(notebook_column)), ())}
        matched = [lib for lib, modules in wanted.items() if top & modules]
        if matched:
            row[MATCHED_COLUMN] = ", ".join(matched)
            kept.append(row)
    counts.append(_count("importing a target library", kept, notebook_column))
    short = len(kept) < n
    if short:
        warnings.warn(f"the pool has {len(kept)} eligible crashes, fewer than the {n} asked "
                      "for: all of them are taken", stacklevel=2)
        chosen = list(range(len(kept)))
    else:
        chosen = sorted(random.Random(seed).sample(range(len(kept)), n))
    drawn = [kept[i] for i in chosen]
    counts.append(_count("drawn", drawn, notebook_column))
    return Sample(drawn, counts, short)


def resample(pool: str | Path, imports: str | Path, *, exclude: str | Path | None,
             libraries: Sequence[str], n: int, seed: int, out: str | Path,
             notebook_column: str = "fname", imports_column: str = "imports") -> Sample:
    """Read the pool, imports and already-labeled tables; write the drawn crashes to ``out``."""
    from junobench.data.tables import read_table, write_table

    pool_table = read_table(pool)
    pool_table.require([notebook_column], hint="the pool has one row per crash with its notebook")
    imports_table = read_table(imports)
    imports_table.require([notebook_column, imports_column],
                          hint="the imports table has a notebook column and a list of modules")
    excluded: set[str] = set()
    if exclude is not None:
        labeled = read_table(exclude)
        labeled.require([notebook_column], hint="the labeled table names its notebooks")
        excluded = {r[notebook_column] for r in labeled.records() if r[notebook_column]}
    sample = draw(pool_table.records(), read_imports(imports_table, notebook_column,
                                                     imports_column),
                  excluded=excluded, libraries=libraries, n=n, seed=seed,
                  notebook_column=notebook_column)
    columns = [c for c in pool_table.columns if c != MATCHED_COLUMN] + [MATCHED_COLUMN]
    write_table(out, sample.rows, columns)
    return sample


def read_imports(table: Any, notebook_column: str = "fname", imports_column: str = "imports"
                 ) -> dict[str, set[str]]:
    """Notebook → imported modules from an imports table (a ``tables.Table``); every row
    whose imports cell is not a list of names is reported at once."""
    out: dict[str, set[str]] = {}
    bad = []
    for number, row in enumerate(table.records(), start=2):
        value = row.get(imports_column)
        modules = _module_list(value)
        if modules is None:
            bad.append(f"row {number} ({row.get(notebook_column)}): {str(value)[:60]!r}")
            continue
        out.setdefault(row.get(notebook_column), set()).update(modules)
    if bad:
        raise JunoBenchError(
            f"{len(bad)} imports cell(s) are not a list of module names: " + "; ".join(bad[:5])
            + (" …" if len(bad) > 5 else ""), file=table.path,
            hint="write each as a Python list, e.g. ['pandas', 'sklearn.svm']")
    return out


def _module_list(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = value
    else:
        text = str(value).strip()
        if not text:
            return []
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(items, str):
            items = [items]
    if not isinstance(items, (list, tuple, set)) or not all(isinstance(m, str) for m in items):
        return None
    return [m.strip() for m in items if m.strip()]


def _modules(library: str) -> frozenset[str]:
    return LIBRARY_MODULES.get(library, frozenset({library}))


def _count(name: str, rows: Sequence[Mapping[str, Any]], column: str) -> tuple[str, int, int]:
    return name, len(rows), len({r.get(column) for r in rows})
