"""Text stays text: in spreadsheets, on the terminal, in the dataset card.

- :func:`csv_cell`: a CSV cell that no spreadsheet turns into a formula (text starting
  with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``, unless
  it is a plain number; so does text starting with ``'``, which keeps the mark
  reversible), and :func:`csv_value`, its inverse, for the CSV files junobench reads back:
  as in a spreadsheet, a leading ``'`` marks text and is not part of the value. In xlsx
  files cells are typed, so text is written as a text cell instead
  (:mod:`junobench.data.tables`), and reads back unchanged.
- :func:`printable` and :class:`EscapedStream`: text for the terminal, its control
  characters (ANSI escape sequences among them) shown as ``\\x1b``-style escapes, and so
  every other character that is not shown as itself: bidirectional overrides (``U+202E``),
  zero-width and other format characters, line and paragraph separators, unassigned
  and private-use code points, spaces other than the space (:func:`is_shown`).
- :func:`markdown_text` / :func:`markdown_link`: text for a Markdown or HTML page (the
  dataset card) with Markdown and HTML characters escaped, and links only to checked
  ``http(s)`` URLs (:func:`safe_url`).
- :func:`shortened` and :func:`first_line`: a value or an error's message cut to a bound for
  a one-line note (``…`` marks the cut).
- :func:`multiline`: a notebook's multiline field (a string, or a list of strings) as one
  string, whatever a hostile notebook put there.
- :func:`visible_controls`: text for a page with its control characters and its
  bidirectional embedding, override and isolate characters shown as ``‹U+202E›`` marks,
  so that code reads as it runs (a right-to-left override can make code look other than
  it is: "Trojan Source").

>>> csv_cell("=HYPERLINK(\\"http://x\\")"), csv_cell("-1.5"), csv_cell("plain")
('\\'=HYPERLINK("http://x")', '-1.5', 'plain')
>>> [csv_value(csv_cell(text)) for text in ("+RT", "'+RT", "-1.5")]
['+RT', "'+RT", '-1.5']
>>> printable("red \\x1b[31mtext\\x1b[0m")
'red \\\\x1b[31mtext\\\\x1b[0m'
>>> markdown_link("Iris <b>", "javascript:alert(1)")
'Iris &lt;b&gt;'
>>> shortened("x" * 10, 5), first_line(ValueError("bad value\\nat line 2")), first_line(KeyError())
('xxxx…', 'bad value', 'KeyError')
>>> visible_controls("access = 'user\\u202e \\u2066# admin\\u2069\\u2066'\\x07")
"access = 'user‹U+202E› ‹U+2066›# admin‹U+2069›‹U+2066›'‹U+0007›"
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from junobench.utf8 import shortened as shortened  # defined below errors, which use it

#: First characters that make a spreadsheet read a cell as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
# What may not be shown as itself: controls, and any character past ASCII (checked one by one).
_SUSPECT = re.compile(r"[^\x20-\x7e]")
# Characters that make Markdown markup inside a line: code, emphasis, links and images,
# table cells (HTML's are written as entities first).
_MARKDOWN = re.compile(r"([\\`*\[\]!|~])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
#: Bidirectional embeddings, overrides and isolates (LRE … RLO, LRI … PDI): the characters
#: that reorder how a line is displayed (Unicode TR #36; what compilers' "Trojan Source"
#: lints flag). The marks LRM/RLM reorder nothing and stay.
BIDI_CONTROLS = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
_SHOWN_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def is_formula_like(text: str) -> bool:
    """Whether a spreadsheet would take the text ``text`` for a formula."""
    return text.startswith(FORMULA_START) and not _NUMBER.match(text)


def csv_cell(value: Any) -> Any:
    """``value`` for a CSV cell: formula-like text, and text starting with ``'``, gets a
    leading ``'``; other values as they are."""
    if isinstance(value, str) and (is_formula_like(value) or value.startswith("'")):
        return "'" + value
    return value


