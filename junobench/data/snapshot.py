"""Locate a snapshot: a local directory, the bundled sample, or a Hub dataset repo.

``resolve("sample")`` is the mini benchmark shipped with the package; an existing
directory is used in place (never written to); anything else shaped ``owner/name`` is a
Hugging Face dataset repo fetched with :func:`huggingface_hub.snapshot_download`.

>>> resolve("sample").name
'sample'
"""

from __future__ import annotations

import hashlib
import operator
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data import layout
from junobench.data.digests import ContentDigests, MemoRow, ReadDigests
from junobench.envs.environment import SNAPSHOT_FOLDER, environment_files
from junobench.errors import JunoBenchError
from junobench.safety.paths import is_dir_entry, is_within, link_inside, require_utf8_path
from junobench.safety.text import first_line

DEFAULT_SOURCE = layout.DEFAULT_SOURCE
SAMPLE = "sample"

#: Files fetched from the Hub by default: tables, notebooks, dataset metadata, the
#: dataset's version, and an export's card, parquet files and manifest. Input data only with ``include_data``.
#: (The client matches with fnmatch, where ``*`` also crosses ``/``: top-level files are
#: named exactly so that data files of the same type are not pulled in.)
HUB_PATTERNS: tuple[str, ...] = (
    layout.DESC_TABLE,
    layout.DIAGNOSIS_TABLE,
    layout.VERSION_FILE,
    "README.md",
    f"{layout.BENCHMARK_DIR}/*/*.ipynb",
    f"{layout.BENCHMARK_DIR}/*/{layout.DATA_DIR}/*{layout.METADATA_SUFFIX}",
    "cases/*.parquet",
    "notebooks/*.parquet",
    "checksums.json",
    f"{SNAPSHOT_FOLDER}/*",
)
HUB_DATA_PATTERNS: tuple[str, ...] = (f"{layout.BENCHMARK_DIR}/*/{layout.DATA_DIR}/**",)
#: What running some cases needs besides their folders: the tables, version and environment.
HUB_TABLE_PATTERNS: tuple[str, ...] = (layout.DESC_TABLE, layout.DIAGNOSIS_TABLE, layout.VERSION_FILE,
                                       f"{SNAPSHOT_FOLDER}/*")

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}\Z", re.ASCII)

Downloader = Callable[..., str]


def sample_path() -> Path:
    """The bundled mini benchmark (package data)."""
    return layout.PACKAGE_DIR / SAMPLE


def is_repo_id(source: str) -> bool:
    """Whether ``source`` is shaped like a Hub repo id (``owner/name``, ASCII word
    characters, ``.`` and ``-``; no ``..``)."""
    return bool(_REPO_ID.match(source)) and ".." not in source


def check_repo_id(repo_id: str) -> None:
    """Refuse a ``repo_id`` that :func:`is_repo_id` says is not one (a repo written to)."""
    if not is_repo_id(repo_id):
        raise JunoBenchError(f"not a Hub repo id: {repo_id!r}", hint="use owner/name, e.g. someone/junobench")


def resolve(
    source: str | Path = DEFAULT_SOURCE,
    *,
    revision: str | None = None,
    include_data: bool = False,
    download: Downloader | None = None,
) -> Path:
    """The local directory of ``source``.

    ``download`` replaces :func:`huggingface_hub.snapshot_download` (same keywords): the
    seam through which tests serve a Hub repo from local data.
    """
    text = str(source)
    if text == SAMPLE:
        path = sample_path()
        if not path.is_dir():
            raise JunoBenchError("the bundled sample is missing from this installation",
                                 file=path, hint="reinstall junobench")
        return path
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise JunoBenchError("a snapshot must be a directory", file=path,
                                 hint="pass the folder that holds benchmark_desc.xlsx")
        return require_utf8_path(path.resolve())
    repo = hub_repo(source)
    if repo is None:
        raise JunoBenchError("no such snapshot directory", file=path,
                             hint="pass an existing directory, 'sample', or a Hub repo id like "
                             f"{DEFAULT_SOURCE}")
    return fetch_hub(repo, revision=revision, include_data=include_data, download=download)


