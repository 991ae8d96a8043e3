"""The empirical study's notebook file names.

The study stores each Kaggle notebook as ``<first 6 hex digits of sha256(user name)>_<notebook
slug>.ipynb`` (the ``fname`` column of its tables): the user name is pseudonymised, the slug
kept. A notebook URL therefore gives its ``fname``, which is how notebooks known only by
URL (``benchmark_desc.xlsx``'s ``NotebookUrl``) are matched with the study's tables.

>>> notebook_file_name("taifbasheikh", "dl-cnn")
'2a9a89_dl-cnn.ipynb'
>>> file_name_of_url("https://www.kaggle.com/code/taifbasheikh/dl-cnn?scriptVersionId=12")
'2a9a89_dl-cnn.ipynb'
"""

from __future__ import annotations

import hashlib

#: Hex digits of the user name's sha256 that the file name keeps.
PSEUDONYM_DIGITS = 6


def pseudonym(user: str) -> str:
    """The first :data:`PSEUDONYM_DIGITS` hex digits of ``sha256(user)``."""
    return hashlib.sha256(user.encode("utf-8")).hexdigest()[:PSEUDONYM_DIGITS]


def notebook_file_name(user: str, slug: str) -> str:
    """The study's file name of the notebook ``user/slug``."""
    user, slug = user.strip(), slug.strip()
    if not user or not slug:
        raise ValueError("a notebook file name needs both a user name and a slug")
    return f"{pseudonym(user)}_{slug}.ipynb"


def file_name_of_url(url: str) -> str:
    """The study's file name of a Kaggle notebook URL (or ``owner/slug``); ValueError when
    the text is neither."""
    from junobench.construct.kaggle import notebook_ref

    owner, slug = notebook_ref(url)
    return notebook_file_name(owner, slug)
