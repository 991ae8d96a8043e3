"""The benchmark as a static site: the cases, their notebooks and evaluation results.

:func:`~junobench.site.build.site` (``junobench site``) writes the site; :func:`view`
(``junobench view``) builds it into a cache and serves it on 127.0.0.1. Pages come from
the builders of :mod:`junobench.site.pages`; notebook content is made safe by
:mod:`junobench.site.sanitize` before any template sees it. Needs the ``site`` extra
(nbconvert, nh3). Importing this package imports nothing else; ``site``, ``view`` and ``SiteSummary`` are
loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from junobench.site.build import SiteSummary, site
    from junobench.site.serve import view

__all__ = ["SiteSummary", "site", "view"]
_LAZY = {"site": "junobench.site.build", "SiteSummary": "junobench.site.build", "view": "junobench.site.serve"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