def resolve_cases(
    source: str | Path = DEFAULT_SOURCE,
    case_ids: Sequence[str] | None = None,
    *,
    revision: str | None = None,
    choose: Callable[[Path], Sequence[str]] | None = None,
    download: Downloader | None = None,
) -> Path:
    """The local directory of ``source`` holding the folders of the cases to run, with their
    data: a local directory or the sample as it is; from a Hub repo (a released version,
    at ``revision``), its tables and those case folders only: ``case_ids``, else the ids
    ``choose`` picks from the tables (e.g. those matching filters), else every case."""
    repo = hub_repo(source)
    if repo is None:
        return resolve(source, revision=revision, include_data=True, download=download)
    ids = list(dict.fromkeys(case_ids or ()))
    if not ids and choose is not None:
        tables = fetch_hub(repo, revision=revision, download=download, patterns=HUB_TABLE_PATTERNS)
        ids = list(dict.fromkeys(choose(tables)))
    if not ids and not case_ids and choose is None:
        return fetch_hub(repo, revision=revision, include_data=True, download=download)
    patterns = [*HUB_TABLE_PATTERNS, *(p for case_id in ids for p in case_patterns(case_id))]
    return fetch_hub(repo, revision=revision, download=download, patterns=patterns)


def fetch_hub(
    repo_id: str,
    *,
    revision: str | None = None,
    include_data: bool = False,
    download: Downloader | None = None,
    patterns: Sequence[str] | None = None,
    **kwargs: Any,
) -> Path:
    """Download (or reuse from the Hugging Face cache) a dataset repo's snapshot files
    (``patterns``, default :data:`HUB_PATTERNS` and, with ``include_data``, the data)."""
    if download is None:
        from huggingface_hub import snapshot_download

        download = snapshot_download
    if patterns is None:
        patterns = list(HUB_PATTERNS) + (list(HUB_DATA_PATTERNS) if include_data else [])
    else:
        patterns = list(patterns)
    with _hub_errors(repo_id, revision):
        local = download(repo_id=repo_id, repo_type="dataset", revision=revision,
                         allow_patterns=patterns, **kwargs)
    return Path(local)


@contextmanager
def _hub_errors(repo_id: str, revision: str | None) -> Iterator[None]:
    """The Hub client's errors as one-line :class:`JunoBenchError` s naming the repo."""
    from huggingface_hub import errors as hf_errors

    where = f"{repo_id}" + (f"@{revision}" if revision else "")
    try:
        yield
    except hf_errors.RepositoryNotFoundError:
        raise JunoBenchError(f"no dataset repo {repo_id!r} on the Hugging Face Hub (or no access)",
                             file=where, hint="check the repo id, or log in with `hf auth login`"
                             ) from None
    except hf_errors.RevisionNotFoundError:
        raise JunoBenchError(f"revision {revision!r} not found", file=where,
                             hint="pass an existing branch, tag or commit") from None
    except hf_errors.GatedRepoError:
        raise JunoBenchError("the dataset repo is gated", file=where,
                             hint="accept its terms on the Hub and log in") from None
    except (hf_errors.LocalEntryNotFoundError, hf_errors.HfHubHTTPError, OSError) as error:
        raise JunoBenchError(
            f"the Hugging Face Hub is unreachable and no cached copy exists ({first_line(error)})",
            file=where,
            hint=f"use --source {SAMPLE} for the bundled sample, or --source DIR for a local snapshot",
        ) from None


def hub_repo(source: str | Path) -> str | None:
    """The Hub dataset repo ``source`` names (None for the sample or a local directory):
    how :func:`resolve` reads it."""
    text = str(source)
    if isinstance(source, Path) or text == SAMPLE or Path(text).expanduser().exists() or not is_repo_id(text):
        return None
    return text


def refuse_writing_inside(out: str | Path, source: str | Path, *, what: str) -> None:
    """Refuse ``out``, a folder a command writes to, when it is inside the local snapshot
    or the bundled sample ``source`` names: nothing in a snapshot is ever modified."""
    if hub_repo(source) is None and is_within(Path(out).expanduser(), resolve(source)):
        raise JunoBenchError(f"{what} is inside the snapshot", file=out,
                             hint="nothing in a snapshot is ever modified: choose a directory outside it")


def hub_files(repo_id: str, *, revision: str | None = None) -> list[str]:
    """Every file of a Hub dataset repo at ``revision``, repo-relative, without downloading
    any (:meth:`huggingface_hub.HfApi.list_repo_files`)."""
    from huggingface_hub import HfApi

    with _hub_errors(repo_id, revision):
        return HfApi().list_repo_files(repo_id, repo_type="dataset", revision=revision)


def case_patterns(case_id: str) -> list[str]:
    """The Hub patterns of one case folder: its notebooks, data and metadata files."""
    if not vocab.is_case_id(case_id):  # a pattern built from data must not match more
        raise JunoBenchError(f"case id {case_id!r} is not of the form <library>_<number>")
    return [f"{layout.BENCHMARK_DIR}/{case_id}/**"]


