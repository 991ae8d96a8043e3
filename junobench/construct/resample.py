"""A seeded sample of further crashes from the pool of all Kaggle crashes.

The published procedure (the paper's resampling, reproduced exactly by default):

1. the pool is the empirical study's ``clusters_Kaggle_final.xlsx``: one row per crash
   (``fname, eid, ename, evalue, traceback, …``);
2. crashes of notebooks already labeled are dropped: the ``fname`` of every Kaggle row
   (``nb_source`` 1) of the labeled table (``cluster_sampled_labeled_final.xlsx``);
3. a notebook stays when its import list (``nb_imports_all_final.xlsx``: ``fname`` and
   ``imports``, a Python-literal list of module names) contains one of
   :data:`PUBLISHED_LIBRARIES` exactly (``sklearn.svm`` is not ``sklearn``);
4. when more than ``n`` notebooks remain, ``n`` crashes (rows) are drawn with pandas'
   ``DataFrame.sample(n=n, random_state=seed)``, in the order drawn; otherwise every
   remaining crash is kept;
5. the rows are written with the labeled table's columns, in its order: the label
   columns blank, for labelling, and pool columns the labeled table lacks dropped.

:class:`Procedure` holds these rules; its other values are the richer variants
(submodules and library groups match, ``random.Random`` in pool order, the pool's
columns plus the matched libraries).

>>> pool = [{"fname": f"nb{i}.ipynb", "eid": str(i)} for i in range(6)]
>>> imports = {f"nb{i}.ipynb": {"pandas"} if i % 2 else {"os"} for i in range(6)}
>>> [r["eid"] for r in draw(pool, imports, excluded={"nb5.ipynb"},
...                          procedure=Procedure(libraries=("pandas",)), n=1, seed=43).rows]
['3']
"""

from __future__ import annotations

import ast
import random
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from junobench.errors import JunoBenchError

#: The published draw's libraries, matched exactly against a notebook's import list.
PUBLISHED_LIBRARIES: tuple[str, ...] = (
    "torch", "sklearn", "tensorflow", "keras", "seaborn", "matplotlib", "statsmodels",
    "torchvision", "lightgbm",
)
PUBLISHED_N = 500
PUBLISHED_SEED = 43
#: Top-level modules that count as importing a library group (``match="module"``).
LIBRARY_MODULES: dict[str, frozenset[str]] = {
    "tensorflow/keras": frozenset({"tensorflow", "keras", "tf_keras"}),
    "scikit-learn": frozenset({"sklearn"}),
}
MATCHED_COLUMN = "imported_libraries"
#: The labeled table's column that says where a notebook comes from (1: Kaggle).
SOURCE_COLUMN, KAGGLE_SOURCE = "nb_source", "1"
#: Columns that name a notebook by URL, for excluded tables without ``fname``.
URL_COLUMNS: tuple[str, ...] = ("NotebookUrl", "nb_url_kaggle", "notebook_url", "url")

Match = Literal["exact", "module"]
Sampler = Literal["pandas", "python"]
Columns = Literal["labeled", "pool"]


@dataclass(frozen=True)
class Procedure:
    """How crashes are drawn; the defaults are the published procedure."""

    libraries: tuple[str, ...] = PUBLISHED_LIBRARIES
    #: ``exact``: a library is an item of the import list; ``module``: an import's
    #: top-level package, library groups (``tensorflow/keras``) included.
    match: Match = "exact"
    #: ``pandas``: ``DataFrame.sample`` rows in drawn order, all rows when the pool has no
    #: more notebooks than ``n``; ``python``: ``random.Random`` rows in pool order.
    sampler: Sampler = "pandas"
    #: ``labeled``: the labeled table's columns (blank where the pool lacks them);
    #: ``pool``: the pool's columns plus :data:`MATCHED_COLUMN`.
    columns: Columns = "labeled"
    #: Only the labeled table's rows with this ``nb_source`` are excluded (None: all).
    excluded_source: str | None = KAGGLE_SOURCE


@dataclass
class Sample:
    """The drawn crashes (pool rows, plus the libraries matched in :data:`MATCHED_COLUMN`)
    and the counts behind them."""

    rows: list[dict[str, Any]]
    counts: list[tuple[str, int, int]] = field(default_factory=list)  # (step, crashes, notebooks)
    short: bool = False  # the pool had no more than n notebooks: every crash was taken


def draw(pool: Sequence[Mapping[str, Any]], imports: Mapping[str, Iterable[str]], *,
         excluded: Iterable[str] = (), procedure: Procedure = Procedure(), n: int,
         seed: int, notebook_column: str = "fname") -> Sample:
    """Draw ``n`` crashes of ``pool`` from notebooks not ``excluded`` whose imports
    (``imports``: notebook → imported module names) match ``procedure.libraries``."""
    if n < 0:
        raise JunoBenchError(f"cannot draw {n} crashes", hint="give --n 0 or more")
    excluded = set(excluded)
    counts = [_count("crashes in the pool", pool, notebook_column)]
    rows = [dict(r) for r in pool if r.get(notebook_column) not in excluded]
    counts.append(_count("not labeled before", rows, notebook_column))
    kept = []
    for row in rows:
        matched = matching_libraries(imports.get(str(row.get(notebook_column)), ()), procedure)
        if matched:
            row[MATCHED_COLUMN] = ", ".join(matched)
            kept.append(row)
    counts.append(_count("importing a target library", kept, notebook_column))
    notebooks = counts[-1][2]
    if procedure.sampler == "pandas":
        short = notebooks <= n
        chosen = list(range(len(kept))) if short else pandas_sample(len(kept), n, seed)
    else:
        short = len(kept) < n
        chosen = (list(range(len(kept))) if short
                  else sorted(random.Random(seed).sample(range(len(kept)), n)))
    if short:
        warnings.warn(f"the pool has {notebooks} eligible notebooks ({len(kept)} crashes), "
                      f"no more than the {n} asked for: every crash is taken", stacklevel=2)
    drawn = [kept[i] for i in chosen]
    counts.append(_count("drawn", drawn, notebook_column))
    return Sample(drawn, counts, short)


