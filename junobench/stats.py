"""Distributions of the benchmark: label counts, cross-tabulations by library, licences.

:func:`stats` loads a source's ``cases`` (any source, the filters of
:func:`junobench.load`) and counts them with :func:`compute`, a pure function of the
records (:mod:`junobench.data.distributions`). The plots are in :mod:`junobench.plots`.

>>> s = stats("sample")
>>> s.cases, s.counts["library"]["pandas"]
(10, 2)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from junobench.data.distributions import DIMENSIONS as DIMENSIONS
from junobench.data.distributions import FIELDS as FIELDS
from junobench.data.distributions import NOT_RECORDED as NOT_RECORDED
from junobench.data.distributions import SEGMENTED as SEGMENTED
from junobench.data.distributions import TITLES as TITLES
from junobench.data.distributions import Stats as Stats
from junobench.data.distributions import compute as compute
from junobench.data.snapshot import DEFAULT_SOURCE


def stats(source: str | Path = DEFAULT_SOURCE, *, revision: str | None = None,
          skip_invalid: bool = False, **filters: Any) -> Stats:
    """The :class:`Stats` of a source's cases, filtered like :func:`junobench.load`.

    >>> stats("sample", library="pandas").counts["root_cause"]
    {'data confusion': 1, 'library cause': 1}
    """
    from junobench.loader import load

    cases = load(source, "cases", revision=revision, skip_invalid=skip_invalid, **filters)
    return compute(cases.select_columns(list(FIELDS)).to_list())