def fetch_case(repo_id: str, case_id: str, *, revision: str | None = None,
               download: Downloader | None = None, **kwargs: Any) -> Path:
    """One case folder of a Hub dataset repo, downloaded alone (or reused from the cache);
    what a remote worker fetches instead of receiving the files from the driver."""
    root = fetch_hub(repo_id, revision=revision, download=download, patterns=case_patterns(case_id), **kwargs)
    folder = layout.case_dir(root, case_id)
    if not folder.is_dir():
        raise JunoBenchError(f"no case folder {case_id} in the dataset repo", file=f"{repo_id}/{folder.name}",
                             case=case_id)
    return folder


#: One file of a fingerprint: its path in the snapshot, its size and its content
#: (sha256; a link out of the snapshot or an unreadable file in words).
Entry = tuple[str, int, str]


def fingerprint(root: str | Path, *, folders: Mapping[str, list[Entry]] | None = None,
                rows: Iterable[MemoRow] = ()) -> str:
    """A digest of the snapshot's content: every file's path and sha256, and those of the
    files that decide its environment (its own or the packaged one).

    Any edit to a table, notebook, metadata, data or environment file changes it, so
    records cached under it are never served stale, whatever the edit keeps of a file's
    size and times (``touch -r``, ``cp -p``, ``rsync -a``, ``tar x``). Each file's digest
    is remembered under its path, size, times and inode (:mod:`junobench.data.digests`):
    a file is read again only after it changed, otherwise this costs a ``stat`` per file.

    ``folders``: the :func:`folder_entries` of case folders (``benchmark/<case>``) that
    worker processes read already, with the memo ``rows`` of their digests: the same
    fingerprint, without reading those files again.
    """
    root = os.path.abspath(root)  # every path below is then absolute and normalised
    entries: list[Entry] = []
    with ContentDigests(under=root) as digests:
        digests.remember(rows)
        for name in (layout.DESC_TABLE, layout.DIAGNOSIS_TABLE):
            _add(entries, name, os.path.join(root, name), digests, root)
        for env_file in environment_files(root):
            _add(entries, str(env_file), str(env_file), digests, str(env_file.parent))
        _walk(root, layout.BENCHMARK_DIR, digests, entries, folders or {})
    return hashlib.sha256(repr(entries).encode()).hexdigest()


def folder_entries(root: str, relative: str, digests: Digests) -> list[Entry]:
    """The fingerprint's entries of the folder ``relative`` (``benchmark/<case>``) of the
    snapshot at ``root`` (an absolute, normalised path), in the fingerprint's order."""
    entries: list[Entry] = []
    _walk(root, relative, digests, entries, {})
    return entries


def _walk(root: str, start: str, digests: Digests, entries: list[Entry],
          known: Mapping[str, list[Entry]]) -> None:
    """Add the entries of every file below ``start``: each folder's files in name order,
    then its folders, depth first (the entries of a folder in ``known`` as they are)."""
    stack = [start]
    while stack:
        relative = stack.pop()
        if relative in known:
            entries.extend(known[relative])
            continue
        try:
            with os.scandir(os.path.join(root, relative)) as found:
                listing = sorted(found, key=_NAME)
        except (FileNotFoundError, NotADirectoryError):
            entries.append((relative, -1, ""))
            continue
        subdirs = []
        for entry in listing:
            path = f"{relative}/{entry.name}"
            if is_dir_entry(entry):  # a link loop is not: recorded as unreadable
                subdirs.append(path)
            else:
                _add(entries, path, entry.path, digests, root, entry)
        stack.extend(reversed(subdirs))


_NAME = operator.attrgetter("name")
#: What gives the fingerprint its files' digests: the memo, or files read now.
Digests = ContentDigests | ReadDigests


def _add(entries: list[Entry], name: str, path: str, digests: Digests,
         root: str, entry: os.DirEntry[str] | None = None) -> None:
    """Record ``path`` as ``name``: its size and sha256 (``entry``: its listing entry, whose
    type and ``stat`` are those of ``path``)."""
    try:
        info = os.stat(path) if entry is None else entry.stat()
        linked = os.path.islink(path) if entry is None else entry.is_symlink()
        if linked and not link_inside(path, root):
            content = f"link {os.readlink(path)}"  # refused when read: not read here either
        elif stat.S_ISREG(info.st_mode):
            content = digests.sha256(path, info, absolute=entry is not None)
        else:
            content = f"mode {info.st_mode:o}"
    except OSError:
        entries.append((name, -1, ""))
        return
    entries.append((name, info.st_size, content))
