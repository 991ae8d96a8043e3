"""What a notebook wrote, made safe to show in a page: nothing it holds runs as script,
loads anything, or takes a name the page's own code uses.

Notebooks are untrusted. Every HTML fragment that comes from one (an HTML or Markdown
output, a Markdown cell, a traceback turned into HTML) goes through nh3 (the Ammonia
sanitizer) with an allow-list: no script, style or frame elements, no event attributes,
links only to ``http``/``https``/``mailto``, images only from ``data:image/…`` URIs (a
remote image would be a request leaving the page), ``id``\\ s prefixed (no element takes
a name such as ``window.flag``), classes limited to the few the site styles, and inline
styles limited to colours and alignment, calling no function but a colour's. Raster
images are checked by their magic bytes; SVG is only ever shown through ``<img>`` (an
image document runs no script).

>>> clean_html('<img src="x" onerror="window.pwned=1"><script>alert(1)</script><b id="pwned">b</b>')
'<img><b id="nb-pwned">b</b>'
>>> clean_html('<a href="javascript:alert(1)">x</a><a href="https://kaggle.com">k</a>')
'<a rel="noopener noreferrer">x</a><a href="https://kaggle.com" rel="noopener noreferrer">k</a>'
>>> image_kind(b"\\x89PNG\\r\\n\\x1a\\n..."), image_kind(b"<svg onload=alert(1)>")
('image/png', None)
"""

from __future__ import annotations

import base64
import binascii
import re

import nh3

#: Prefix of every ``id`` a notebook's HTML carries (DOM clobbering: ``<b id="flag">``
#: would otherwise be ``window.flag``).
ID_PREFIX = "nb-"
#: Raster image types shown, by their first bytes.
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
EXTENSIONS: dict[str, str] = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif"}
_DATA_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]*\Z")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*\Z")
_LINK_SCHEMES = ("http:", "https:", "mailto:")

_TAGS = set(nh3.ALLOWED_TAGS) - {"area", "map"}
_ATTRIBUTES: dict[str, set[str]] = {
    **{tag: set(values) for tag, values in nh3.ALLOWED_ATTRIBUTES.items()},
    "*": {"id", "style", "title", "lang", "dir"},  # classes: allowed_classes
    "img": {"alt", "height", "width", "src"},
}
#: CSS properties kept in ``style`` attributes: colours, weights, alignment (none of
#: them can load anything).
STYLE_PROPERTIES: frozenset[str] = frozenset({
    "color", "background-color", "font-weight", "font-style", "text-align", "vertical-align",
    "text-decoration", "white-space",
})


def _pygments_classes() -> set[str]:
    from pygments.token import STANDARD_TYPES

    return {name for name in STANDARD_TYPES.values() if name}


_CLASSES: dict[str, set[str]] = {
    "table": {"dataframe"},
    "div": {"highlight"},
    "span": _pygments_classes(),
    "a": {"anchor-link"},
}
_ANSI_CLASSES = {f"ansi-{colour}-{where}" for colour in
                 ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
                 for where in ("fg", "bg", "intense-fg", "intense-bg")} | {
                 "ansi-bold", "ansi-underline", "ansi-default-inverse-fg", "ansi-default-inverse-bg"}


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    """Keep a URL attribute only when it points where the page may go: a link to the web
    or mail, an image from its own ``data:`` URI."""
    if attribute == "src":
        return value if tag == "img" and _DATA_IMAGE.match(value) else None
    if attribute == "cite":  # a URL no reader sees: nothing to keep
        return None
    if attribute == "href":
        if value.startswith("#") and tag == "a":  # a heading's anchor, renamed as its id is
            return "#" + ID_PREFIX + value[1:]
        return value if value.strip().lower().startswith(_LINK_SCHEMES) else None
    if attribute == "style":
        return plain_style(value) or None
    return value


_CSS_FUNCTION = re.compile(r"([a-z0-9_-]*)\s*\(", re.IGNORECASE)
_COLOUR_FUNCTIONS = frozenset({"rgb", "rgba", "hsl", "hsla"})


