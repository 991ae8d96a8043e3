"""Cases that are one crash twice: the keys that identify a case, and the pairs that share one.

A case is identified by its study ``eid``, its notebook (the Kaggle URL, compared without
scheme, ``www.``, query and case; the study's file name ``fname``) and the content of each
of its notebooks: the code cells' sources, outputs, execution counts and metadata aside
(:func:`notebook_digest`). Two cases sharing any key are the same crash added twice:
``construct add-case`` refuses the second and ``validate`` reports it.

>>> url_key("https://www.kaggle.com/code/Alice/wine-quality?scriptVersionId=3")
'kaggle.com/alice/wine-quality'
>>> key_clash({"eid": "e1"}, {"eid": "E1 "})
'eid'
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from junobench import vocab
from junobench.data import layout
from junobench.data.notebook import Notebook, read_notebook
from junobench.data.tables import DescRow
from junobench.errors import JunoBenchError

#: Key name → how it is said in a message.
KEYS: dict[str, str] = {
    "eid": "eid",
    "notebook_url": "notebook URL",
    "fname": "notebook file name",
    "original": "original notebook's code",
    "reproduced": "reproduced notebook's code",
    "fixed": "fixed notebook's code",
}
_URL_HEAD = re.compile(r"^(?:[a-z]+://)?(?:www\.)?")
_KERNEL_PATH = re.compile(r"^(kaggle\.com/)(?:code|kernels|notebooks)/")


@dataclass(frozen=True)
class Duplicate:
    """``case`` shares ``key`` (a :data:`KEYS` name) with ``earlier``."""

    case: str
    earlier: str
    key: str

    @property
    def what(self) -> str:
        return KEYS[self.key]


def url_key(url: object) -> str | None:
    """A notebook URL as compared: no scheme, ``www.``, query, fragment or trailing slash,
    Kaggle's ``code/``, ``kernels/`` and ``notebooks/`` paths alike, lower case."""
    text = str(url or "").strip().lower()
    text = re.split(r"[?#]", text, maxsplit=1)[0].rstrip("/")
    text = _KERNEL_PATH.sub(r"\1", _URL_HEAD.sub("", text))
    return text if text not in ("", "none", "nan") else None


def notebook_digest(notebook: Notebook) -> str | None:
    """sha256 of a notebook's code: each code cell's source with trailing spaces and blank
    lines at its ends removed, empty cells left out; None for a notebook without code."""
    sources = []
    for cell in notebook.code_cells:
        lines = [line.rstrip() for line in cell.source.splitlines()]
        text = "\n".join(lines).strip("\n")
        if text.strip():
            sources.append(text)
    if not sources:
        return None
    return hashlib.sha256(json.dumps(sources).encode("utf-8")).hexdigest()


def file_digest(path: Path) -> str | None:
    """:func:`notebook_digest` of a notebook file; None when it cannot be read."""
    try:
        notebook, _ = read_notebook(path)
    except (JunoBenchError, OSError):
        return None
    return notebook_digest(notebook)


def case_keys(fields: Mapping[str, object], notebooks: Mapping[str, Path]) -> dict[str, str]:
    """The keys of a case: ``eid``, ``notebook_url`` and ``fname`` from its table fields
    (record field names), a digest per notebook version from ``notebooks``."""
    keys: dict[str, str] = {}
    for name in ("eid", "fname"):
        value = str(fields.get(name) or "").strip().lower()
        if value and value not in ("none", "nan"):
            keys[name] = value
    url = url_key(fields.get("notebook_url"))
    if url:
        keys["notebook_url"] = url
    for version, path in notebooks.items():
        digest = file_digest(path) if path.is_file() else None
        if digest:
            keys[version] = digest
    return keys


def snapshot_keys(root: str | Path, rows: Iterable[DescRow]) -> dict[str, dict[str, str]]:
    """Case id → its keys, for the table rows of a snapshot (notebooks read from their
    folders; a missing or unreadable one, or a link out of the snapshot, has no key)."""
    out: dict[str, dict[str, str]] = {}
    for row in rows:
        if vocab.is_case_id(row.case_id) and row.case_id not in out:
            out[row.case_id] = case_keys(row.fields, layout.notebooks_inside(root, row.case_id, vocab.VERSIONS))
    return out


def key_clash(keys: Mapping[str, str], other: Mapping[str, str]) -> str | None:
    """The first key (in :data:`KEYS` order) two cases share, or None."""
    for name in KEYS:
        mine, theirs = keys.get(name), other.get(name)
        if mine and theirs and mine.strip().lower() == theirs.strip().lower():
            return name
    return None


def find_duplicates(cases: Mapping[str, Mapping[str, str]]) -> list[Duplicate]:
    """Each case (in the mapping's order) that shares a key with an earlier one, with the
    first such key and case."""
    seen: list[tuple[str, Mapping[str, str]]] = []
    found = []
    for case_id, keys in cases.items():
        for earlier, other in seen:
            key = key_clash(keys, other)
            if key is not None:
                found.append(Duplicate(case_id, earlier, key))
                break
        seen.append((case_id, keys))
    return found


def matches(keys: Mapping[str, str], cases: Mapping[str, Mapping[str, str]]) -> list[Duplicate]:
    """The cases of ``cases`` that share a key with a new case's ``keys`` (``case`` is ``""``)."""
    found = []
    for case_id, other in cases.items():
        key = key_clash(keys, other)
        if key is not None:
            found.append(Duplicate("", case_id, key))
    return found


def describe(found: Sequence[Duplicate]) -> str:
    """``pandas_3 (same eid), torch_2 (same fixed notebook's code)``."""
    return ", ".join(f"{d.earlier} (same {d.what})" for d in found)
