"""Text that UTF-8 can encode: file names may hold bytes that are not UTF-8, which Python
keeps as lone surrogates (``os.fsdecode(b"a\\xff")``); every message and report is UTF-8.
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
