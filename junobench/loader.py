"""``junobench.load``: JunoBench records from any source, cached on content, filtered.

The one place that knows every kind of source: a snapshot directory or the bundled
sample (records prepared by :mod:`junobench.data`), an export (read by
:mod:`junobench.data.export`), or a Hub dataset repo holding either.

>>> import junobench
>>> cases = junobench.load("sample", "cases", library=["pandas", "numpy"])
>>> list(cases["case_id"])
['numpy_1', 'pandas_1', 'pandas_2']
>>> notebooks = junobench.load("sample", "notebooks", root_cause="API misuse")
>>> list(notebooks["instance"])
['matplotlib_1_reproduced', 'matplotlib_1_fixed', 'statsmodels_1_reproduced', 'statsmodels_1_fixed']
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from junobench.data.export import is_export, read_export
from junobench.data.filters import Criteria, apply_filters, matching_indices, normalise_filters
from junobench.data.snapshot import DEFAULT_SOURCE, fingerprint, resolve

if TYPE_CHECKING:
    import datasets

logger = logging.getLogger("junobench")


def load(
    source: str | Path = DEFAULT_SOURCE,
    config: str = "cases",
    *,
    revision: str | None = None,
    skip_invalid: bool = False,
    cache_dir: str | Path | None = None,
    **filters: str | Iterable[str] | None,
) -> datasets.Dataset:
    """JunoBench records of ``config`` (``cases`` or ``notebooks``), split ``test``.

    ``source`` is a snapshot directory, ``"sample"`` (the bundled mini benchmark) or a Hub
    dataset repo id (default ``PELAB-LiU/JunoBench``, at ``revision``). Filters —
    ``library``, ``root_cause``, ``crash_type``, ``pipeline_stage`` and ``origin`` (the
    ``source`` field: ``labeled in empirical study`` or ``newly sampled``) — take a
    value or a list of values; a record must match one value of every filter given.
    Problems are logged once, on the ``junobench`` logger. A ``source`` holding an export
    (``junobench export``: a directory, or a Hub repo with its parquet files) is read from
    its parquet (memory-mapped from an Arrow copy in the cache), instead of rebuilding the
    records.
    """
    criteria = normalise_filters(filters)
    root = resolve(source, revision=revision)
    return _load_root(root, config, criteria, skip_invalid=skip_invalid, cache_dir=cache_dir)


def load_rows(
    source: str | Path = DEFAULT_SOURCE,
    config: str = "cases",
    columns: Sequence[str] | None = None,
    *,
    revision: str | None = None,
    skip_invalid: bool = False,
    cache_dir: str | Path | None = None,
    **filters: str | Iterable[str] | None,
) -> list[dict[str, Any]]:
    """The records :func:`load` gives, as one dict per record holding ``columns`` (default:
    every field). Records prepared before are read straight from their Arrow files
    (:mod:`junobench.data.prepared`), without importing ``datasets``: the fast path of the
    light verbs (``junobench ls``).
    """
    criteria = normalise_filters(filters)
    root = resolve(source, revision=revision)
    if not is_export(root):
        from junobench.data.prepared import recall

        found = recall(root, config, content=fingerprint(root), skip_invalid=skip_invalid,
                       cache_dir=cache_dir)
        if found is not None:
            table, report = found
            if all(name in table.column_names for name in (*(columns or ()), *criteria)):
                _log(root, report.summary())
                keep = matching_indices(table, criteria)
                rows: list[dict[str, Any]] = table.select(list(columns or table.column_names)).to_pylist()
                return rows if keep is None else [rows[i] for i in keep]  # (Table.take imports pandas)
    dataset = _load_root(root, config, criteria, skip_invalid=skip_invalid, cache_dir=cache_dir)
    if columns is not None:
        dataset = dataset.select_columns(list(columns))
    records: list[dict[str, Any]] = dataset.to_list()
    return records


def _load_root(root: Path, config: str, criteria: Criteria, *, skip_invalid: bool,
               cache_dir: str | Path | None) -> datasets.Dataset:
    if is_export(root):
        return read_export(root, config, criteria, cache_dir=cache_dir)
    from junobench.data.build import build

    dataset, report = build(root, config, skip_invalid=skip_invalid, cache_dir=cache_dir)
    _log(root, report.summary())
    return apply_filters(dataset, criteria)


#: The notes logged by this process, with their snapshot: each is logged once, however
#: often the same records are loaded (``load(S, "cases")`` then ``load(S, "notebooks")``).
_LOGGED: set[tuple[str, str]] = set()


def _log(root: Path, lines: list[str]) -> None:
    for line in lines:
        if (str(root), line) not in _LOGGED:
            _LOGGED.add((str(root), line))
            logger.warning(line)