def pandas_sample(size: int, n: int, seed: int) -> list[int]:
    """Positions drawn by ``DataFrame.sample(n=n, random_state=seed)`` from ``size`` rows,
    in the order drawn."""
    import pandas as pd

    positions: list[int] = pd.RangeIndex(size).to_series().sample(n=n, random_state=seed).tolist()
    return positions


def matching_libraries(modules: Iterable[str], procedure: Procedure) -> list[str]:
    """The libraries of ``procedure`` that an import list matches, in its order."""
    if procedure.match == "exact":
        imported = set(modules)
        return [lib for lib in procedure.libraries if lib in imported]
    top = {m.split(".", 1)[0] for m in modules}
    return [lib for lib in procedure.libraries
            if top & LIBRARY_MODULES.get(lib, frozenset({lib}))]


def resample(pool: str | Path, imports: str | Path, *, exclude: Sequence[str | Path] = (),
             procedure: Procedure = Procedure(), n: int = PUBLISHED_N,
             seed: int = PUBLISHED_SEED, out: str | Path, notebook_column: str = "fname",
             imports_column: str = "imports") -> Sample:
    """Read the pool, the imports and the tables of notebooks to exclude (the first is the
    labeled table, whose columns the output takes); write the drawn crashes to ``out``."""
    from junobench.data.tables import read_table, write_table

    pool_table = read_table(pool)
    pool_table.require([notebook_column], hint="the pool has one row per crash with its notebook")
    imports_table = read_table(imports)
    imports_table.require([notebook_column, imports_column],
                          hint="the imports table has a notebook column and a list of modules")
    excluded: set[str] = set()
    labeled_columns: list[str] | None = None
    for path in exclude:
        table = read_table(path)
        if labeled_columns is None:
            labeled_columns = list(table.columns)
        excluded |= excluded_notebooks(table, notebook_column, procedure.excluded_source)
    sample = draw(pool_table.records(), read_imports(imports_table, notebook_column,
                                                     imports_column),
                  excluded=excluded, procedure=procedure, n=n, seed=seed,
                  notebook_column=notebook_column)
    if procedure.columns == "labeled" and labeled_columns is not None:
        columns = labeled_columns
        rows = [{c: row.get(c, "") for c in columns} for row in sample.rows]
    else:
        columns = [c for c in pool_table.columns if c != MATCHED_COLUMN] + [MATCHED_COLUMN]
        rows = sample.rows
    write_table(out, rows, columns)
    return sample


def excluded_notebooks(table: Any, notebook_column: str = "fname",
                       source: str | None = KAGGLE_SOURCE) -> set[str]:
    """The notebooks (study file names) of a ``tables.Table`` of crashes to exclude: its
    ``notebook_column``, or the file name of its notebook URL (:mod:`naming`) where that
    is empty. With ``source``, only rows whose ``nb_source`` is ``source`` (when the table
    has that column)."""
    from junobench.construct.naming import file_name_of_url

    url_column = next((c for c in URL_COLUMNS if c in table.columns), None)
    if notebook_column not in table.columns and url_column is None:
        raise JunoBenchError(f"no {notebook_column!r} column nor a notebook URL column "
                             f"({', '.join(URL_COLUMNS)})", file=table.path,
                             hint="a table of notebooks to exclude names them by file name or URL")
    names: set[str] = set()
    bad = []
    for number, row in enumerate(table.records(), start=2):
        if source is not None and SOURCE_COLUMN in row and _key(row[SOURCE_COLUMN]) != source:
            continue
        name = row.get(notebook_column)
        if name not in (None, ""):
            names.add(str(name))
        elif url_column is not None and row.get(url_column) not in (None, ""):
            try:
                names.add(file_name_of_url(str(row[url_column])))
            except ValueError as error:
                bad.append(f"row {number}: {error}")
    if bad:
        raise JunoBenchError("; ".join(bad[:5]) + (" …" if len(bad) > 5 else ""),
                             file=table.path, hint="give Kaggle notebook URLs")
    return names


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
        if len(text) > 1_000_000:
            return None
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return None
        if isinstance(items, str):
            items = [items]
    if not isinstance(items, (list, tuple, set)) or not all(isinstance(m, str) for m in items):
        return None
    return list(items)


def _key(value: Any) -> str:
    """``1``, ``1.0`` and ``'1'`` alike."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _count(name: str, rows: Sequence[Mapping[str, Any]], column: str) -> tuple[str, int, int]:
    return name, len(rows), len({r.get(column) for r in rows})
