"""Label filters: the keywords ``load()``, ``ls``, ``stats``, ``tasks`` and ``evaluate`` take.

A filter keyword names a label dimension; its values are OR-ed, keywords are AND-ed.
The keyword is not always the record field's name: ``origin`` filters the ``source``
field (``labeled in empirical study`` / ``newly sampled``), because ``source`` is
already the name of the argument that says where the benchmark comes from.

>>> normalise_filters({"library": "tensorflow/keras", "origin": ["newly sampled"]})
{'library': ['tensorflow'], 'source': ['newly sampled']}
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from junobench import vocab
from junobench.errors import JunoBenchError

if TYPE_CHECKING:
    import datasets

#: Filter keyword → the record field it filters.
FILTER_FIELDS: dict[str, str] = {
    "library": "library",
    "root_cause": "root_cause",
    "crash_type": "crash_type",
    "pipeline_stage": "pipeline_stage",
    "origin": "source",
}
#: Record field → its vocabulary (values outside it are accepted when the data has them).
FIELD_VALUES: dict[str, tuple[str, ...]] = {
    "library": vocab.LIBRARIES,
    "root_cause": vocab.ROOT_CAUSES,
    "crash_type": vocab.CRASH_TYPES,
    "pipeline_stage": vocab.PIPELINE_STAGES,
    "source": vocab.ORIGINS,
}
_KEYWORDS = {field: keyword for keyword, field in FILTER_FIELDS.items()}
_LIBRARY_ALIASES = {label: prefix for prefix, label in vocab.LIBRARY_LABELS.items()}

Criteria = dict[str, list[str]]


def normalise_filters(filters: Mapping[str, str | Iterable[str] | None]) -> Criteria:
    """Check filter keywords and turn each value into a list, keyed by record field
    (``None`` means no filter; a library's display name becomes its prefix)."""
    out: Criteria = {}
    for name, value in filters.items():
        if name not in FILTER_FIELDS:
            hint = f"filters are {', '.join(FILTER_FIELDS)}"
            if name == "source":
                hint = "the case-origin filter is called 'origin' (source= names the benchmark's location)"
            raise JunoBenchError(f"unknown filter {name!r}", hint=hint)
        if value is None:
            continue
        values = [value] if isinstance(value, str) else list(value)
        if not all(isinstance(v, str) for v in values):
            raise JunoBenchError(f"filter {name!r} takes strings, got {values!r}")
        if name == "library":
            values = [_LIBRARY_ALIASES.get(v, v) for v in values]
        if values:
            out[FILTER_FIELDS[name]] = values
    return out


def apply_filters(dataset: datasets.Dataset, criteria: Mapping[str, list[str]]) -> datasets.Dataset:
    """Rows matching every criterion (keyed by record field, as :func:`normalise_filters`
    returns them); an unknown value fails with the closest valid ones."""
    keep = matching_indices(dataset.data, criteria)
    return dataset if keep is None else dataset.select(keep)


def matching_indices(table: Any, criteria: Mapping[str, list[str]]) -> list[int] | None:
    """The indices of the rows of ``table`` (an Arrow table, or a dataset's) matching
    every criterion, in order; ``None`` without criteria (every row). An unknown value
    fails with the closest valid ones."""
    if not criteria:
        return None
    keep: list[int] | None = None
    for name, values in criteria.items():
        column = table.column(name).to_pylist()
        check_recorded(name, column)
        check_values(name, values, {v for v in column if v is not None})
        wanted = set(values)
        rows = {i for i, v in enumerate(column) if v in wanted}
        keep = sorted(rows if keep is None else rows.intersection(keep))
    return keep or []


def matches(record: Mapping[str, object], criteria: Mapping[str, Collection[str]]) -> bool:
    """Whether a record (a mapping of field → value) matches every criterion.

    >>> matches({"library": "torch", "source": "newly sampled"}, {"source": ["newly sampled"]})
    True
    """
    return all(record.get(field) in values for field, values in criteria.items())


def filter_rows(rows: Iterable[Mapping[str, object]], criteria: Mapping[str, Collection[str]]
                ) -> list[Mapping[str, object]]:
    """The records matching every criterion, after :func:`check_recorded` of each field.

    >>> filter_rows([{"source": "newly sampled"}, {"source": None}], {"source": ["newly sampled"]})
    [{'source': 'newly sampled'}]
    """
    rows = list(rows)
    for field in criteria:
        check_recorded(field, [row.get(field) for row in rows])
    return [row for row in rows if matches(row, criteria)]


def check_recorded(field: str, column: Collection[object]) -> None:
    """Fail when no case of the source records ``field`` (a table without the ``source``
    column, filtered by origin): the filter would silently match nothing.

    >>> check_recorded("source", [None, None])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    junobench.errors.JunoBenchError: cannot filter by origin: no case of this source records it (...)
    """
    if column and all(value is None for value in column):
        keyword = _KEYWORDS.get(field, field)
        column_name = "source" if field == "source" else field
        raise JunoBenchError(
            f"cannot filter by {keyword}: no case of this source records it",
            hint=f"the table benchmark_desc.xlsx of this source has no `{column_name}` values")


def check_values(field: str, values: Iterable[str], present: set[str]) -> None:
    """Fail on a value of ``field`` that is neither in the data nor in its vocabulary."""
    for value in values:
        if value not in present and value not in FIELD_VALUES[field]:
            choices = sorted(present | set(FIELD_VALUES[field]))
            close = difflib.get_close_matches(value, choices, n=3, cutoff=0.4)
            hint = f"did you mean {', '.join(map(repr, close))}?" if close else (
                f"values are {', '.join(map(repr, choices))}")
            raise JunoBenchError(f"no {_KEYWORDS.get(field, field)} {value!r} in JunoBench", hint=hint)
