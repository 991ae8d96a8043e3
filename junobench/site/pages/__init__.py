"""The site's page builders, one module each, listed in :data:`BUILDERS`.

A builder module defines ``nav(data) -> list[NavLink]`` (its entries in the navigation
bar, none when it has nothing to show) and ``pages(data) -> Iterable[Page]``. Adding a
kind of page (a figure gallery, say) is one module here and its name in the list.

A :class:`Page` names its path, the inputs it shows (digested into its key: a page whose
key is unchanged is not rendered again) and how to render it: the page's bytes and the
files it needs (images), by site path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: Builder modules under ``junobench.site.pages``, in the navigation bar's order.
BUILDERS: tuple[str, ...] = ("assets", "index", "cases", "evaluation", "figures")


@dataclass(frozen=True)
class NavLink:
    """An entry of the navigation bar (``href`` relative to the site's root)."""

    title: str
    href: str


@dataclass(frozen=True)
class Page:
    """One page (or asset) of the site."""

    path: str
    #: Everything the content depends on besides the site's code (JSON-able).
    inputs: Any
    #: Renders the content: site path → bytes (the page itself, and files it needs).
    render: Callable[[], dict[str, bytes]]


def builders() -> list[ModuleType]:
    """The builder modules, imported."""
    return [importlib.import_module(f"{__name__}.{name}") for name in BUILDERS]


def navigation(data: Any) -> list[NavLink]:
    """Every builder's navigation entries, in order."""
    return [link for module in builders() for link in module.nav(data)]


def all_pages(data: Any) -> Iterable[Page]:
    """Every page of every builder."""
    for module in builders():
        yield from module.pages(data)