def csv_value(cell: str) -> str:
    """The text a CSV cell written by :func:`csv_cell` holds (one leading ``'`` removed)."""
    return cell[1:] if cell.startswith("'") else cell


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x7f:
        return f"\\x{code:02x}"
    if code > 0xFFFF:  # as JSON writes it: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def is_shown(char: str) -> bool:
    """Whether a terminal or a page shows ``char`` as itself: not a control, format
    (``U+202E``, ``U+200B``, ``U+FEFF``), surrogate, private-use or unassigned character,
    nor a separator other than the space (Python's ``str.isprintable``)."""
    return char.isprintable()


def printable(text: str, *, keep: str = "\n\t") -> str:
    """``text`` with every character not shown as itself (:func:`is_shown`: controls,
    bidirectional overrides, zero-width characters, lone surrogates…) written as an escape
    (``\\x1b``; ``\\u202e`` from DEL on, which is also how JSON writes them), so a
    terminal shows them instead of acting on them; the characters in ``keep`` stay.

    >>> printable("invoice\u202egnp.exe")
    'invoice\\\\u202egnp.exe'
    """
    if not _SUSPECT.search(text):
        return text
    return _SUSPECT.sub(lambda m: m.group() if m.group() in keep or is_shown(m.group()) else _escaped(m.group()),
                        text)


class EscapedStream:
    """A text stream that writes through :func:`printable`: everything printed to it
    shows control characters as escapes. Other attributes are the wrapped stream's."""

    def __init__(self, stream: Any, *, keep: str = "\n\t") -> None:
        self._stream = stream
        self._keep = keep

    def write(self, text: str) -> int:
        self._stream.write(printable(text, keep=self._keep))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def markdown_text(text: Any) -> str:
    """``text`` safe inside Markdown (and HTML): one line, Markdown and HTML characters
    escaped, characters not shown as themselves (:func:`is_shown`) turned into spaces."""
    line = " ".join(_SUSPECT.sub(lambda m: m.group() if is_shown(m.group()) else " ", str(text)).split())
    line = "".join(_HTML.get(c, c) for c in line)
    return _MARKDOWN.sub(r"\\\1", line)


def safe_url(url: Any) -> str | None:
    """``url`` when it is a plain ``http``/``https`` URL with a host (no spaces, quotes,
    angle brackets or control characters), else None."""
    if not isinstance(url, str) or len(url) > 2048:
        return None
    if re.search(r"[\s<>\"'`\\]", url) or not url.isprintable():
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or parts.netloc.startswith("@"):
        return None
    return url


def markdown_link(title: Any, url: Any) -> str:
    """A Markdown link to ``url`` titled ``title`` when the URL passes :func:`safe_url`;
    the escaped title alone otherwise."""
    text = markdown_text(title)
    checked = safe_url(url)
    if checked is None:
        return text
    return f"[{text}]({checked.replace('(', '%28').replace(')', '%29')})"


def visible_controls(text: str) -> str:
    """``text`` with each control character (but tab, newline and carriage return) and
    each of :data:`BIDI_CONTROLS` shown as a ``‹U+XXXX›`` mark (plain characters: safe in
    HTML text and attribute values alike)."""
    return _SHOWN_CONTROLS.sub(lambda m: f"\u2039U+{ord(m.group()):04X}\u203a", text)


def multiline(value: object) -> str:
    """A notebook's multiline string field (a string, or a list of strings: nbformat saves
    both) as one string; the parts that are not strings left out, ``""`` for any other value.

    >>> multiline(["a\\n", "b"]), multiline("c"), multiline(["d", 1]), multiline(None)
    ('a\\nb', 'c', 'd', '')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return ""


def first_line(what: object, limit: int | None = None) -> str:
    """The first line of an error's message (its class name when the message is empty), or
    of a text (``""`` for none), cut to ``limit`` characters (:func:`shortened`)."""
    text = str(what if what is not None else "").strip()
    line = text.splitlines()[0] if text else (type(what).__name__ if isinstance(what, BaseException) else "")
    return line if limit is None else shortened(line, limit)
