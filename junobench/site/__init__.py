"""The benchmark as a static site: the cases, their notebooks and evaluation results.

:func:`~junobench.site.build.site` (``junobench site``) writes the site; :func:`view`
(``junobench view``) builds it into a cache and serves it on 127.0.0.1. Pages come from
the builders of :mod:`junobench.site.pages`; notebook content is made safe by
:mod:`junobench.site.sanitize` before any template sees it. Needs the ``site`` extra
(nbconvert, nh3).
"""

from __future__ import annotations

from junobench.site.build import SiteSummary, site
from junobench.site.serve import view

__all__ = ["SiteSummary", "site", "view"]
