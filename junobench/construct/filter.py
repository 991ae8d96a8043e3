"""The benchmark's inclusion criteria over the empirical study's labeled crashes.

Input: the study's labelling table (``cluster_sampled_labeled_final.xlsx``: ``fname,
nb_source, label_if_ML_bug, label_root_cause, …``). A crash is a candidate when

1. it comes from a Kaggle notebook (``nb_source == 1``);
2. it involves an ML library (``label_if_ML_bug`` is the study's "ML/data science library
   related" label) or is notebook-specific (``label_root_cause`` starts with
   ``nb specific``);
3. its root cause can be reproduced inside a notebook: not one of the environment-related
   causes of :data:`ENVIRONMENT_ROOT_CAUSES`.

>>> rows = [{"fname": "a.ipynb", "nb_source": 1.0, "label_if_ML_bug": ML_BUG,
...          "label_root_cause": "misunderstanding of APIs"},
...         {"fname": "b.ipynb", "nb_source": 1.0, "label_if_ML_bug": "general code error",
...          "label_root_cause": "nb specific - execution order"},
...         {"fname": "c.ipynb", "nb_source": 2.0, "label_if_ML_bug": ML_BUG,
...          "label_root_cause": "invalid argument"}]
>>> kept, steps = filter_candidates(rows)
>>> [s.rows for s in steps], [r["fname"] for r in kept]
([3, 2, 2, 2], ['a.ipynb', 'b.ipynb'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError

ML_BUG = "ML/data science library related (ML imports, error raised by library)"

#: Root causes outside what a notebook can reproduce (the environment's, not the code's).
ENVIRONMENT_ROOT_CAUSES: tuple[str, ...] = (
    "module not installed",
    "change of environment",
    "file/path not found or exist",
    "library versions incompatible",
    "settings(permission, environment)",
    "external control (window closed)",
    "insufficient resources",
    "error inside library",
)

COLUMNS = {
    "source": "nb_source",
    "ml_bug": "label_if_ML_bug",
    "root_cause": "label_root_cause",
    "notebook": "fname",
}


@dataclass(frozen=True)
class Criteria:
    """What makes a labeled crash a benchmark candidate (the paper's values by default)."""

    sources: tuple[str, ...] = ("1",)
    ml_bug_labels: tuple[str, ...] = (ML_BUG,)
    notebook_specific_prefixes: tuple[str, ...] = ("nb specific",)
    excluded_root_causes: tuple[str, ...] = ENVIRONMENT_ROOT_CAUSES
    columns: Mapping[str, str] = field(default_factory=lambda: dict(COLUMNS))


@dataclass(frozen=True)
class Step:
    """How many crashes (rows) and notebooks are left after one criterion."""

    name: str
    rows: int
    notebooks: int

    def __str__(self) -> str:
        return f"{self.name}: {self.rows} crashes in {self.notebooks} notebooks"


def filter_candidates(rows: Sequence[Mapping[str, Any]], criteria: Criteria = Criteria()
                      ) -> tuple[list[Mapping[str, Any]], list[Step]]:
    """The candidate rows (in input order) and the count after each criterion."""
    col = criteria.columns
    sources = {_key(s) for s in criteria.sources}
    ml_bug = {_key(s) for s in criteria.ml_bug_labels}
    prefixes = tuple(_key(p) for p in criteria.notebook_specific_prefixes)
    excluded = {_key(c) for c in criteria.excluded_root_causes}

    def ml_or_notebook(row: Mapping[str, Any]) -> bool:
        return (_key(row.get(col["ml_bug"])) in ml_bug
                or _key(row.get(col["root_cause"])).startswith(prefixes))

    steps = [_step("labeled crashes", rows, col["notebook"])]
    kept = [r for r in rows if _key(r.get(col["source"])) in sources]
    steps.append(_step("Kaggle notebooks", kept, col["notebook"]))
    kept = [r for r in kept if ml_or_notebook(r)]
    steps.append(_step("ML library or notebook-specific", kept, col["notebook"]))
    kept = [r for r in kept if _key(r.get(col["root_cause"])) not in excluded]
    steps.append(_step("reproducible root cause", kept, col["notebook"]))
    return kept, steps


def filter_table(labeled: str | Path, out: str | Path, criteria: Criteria = Criteria()
                 ) -> list[Step]:
    """Read the labeling table, write the candidates (same columns) to ``out``."""
    from junobench.data.tables import read_table, write_table

    labeled, out = Path(labeled), Path(out)
    if out.resolve() == labeled.resolve():
        raise JunoBenchError("the output would overwrite the input", file=out,
                             hint="write the candidates to another file")
    table = read_table(labeled)
    table.require(criteria.columns.values(),
                  hint="the empirical study's labeling table (cluster_sampled_labeled_final.xlsx)"
                       " has them; or name yours with --column FIELD=NAME")
    kept, steps = filter_candidates(table.records(), criteria)
    write_table(out, kept, table.columns)
    return steps


def _step(name: str, rows: Iterable[Mapping[str, Any]], notebook_column: str) -> Step:
    rows = list(rows)
    return Step(name, len(rows), len({r.get(notebook_column) for r in rows}))


def _key(value: Any) -> str:
    """A cell compared by meaning: stripped, lower-case, integral floats without '.0'."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip().lower()
    if text.endswith(".0") and text[:-2].lstrip("-").isdigit():
        text = text[:-2]
    return text
