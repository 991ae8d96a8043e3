"""Text as messages hold it: UTF-8 can encode it (file names may hold bytes that are not
UTF-8, which Python keeps as lone surrogates, ``os.fsdecode(b"a\\xff")``; every message
and report is UTF-8), and it is bounded (:func:`shortened`). The bottom of the package:
:mod:`junobench.errors` uses it.
"""

from __future__ import annotations


def is_utf8(text: str) -> bool:
    """Whether UTF-8 can encode ``text``: False for a file name holding bytes that are not
    UTF-8, which Python keeps as lone surrogates (``os.fsdecode(b"a\\xff")``).

    >>> import os
    >>> is_utf8("café.csv"), is_utf8(os.fsdecode(b"caf\\xe9.csv"))
    (True, False)
    """
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_text(text: str) -> str:
    """``text`` with what UTF-8 cannot encode escaped: a file name's undecodable byte as
    ``\\xNN``, any other lone surrogate as ``\\udNNN`` (what messages and reports hold).

    >>> import os
    >>> print(utf8_text(os.fsdecode(b"data/pi\\xffpe")), utf8_text("a\\ud800b"), utf8_text("café"))
    data/pi\\xffpe a\\ud800b café
    """
    if is_utf8(text):
        return text
    only_bytes = all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)
    return text.encode("utf-8", "surrogateescape" if only_bytes else "backslashreplace") \
        .decode("utf-8", "backslashreplace")


def shortened(text: str, limit: int, *, end: int = 0) -> str:
    """``text`` when it has at most ``limit`` characters, else its first ``limit - 1 - end``,
    ``…`` and its last ``end`` (a path's file name, a message's last words).

    >>> shortened("abcdefgh", 5), shortened("abcdefgh", 5, end=2), shortened("abc", 5)
    ('abcd…', 'ab…gh', 'abc')
    """
    if len(text) <= limit:
        return text
    head = max(limit - 1 - end, 0)
    return text[:head] + "…" + (text[-end:] if end > 0 else "")
