"""The site's stylesheet and script (shipped in ``junobench/site/static``), and the
Pygments stylesheet of highlighted code."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from importlib import resources
from typing import Any

from junobench.site.pages import NavLink, Page

#: Files of ``junobench/site/static`` copied to ``assets/``.
STATIC: tuple[str, ...] = ("site.css", "site.js")
#: The Pygments style of code (light, high contrast).
CODE_STYLE = "default"


def nav(data: Any) -> list[NavLink]:
    return []


def pages(data: Any) -> Iterable[Page]:
    for name in STATIC:
        yield Page(f"assets/{name}", None, partial(_static, name))
    yield Page("assets/code.css", CODE_STYLE, code_css)


def _static(name: str) -> dict[str, bytes]:
    return {f"assets/{name}": resources.files("junobench.site").joinpath("static").joinpath(name).read_bytes()}


def code_css() -> dict[str, bytes]:
    """Pygments' rules for highlighted code, scoped to ``.hl``."""
    from pygments.formatters import HtmlFormatter

    rules: str = HtmlFormatter(style=CODE_STYLE).get_style_defs(".hl")
    return {"assets/code.css": rules.encode("utf-8")}
