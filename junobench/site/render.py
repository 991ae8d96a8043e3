"""Jinja templates of the site, and what every page carries.

Every page has the same Content-Security-Policy: scripts and styles only from the site's
own files (no inline script, no ``<style>`` element), images from the site or ``data:``
URIs, nothing else loaded, no form, no frame, no base URL. Templates autoescape; the
HTML fragments of notebooks reach them already cleaned (:mod:`.sanitize`). Control
characters and bidirectional overrides and isolates anywhere in a page are shown as marks
(``‹U+202E›``): a line of code, a message or a label reads as it is.

>>> "script-src 'self'" in CSP and "'unsafe-inline'" not in CSP.replace("style-src-attr 'unsafe-inline'", "")
True
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jinja2

from junobench.detection.evaluate import format_interval, with_interval
from junobench.safety.text import visible_controls

#: The Content-Security-Policy of every page (also sent by ``junobench view``). Inline
#: ``style`` attributes are allowed (terminal colours, bar widths): none of the properties
#: the sanitizer keeps can load anything, and ``img-src``/``font-src`` would stop it.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self'; connect-src 'none'; media-src 'none'; "
       "object-src 'none'; frame-src 'none'; child-src 'none'; worker-src 'none'; "
       "manifest-src 'none'; base-uri 'none'; form-action 'none'")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The templates of ``junobench/site/templates``, autoescaped, strict about names."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("junobench.site", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["number"] = number
    env.filters["percent"] = percent
    env.filters["interval"] = format_interval
    env.filters["with_interval"] = with_interval
    env.filters["tojson_attr"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env


def render_page(template: str, *, root: str, title: str, data: Any, **context: Any) -> bytes:
    """A page of the site: ``template`` with the layout's context (``root``: the way from
    the page to the site's root, ``""`` or ``"../"``)."""
    from junobench.site.pages import navigation

    html = environment().get_template(template).render(
        csp=CSP, root=root, title=title, nav=navigation(data), site_title=data.title, **context)
    return visible_controls(html).encode("utf-8")


def number(value: float | None, digits: int = 3) -> str:
    """A score as the text reports print it (``n/a`` when undefined)."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def percent(part: int, whole: int) -> str:
    """``part`` of ``whole`` in percent, for bar widths."""
    return f"{100 * part / whole:.1f}" if whole else "0"

