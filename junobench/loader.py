"""``junobench.load``: JunoBench records from any source, cached on content, filtered.

The one place that knows every kind of source: a snapshot directory or the bundled
sample (records prepared by :mod:`junobench.data`), an export (read by
:mod:`junobench.hub.read_export`), or a Hub dataset repo holding either.

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
from collections.abc import Iterable
from pathlib import Path

import datasets

from junobench.data.build import build
from junobench.data.filters import apply_filters, normalise_filters
from junobench.data.snapshot import DEFAULT_SOURCE, resolve
from junobench.hub.read_export import is_export, read_export

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
    if is_export(root):
        return read_export(root, config, criteria, cache_dir=cache_dir)
    dataset, report = build(root, config, skip_invalid=skip_invalid, cache_dir=cache_dir)
    for line in report.summary():
        logger.warning(line)
    return apply_filters(dataset, criteria)