def plain_style(style: str) -> str:
    """The declarations of an inline ``style`` whose values call no function but a colour
    (``url()``, ``image-set()``, ``expression()``, ``var()`` … are dropped, as are
    declarations with CSS escapes or comments, which could hide one).

    >>> plain_style("color: rgb(255, 0, 0); background-color: url(http://x/y.png); font-weight: bold")
    'color: rgb(255, 0, 0); font-weight: bold'
    """
    kept = [part.strip() for part in style.split(";")
            if part.strip() and "\\" not in part and "/*" not in part
            and all(name.lower() in _COLOUR_FUNCTIONS for name in _CSS_FUNCTION.findall(part))]
    return "; ".join(kept)


_HTML = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={"script", "style"},
    attributes=_ATTRIBUTES,
    attribute_filter=_attribute_filter,
    url_schemes={"http", "https", "mailto", "data"},
    allowed_classes=_CLASSES,
    filter_style_properties=set(STYLE_PROPERTIES),
    url_relative="pass_through",  # then refused by _attribute_filter, but for #fragments
    id_prefix=ID_PREFIX,
)
_ANSI = nh3.Cleaner(
    tags={"span", "a"},
    attributes={"span": {"style"}, "a": {"href"}},
    attribute_filter=_attribute_filter,
    url_schemes={"http", "https"},
    allowed_classes={"span": _ANSI_CLASSES},
    filter_style_properties={"color", "background-color", "font-weight", "text-decoration"},
    url_relative="deny",
)


def clean_html(html: str) -> str:
    """An HTML fragment from a notebook, with everything that could run, load or take a
    page name removed (see the module's doc)."""
    return _HTML.clean(html)


def markdown_html(text: str, attachments: object = None) -> str:
    """A Markdown cell or output rendered by nbconvert's Markdown renderer (mistune; a
    cell's ``attachment:`` images become ``data:`` URIs, local files are never read), then
    cleaned as :func:`clean_html`."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    bundles = {str(name): {str(mime): data for mime, data in bundle.items() if isinstance(data, str)}
               for name, bundle in attachments.items() if isinstance(bundle, dict)
               } if isinstance(attachments, dict) else {}
    renderer = IPythonRenderer(escape=False, embed_images=False, attachments=_Attachments(bundles))
    return clean_html(MarkdownWithMath(renderer=renderer).render(text))


class _Attachments(dict[str, dict[str, str]]):
    """A cell's attachments, where a missing one is an empty image (nbconvert raises)."""

    def __contains__(self, name: object) -> bool:
        return True

    def __missing__(self, name: str) -> dict[str, str]:
        return {"image/png": ""}


def ansi_html(text: str) -> str:
    """Terminal text (a traceback, a stream) as HTML: nbconvert's ANSI filter turns its
    colour codes into spans and escapes the rest; the sequences it leaves (hyperlinks,
    cursor moves) and control characters are dropped, and the spans checked again.

    >>> ansi_html("\x1b[31mKeyError\x1b[0m \x1b]8;;javascript:x\x07<b>\x1b]8;;\x07\x07")
    '<span class="ansi-red-fg">KeyError</span> &lt;b&gt;'
    """
    from nbconvert.filters.ansi import ansi2html

    from junobench.data.notebook import strip_ansi

    html = strip_ansi(ansi2html(text.replace("\r\n", "\n")))
    return _ANSI.clean(_CONTROL.sub("", html))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def decode_image(data: object) -> bytes | None:
    """The bytes of a base64 image of an output (a string, or a list of lines), or None
    when it is not base64."""
    if isinstance(data, list) and all(isinstance(part, str) for part in data):
        data = "".join(data)
    if not isinstance(data, str) or not _BASE64.match(data):
        return None
    try:
        return base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def image_kind(data: bytes) -> str | None:
    """The raster image type ``data`` starts like (PNG, JPEG, GIF), or None."""
    return next((mime for magic, mime in MAGIC if data.startswith(magic)), None)


def svg_data_uri(svg: str) -> str:
    """An SVG document as a ``data:`` URI for an ``<img>``: a browser draws it as a
    picture, with no script and no request, whatever it holds."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8", "replace")).decode("ascii")
