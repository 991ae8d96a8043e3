"""Kaggle sources of the benchmark's input data: resolve notebooks to their input datasets
with Meta Kaggle, and download those datasets.

**Metadata.** Meta Kaggle is Kaggle's public dump of its own tables (one CSV per table).
The CSVs are queried where they lie with DuckDB (no import; KernelVersions.csv alone is
gigabytes), along the relational mapping KGTorrent documents::

    notebook (owner/slug) → Users.UserName → Kernels (AuthorUserId, CurrentUrlSlug)
      → KernelVersions (CurrentKernelVersionId; else the latest version)
      → KernelVersionDatasetSources (SourceDatasetVersionId = DatasetVersions.Id)
      → DatasetVersions (Title, LicenseName, VersionNumber) → Datasets
      → Users / Organizations (the owner in https://www.kaggle.com/datasets/<owner>/<slug>)

Competition data (KernelVersionCompetitionSources → Competitions, with the competition's
``LicenseName`` where Meta Kaggle has that column; ``…/competitions/<slug>/data``) and
other notebooks' outputs (KernelVersionKernelSources → KernelVersions → Kernels → Users;
``…/code/<owner>/<slug>/output``) are added when those tables are present. A notebook
URL's ``?scriptVersionId=N`` selects that version instead of the current one. Ids are
compared as integers (``12`` and ``12.0`` alike), and a dataset is never dropped: one
whose owner or version Meta Kaggle lacks keeps its row, with a note saying what is
unknown.

**Download.** :func:`download` fetches each dataset with ``kagglehub`` (credentials from
its standard sources: ``KAGGLE_USERNAME``/``KAGGLE_KEY``, ``~/.kaggle/kaggle.json``,
``kagglehub.login()``; junobench never reads or prints them) into
``DEST/<owner>/<slug>/versions/<N>/`` (the version the notebook used; ``latest/`` when
none is known), records size and sha256 per file beside it in ``<folder>.download.json``,
and skips versions whose record matches the files already there. ``mirror=DIR`` copies
from ``DIR/<owner>/<slug>/`` instead (offline runs, tests).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.safety.atomic import locked, swapped_in, write_text
from junobench.safety.paths import MAX_TEXT_BYTES, open_regular, read_regular, relative_name, unlisted_files
from junobench.safety.text import csv_cell

KAGGLE = "https://www.kaggle.com"

#: The Meta Kaggle tables and columns the resolution needs.
TABLES: dict[str, tuple[str, ...]] = {
    "Users": ("Id", "UserName"),
    "Organizations": ("Id", "Slug"),
    "Kernels": ("Id", "AuthorUserId", "CurrentKernelVersionId", "CurrentUrlSlug"),
    "KernelVersions": ("Id", "ScriptId"),
    "KernelVersionDatasetSources": ("KernelVersionId", "SourceDatasetVersionId"),
    "DatasetVersions": ("Id", "DatasetId", "Title", "Slug", "LicenseName", "VersionNumber"),
    "Datasets": ("Id", "OwnerUserId", "OwnerOrganizationId", "CurrentDatasetVersionId"),
}
#: Used when present: a notebook's competition data, and other notebooks' outputs.
COMPETITION_TABLES: dict[str, tuple[str, ...]] = {
    "KernelVersionCompetitionSources": ("KernelVersionId", "SourceCompetitionId"),
    "Competitions": ("Id", "Slug", "Title"),
}
NOTEBOOK_OUTPUT_TABLES: dict[str, tuple[str, ...]] = {
    "KernelVersionKernelSources": ("KernelVersionId", "SourceKernelVersionId"),
}

#: Columns of the datasets table that kaggle-metadata writes and download reads.
DATASET_COLUMNS: tuple[str, ...] = (
    "notebook", "notebook_url", "kind", "title", "url", "license", "handle", "version", "note",
)

_NOTEBOOK_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?kaggle\.com/(?:code/|kernels/|notebooks/)?"
    r"(?P<owner>[\w.-]+)/(?P<slug>[\w.-]+?)/?(?:[?#].*)?$", re.IGNORECASE)
_OWNER_SLUG = re.compile(r"^(?P<owner>[\w.-]+)/(?P<slug>[\w.-]+)$")
_SCRIPT_VERSION = re.compile(r"[?&]scriptVersionId=(\d{1,18})\b")
_DATASET_URL = re.compile(
    r"^(?:https?://)?(?:www\.)?kaggle\.com/(?:datasets/(?P<owner>[\w.-]+)/(?P<slug>[\w.-]+)"
    r"|(?:c|competitions)/(?P<competition>[\w.-]+)"
    r"|(?:code|kernels|notebooks)/(?P<nb_owner>[\w.-]+)/(?P<nb_slug>[\w.-]+)/output)"
    r"(?:/.*)?$", re.IGNORECASE)


# --------------------------------------------------------------------------- references


def notebook_ref(text: str) -> tuple[str, str]:
    """``(owner, slug)`` of a Kaggle notebook given as a URL or ``owner/slug``.

    >>> notebook_ref("https://www.kaggle.com/code/mohitmaurya9310/wine-quality-prediction")
    ('mohitmaurya9310', 'wine-quality-prediction')
    >>> notebook_ref("yugaanmh/cnn-approach")
    ('yugaanmh', 'cnn-approach')
    """
    text = (text or "").strip()
    match = _NOTEBOOK_URL.match(text) or _OWNER_SLUG.match(text)
    if not match or match["owner"].lower() in ("code", "datasets", "competitions", "c"):
        raise ValueError(f"{text!r} is not a Kaggle notebook URL or owner/slug")
    return match["owner"], match["slug"]


def notebook_url(text: str) -> str:
    """The canonical URL of a notebook given as a URL or ``owner/slug``.

    >>> notebook_url("www.kaggle.com/kernels/yugaanmh/cnn-approach?scriptVersionId=3")
    'https://www.kaggle.com/code/yugaanmh/cnn-approach'
    """
    owner, slug = notebook_ref(text)
    return f"{KAGGLE}/code/{owner}/{slug}"


def dataset_url(owner: str, slug: str) -> str:
    return f"{KAGGLE}/datasets/{owner}/{slug}"


def competition_url(slug: str) -> str:
    """The data page of a competition, as the published table writes it."""
    return f"{KAGGLE}/competitions/{slug}/data"


def notebook_output_url(owner: str, slug: str) -> str:
    return f"{KAGGLE}/code/{owner}/{slug}/output"


def notebook_version(text: str) -> int | None:
    """The ``scriptVersionId`` a notebook URL names, if any.

    >>> notebook_version("https://www.kaggle.com/code/a/b?scriptVersionId=123456&x=1")
    123456
    """
    found = _SCRIPT_VERSION.search(text or "")
    return int(found[1]) if found else None


def handle_of(url: str) -> str:
    """The kagglehub handle of a dataset, competition or notebook-output URL.

    >>> handle_of("https://www.kaggle.com/datasets/uciml/iris")
    'uciml/iris'
    >>> handle_of("https://www.kaggle.com/competitions/titanic/data")
    'competitions/titanic'
    >>> handle_of("https://www.kaggle.com/code/alice/features/output")
    'code/alice/features'
    """
    match = _DATASET_URL.match((url or "").strip())
    if not match:
        raise ValueError(f"{url!r} is not a Kaggle dataset, competition or notebook-output URL")
    if match["competition"]:
        return f"competitions/{match['competition']}"
    if match["nb_owner"]:
        return f"code/{match['nb_owner']}/{match['nb_slug']}"
    return f"{match['owner']}/{match['slug']}"


# --------------------------------------------------------------------------- Meta Kaggle


class MetaKaggle:
    """Meta Kaggle's CSV tables in ``directory``, queried in place with DuckDB."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise JunoBenchError("Meta Kaggle directory not found", file=self.directory,
                                 hint="download kaggle/meta-kaggle and unpack its CSVs there")
        problems = []
        for table, columns in TABLES.items():
            problems += self._check(table, columns)
        if problems:
            raise JunoBenchError("Meta Kaggle is incomplete: " + "; ".join(problems),
                                 file=self.directory,
                                 hint="these tables and columns are needed from Meta Kaggle")
        self.competitions = all(not self._check(t, c) for t, c in COMPETITION_TABLES.items())
        self.competition_licences = self.competitions and not self._check(
            "Competitions", ("LicenseName",))
        self.notebook_outputs = all(not self._check(t, c)
                                    for t, c in NOTEBOOK_OUTPUT_TABLES.items())
        self.version_titles = not self._check("KernelVersions", ("Title",))

    def path(self, table: str) -> Path:
        return self.directory / f"{table}.csv"

    def _check(self, table: str, columns: Sequence[str]) -> list[str]:
        path = self.path(table)
        if not path.is_file():
            return [f"table {path.name} is missing"]
        with path.open(newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), [])
        missing = [c for c in columns if c not in header]
        return [f"{path.name} lacks column(s) {', '.join(missing)}"] if missing else []

    def connect(self) -> Any:
        """A DuckDB connection with one view per table over its CSV file."""
        import duckdb

        connection = duckdb.connect()
        connection.execute(_ID_MACRO)
        tables = [*TABLES, *(COMPETITION_TABLES if self.competitions else ()),
                  *(NOTEBOOK_OUTPUT_TABLES if self.notebook_outputs else ())]
        for table in tables:
            source = str(self.path(table)).replace("'", "''")
            connection.execute(f'CREATE VIEW "{table}" AS SELECT * FROM read_csv('
                               f"'{source}', header = true, all_varchar = true)")
        return connection

    def resolve(self, refs: Sequence[tuple[str, str]],
                versions: Sequence[int | None] | None = None
                ) -> list[list[dict[str, Any]] | None]:
        """For each ``(owner, slug)`` (at the ``versions`` given, else the current one), its
        input datasets, competitions and notebook outputs as dicts with ``kind, title, url,
        license, handle, version, note`` (empty when the notebook has none); None in place
        of the list when the notebook is not in Meta Kaggle."""
        import pandas as pd

        connection = self.connect()
        frame = pd.DataFrame({"position": range(len(refs)),
                              "owner": [o.lower() for o, _ in refs],
                              "slug": [s.lower() for _, s in refs],
                              "wanted": pd.array(list(versions or [None] * len(refs)),
                                                 dtype="Int64")})
        connection.register("refs", frame)
        connection.execute(_KERNELS_SQL)
        results: list[list[dict[str, Any]] | None] = [None] * len(refs)
        for position, wanted, found_wanted in connection.execute(
                "SELECT position, wanted, found_wanted FROM kernel").fetchall():
            results[position] = []
            if wanted is not None and not found_wanted:
                results[position].append({"kind": "note", "note": (
                    f"scriptVersionId {wanted} is not a version of this notebook in Meta "
                    "Kaggle: its current version is used")})
        for row in connection.execute(_DATASETS_SQL).fetchall():
            position, version_id, title, slug, licence, number, owner, user, org = row
            entry = {"kind": "dataset", "title": title, "license": licence,
                     "version": _int(number), "url": None, "handle": None, "note": None}
            if title is None:
                entry["note"] = (f"dataset version {version_id} is not in Meta Kaggle's "
                                 "DatasetVersions: title, licence and URL unknown")
            elif not owner or not slug:
                who = f"user {user}" if user else f"organisation {org}" if org else "no owner"
                entry["note"] = (f"the dataset's owner ({who}) is not in Meta Kaggle's "
                                 "Users/Organizations: its URL is unknown")
            else:
                entry["url"], entry["handle"] = dataset_url(owner, slug), f"{owner}/{slug}"
            _append(results, position, entry)
        if self.competitions:
            sql = _COMPETITIONS_SQL.replace(
                "{licence}", "c.LicenseName" if self.competition_licences else "NULL")
            for position, competition_id, title, slug, licence in connection.execute(
                    sql).fetchall():
                entry = {"kind": "competition", "title": title, "license": licence or None,
                         "version": None, "url": None, "handle": None, "note": None}
                if slug is None:
                    entry["note"] = f"competition {competition_id} is not in Competitions"
                else:
                    entry["url"] = competition_url(slug)
                    entry["handle"] = f"competitions/{slug}"
                    if not licence:
                        entry["note"] = ("Meta Kaggle records no licence for this "
                                         "competition: see its rules")
                _append(results, position, entry)
        if self.notebook_outputs:
            sql = _OUTPUTS_SQL.replace(
                "{title}", "sv.Title" if self.version_titles else "NULL")
            for position, version_id, title, slug, owner in connection.execute(sql).fetchall():
                entry = {"kind": "notebook output", "title": title or slug, "license": None,
                         "version": None, "url": None, "handle": None,
                         "note": "another notebook's output: Meta Kaggle records no licence "
                                 "(Kaggle notebooks are Apache 2.0 unless they say otherwise)"}
                if owner and slug:
                    entry["url"] = notebook_output_url(owner, slug)
                    entry["handle"] = f"code/{owner}/{slug}"
                else:
                    entry["note"] = (f"the output of notebook version {version_id}, which "
                                     "Meta Kaggle does not name: its URL is unknown")
                _append(results, position, entry)
        connection.close()
        return results


def _append(results: list[list[dict[str, Any]] | None], position: int,
            entry: dict[str, Any]) -> None:
    found = results[position]
    assert found is not None  # the notebook was matched
    found.append(entry)


#: Ids compared as integers: Meta Kaggle's CSVs (and tables saved by spreadsheet tools)
#: may write 12 as "12.0".
_ID_MACRO = r"""
CREATE MACRO jid(x) AS TRY_CAST(regexp_replace(trim(x), '\.0*$', '') AS BIGINT)
"""

_KERNELS_SQL = """
CREATE TEMP TABLE kernel AS
WITH matched AS (
    SELECT r.position, r.wanted, jid(k.Id) AS kernel_id,
           jid(k.CurrentKernelVersionId) AS current_version
    FROM refs r
    JOIN "Users" u ON lower(u.UserName) = r.owner
    JOIN "Kernels" k ON jid(k.AuthorUserId) = jid(u.Id) AND lower(k.CurrentUrlSlug) = r.slug
), versions AS (
    SELECT jid(ScriptId) AS kernel_id, jid(Id) AS version_id
    FROM "KernelVersions"
    WHERE jid(ScriptId) IN (SELECT kernel_id FROM matched)
)
SELECT m.position, m.kernel_id, any_value(m.wanted) AS wanted,
       coalesce(bool_or(v.version_id = m.wanted), false) AS found_wanted,
       coalesce(max(v.version_id) FILTER (WHERE v.version_id = m.wanted),
                max(v.version_id) FILTER (WHERE v.version_id = m.current_version),
                max(v.version_id), any_value(m.current_version)) AS version_id
FROM matched m
LEFT JOIN versions v ON v.kernel_id = m.kernel_id
GROUP BY m.position, m.kernel_id
"""

_DATASETS_SQL = """
SELECT k.position,
       jid(s.SourceDatasetVersionId) AS version_id,
       coalesce(cdv.Title, dv.Title) AS title,
       coalesce(cdv.Slug, dv.Slug) AS slug,
       dv.LicenseName,
       dv.VersionNumber,
       coalesce(ou.UserName, o.Slug) AS owner,
       d.OwnerUserId,
       d.OwnerOrganizationId
FROM kernel k
JOIN "KernelVersionDatasetSources" s ON jid(s.KernelVersionId) = k.version_id
LEFT JOIN "DatasetVersions" dv ON jid(dv.Id) = jid(s.SourceDatasetVersionId)
LEFT JOIN "Datasets" d ON jid(d.Id) = jid(dv.DatasetId)
LEFT JOIN "DatasetVersions" cdv ON jid(cdv.Id) = jid(d.CurrentDatasetVersionId)
LEFT JOIN "Users" ou ON jid(ou.Id) = jid(d.OwnerUserId)
LEFT JOIN "Organizations" o ON jid(o.Id) = jid(d.OwnerOrganizationId)
ORDER BY k.position, jid(s.SourceDatasetVersionId)
"""

_COMPETITIONS_SQL = """
SELECT k.position, jid(s.SourceCompetitionId), c.Title, c.Slug, {licence}
FROM kernel k
JOIN "KernelVersionCompetitionSources" s ON jid(s.KernelVersionId) = k.version_id
LEFT JOIN "Competitions" c ON jid(c.Id) = jid(s.SourceCompetitionId)
ORDER BY k.position, jid(s.SourceCompetitionId)
"""

_OUTPUTS_SQL = """
SELECT k.position, jid(s.SourceKernelVersionId), {title}, sk.CurrentUrlSlug, su.UserName
FROM kernel k
JOIN "KernelVersionKernelSources" s ON jid(s.KernelVersionId) = k.version_id
LEFT JOIN "KernelVersions" sv ON jid(sv.Id) = jid(s.SourceKernelVersionId)
LEFT JOIN "Kernels" sk ON jid(sk.Id) = jid(sv.ScriptId)
LEFT JOIN "Users" su ON jid(su.Id) = jid(sk.AuthorUserId)
ORDER BY k.position, jid(s.SourceKernelVersionId)
"""


#: The note of a notebook Meta Kaggle does not have.
NOT_FOUND = "notebook not found in Meta Kaggle"


def kaggle_metadata(notebooks: str | Path, meta_kaggle: str | Path, out: str | Path, *,
                    column: str | None = None) -> list[dict[str, Any]]:
    """Resolve each notebook of ``notebooks`` (CSV or xlsx; a column of Kaggle notebook URLs
    or ``owner/slug``) to its input datasets; write one row per notebook and dataset (a row
    with a note for a notebook without any) to ``out``."""
    names = _read_notebook_column(Path(notebooks), column)
    refs = []
    versions = [notebook_version(name) for _, name in names]
    for number, name in names:
        try:
            refs.append(notebook_ref(name))
        except ValueError as error:
            raise JunoBenchError(f"row {number}: {error}", file=notebooks,
                                 hint="give https://www.kaggle.com/code/<owner>/<slug> or "
                                      "<owner>/<slug>") from None
    resolved = MetaKaggle(meta_kaggle).resolve(refs, versions)
    rows: list[dict[str, Any]] = []
    for (_, name), (owner, slug), datasets in zip(names, refs, resolved, strict=True):
        base = {"notebook": name, "notebook_url": f"{KAGGLE}/code/{owner}/{slug}"}
        if datasets is None:
            rows.append({**base, "note": NOT_FOUND})
            continue
        notes = [d["note"] for d in datasets if d["kind"] == "note"]
        inputs = [d for d in datasets if d["kind"] != "note"]
        if not inputs:
            rows.append({**base, "note": "; ".join([*notes, "no input datasets recorded"])})
        for number, entry in enumerate(inputs):
            note = "; ".join([*(notes if number == 0 else []), *([entry["note"]]
                                                                  if entry["note"] else [])])
            rows.append({**base, **entry, "note": note or None})
    _write_rows(Path(out), rows, DATASET_COLUMNS)
    return rows


def _read_notebook_column(path: Path, column: str | None) -> list[tuple[int, str]]:
    """``(row number, notebook)`` of the non-empty cells of the notebook column."""
    from junobench.data.tables import read_table

    if not path.is_file():
        raise JunoBenchError("notebook list not found", file=path)
    if path.suffix.lower() in (".xlsx", ".xlsm"):
        table = read_table(path)
        header, rows = table.columns, table.rows
    else:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            lines = list(csv.reader(handle))
        if not lines:
            raise JunoBenchError("the notebook list is empty", file=path)
        header, rows = lines[0], lines[1:]
    candidates = [column] if column else ["notebook", "NotebookUrl", "nb_url_kaggle",
                                          "notebook_url", "url"]
    chosen = next((c for c in candidates if c in header), None)
    if chosen is None and column is None and len(header) == 1:
        chosen = header[0]
    if chosen is None:
        raise JunoBenchError(f"no notebook column ({' or '.join(candidates)})", file=path,
                             hint="name it with --column")
    index = header.index(chosen)
    return [(number, str(row[index]).strip()) for number, row in enumerate(rows, start=2)
            if index < len(row) and row[index] not in (None, "") and str(row[index]).strip()]


def _write_rows(path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    from junobench.data.tables import write_table

    if path.suffix.lower() == ".csv":
        write_text(path, _csv_text(rows, columns))
    else:
        write_table(path, rows, columns)


def _csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else csv_cell(row.get(c)) for c in columns])
    return buffer.getvalue()


# --------------------------------------------------------------------------- download


@dataclass
class Downloaded:
    """One dataset's download: where it is, its files and whether it was fetched now."""

    handle: str
    folder: Path
    files: list[dict[str, Any]]  # {"path", "size", "sha256"}
    skipped: bool


Fetch = Callable[[str], Path]


class DownloadFailed(JunoBenchError):
    """Some datasets of a download could not be fetched (every one was tried): ``done``
    those that were, ``failures`` ``(handle, problem)`` of the others."""

    def __init__(self, done: list[Downloaded], failures: list[tuple[str, str]], dest: Path) -> None:
        self.done, self.failures = done, failures
        total = len(done) + len(failures)
        self.summary = (f"{len(failures)} of {total} dataset(s) could not be downloaded; "
                        f"the other {len(done)} are in {dest}")
        super().__init__(self.summary + ": " + "; ".join(f"{h}: {p}" for h, p in failures),
                         hint="fix what each failure names, then run again: what is complete "
                              "is kept")


def kagglehub_fetch(handle: str) -> Path:
    """Download a dataset (``owner/slug[/versions/N]``), competition
    (``competitions/<slug>``) or notebook output (``code/<owner>/<slug>``) with kagglehub;
    returns the folder it is in."""
    try:
        import kagglehub
    except ImportError:
        raise JunoBenchError("kagglehub is not installed",
                             hint="pip install 'junobench[construct]'") from None
    try:
        if handle.startswith("competitions/"):
            return Path(kagglehub.competition_download(handle.split("/", 1)[1]))
        if handle.startswith("code/"):
            return Path(kagglehub.notebook_output_download(handle.split("/", 1)[1]))
        return Path(kagglehub.dataset_download(handle))
    except Exception as error:  # kagglehub raises many types (auth, HTTP, not found)
        raise JunoBenchError(f"kagglehub could not download {handle}: "
                             f"{type(error).__name__}: {_redact(str(error))}",
                             hint="check the handle and your Kaggle credentials "
                                  "(KAGGLE_USERNAME/KAGGLE_KEY or ~/.kaggle/kaggle.json)"
                             ) from None


def kaggle_pull(owner: str, slug: str, dest: Path) -> Path:
    """Fetch a notebook's source (``kernels pull``) with the Kaggle API client into a new
    folder under ``dest``; returns the ``.ipynb`` file. Credentials come from the client's
    standard sources and are never read or printed here."""
    try:
        from kaggle.api.kaggle_api_extended import KaggleApi
    except ImportError:
        raise JunoBenchError("the Kaggle API client is not installed",
                             hint="pip install kaggle, or give the original notebook as a "
                                  "local .ipynb") from None
    folder = Path(tempfile.mkdtemp(prefix=".pull-", dir=dest))
    try:
        api = KaggleApi()
        api.authenticate()
        api.kernels_pull(f"{owner}/{slug}", path=str(folder))
    except Exception as error:  # the client raises many types (auth, HTTP, not found)
        shutil.rmtree(folder, ignore_errors=True)
        raise JunoBenchError(f"could not pull {owner}/{slug}: {type(error).__name__}: "
                             f"{_redact(str(error))}",
                             hint="check the notebook and your Kaggle credentials") from None
    notebooks = sorted(folder.glob("*.ipynb"))
    if len(notebooks) != 1:
        shutil.rmtree(folder, ignore_errors=True)
        raise JunoBenchError(f"{owner}/{slug} is not one Jupyter notebook "
                             f"({len(notebooks)} .ipynb files pulled)",
                             hint="give the original notebook as a local .ipynb")
    return notebooks[0]


def mirror_fetch(mirror: str | Path) -> Fetch:
    """A fetch that reads ``MIRROR/<owner>/<slug>/`` (``MIRROR/competitions/<slug>/``); for
    a handle of version N, ``MIRROR/<owner>/<slug>/versions/<N>/`` when the mirror has it."""
    root = Path(mirror)

    def fetch(handle: str) -> Path:
        base = root / _base_of(handle)
        version = _version_of(handle)
        versioned = base / "versions" / version if version is not None else None
        folder = versioned if versioned is not None and versioned.is_dir() else base
        if not folder.is_dir():
            raise JunoBenchError(f"{handle} is not in the mirror", file=folder,
                                 hint="mirror datasets as DIR/<owner>/<slug>/")
        return folder

    return fetch


def download(datasets: str | Path, dest: str | Path, *, mirror: str | Path | None = None,
             fetch: Fetch | None = None) -> list[Downloaded]:
    """Fetch every dataset of a datasets table (``url`` or ``handle`` column, optional
    ``version``) into ``dest``: version N of ``owner/slug`` in
    ``DEST/<owner>/<slug>/versions/<N>/``, a dataset without a version in
    ``DEST/<owner>/<slug>/latest/``, each with a record of its files (size, sha256) beside
    it (``<folder>.download.json``).

    Resumable: a version whose record matches the files present (sizes and sha256) is
    skipped; an interrupted or altered one is fetched again and swapped in whole, and of
    the folder it replaces only the files its record lists are deleted. A dataset that
    cannot be fetched does not stop the others: every one is tried, then
    :class:`DownloadFailed` names each failure.
    """
    fetch = fetch or (mirror_fetch(mirror) if mirror is not None else kagglehub_fetch)
    dest = Path(dest)
    handles = _handles(Path(datasets))
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise JunoBenchError(f"cannot create the download folder ({error.strerror or error})",
                             file=dest) from None
    done: list[Downloaded] = []
    failures: list[tuple[str, str]] = []
    for handle in handles:
        try:
            done.append(_download_one(handle, dest, fetch))
        except JunoBenchError as error:
            failures.append((handle, str(error)))
        except OSError as error:
            failures.append((handle, f"{error.strerror or error}"))
    if failures:
        raise DownloadFailed(done, failures, dest)
    return done


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a datasets table (CSV or xlsx) as dicts."""
    from junobench.data.tables import read_table

    if not path.is_file():
        raise JunoBenchError("datasets table not found", file=path,
                             hint="write it with junobench construct kaggle-metadata")
    if path.suffix.lower() == ".csv":
        try:
            text = read_regular(path, limit=MAX_TEXT_BYTES).decode("utf-8-sig")
            return list(csv.DictReader(io.StringIO(text, newline="")))
        except OSError as error:
            raise JunoBenchError(f"cannot read the datasets table ({error.strerror or error})",
                                 file=path) from None
        except UnicodeDecodeError as error:
            raise JunoBenchError(f"the datasets table is not UTF-8 text ({error.reason} at byte "
                                 f"{error.start})", file=path, hint="save it as UTF-8 CSV") from None
        except csv.Error as error:
            raise JunoBenchError(f"the datasets table is not valid CSV ({error})", file=path) from None
    return read_table(path).records()


def _handles(path: Path) -> list[str]:
    """Unique download handles of a datasets table, in order of first appearance."""
    records = read_rows(path)
    if records and not ({"handle", "url"} & set(records[0])):
        raise JunoBenchError("the datasets table has neither a 'handle' nor a 'url' column",
                             file=path, hint="write it with junobench construct kaggle-metadata")
    handles: dict[str, None] = {}
    for number, record in enumerate(records, start=2):
        handle, url = record.get("handle"), record.get("url")
        if not handle and url:
            try:
                handle = handle_of(str(url))
            except ValueError as error:
                raise JunoBenchError(f"row {number}: {error}", file=path) from None
        version = _version_number(record.get("version"), path, number)
        if handle and version is not None and "/versions/" not in str(handle) \
                and not str(handle).startswith("competitions/"):
            handle = f"{handle}/versions/{version}"
        if handle:
            handles[str(handle)] = None
    return list(handles)


def _version_number(value: Any, path: Path, row: int) -> int | None:
    """A dataset version from a table cell: a positive whole number (``3``, ``3.0``), or
    None for an empty cell; anything else names the row."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    try:
        number = float(text)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number.is_integer() and 1 <= number < 1e9):
        raise JunoBenchError(f"row {row}: version {text[:40]!r} is not a positive whole number",
                             file=path, hint="give the dataset version the notebook used, or "
                                             "leave the cell empty for the latest")
    return int(number)


def _base_of(handle: str) -> Path:
    """``owner/slug/versions/3`` → ``owner/slug`` (``code/owner/slug`` for a notebook's
    output); refuses anything but plain names."""
    parts = handle.split("/")
    size = 3 if parts[0] == "code" else 2
    base = parts[:size]
    if len(base) != size or any(not re.fullmatch(r"[\w.-]+", p) or p in (".", "..") for p in base):
        raise JunoBenchError(f"{handle!r} is not a Kaggle handle (owner/slug)")
    return Path(*base)


def _version_of(handle: str) -> str | None:
    """The version of ``owner/slug/versions/N`` (None without one); refuses other tails."""
    parts = handle.split("/")
    tail = parts[3 if parts[0] == "code" else 2:]
    if not tail:
        return None
    if len(tail) == 2 and tail[0] == "versions" and re.fullmatch(r"[1-9][0-9]{0,8}", tail[1]):
        return tail[1]
    raise JunoBenchError(f"{handle!r} is not a Kaggle handle (owner/slug or owner/slug/versions/N)")


def _folder_of(handle: str) -> Path:
    """Where ``handle`` is kept under the download folder: ``owner/slug/versions/N`` or
    ``owner/slug/latest``."""
    version = _version_of(handle)
    return _base_of(handle) / ("latest" if version is None else f"versions/{version}")


def _download_one(handle: str, dest: Path, fetch: Fetch) -> Downloaded:
    folder = dest / _folder_of(handle)
    record_path = folder.with_name(folder.name + ".download.json")
    recorded = _read_record(record_path, handle)
    if recorded is not None and _matches(folder, recorded):
        return Downloaded(handle, folder, recorded, skipped=True)
    if os.path.lexists(folder):
        written = {str(f.get("path")) for f in recorded or []}
        foreign = unlisted_files(folder, written) if recorded is not None and folder.is_dir() else []
        if recorded is None or foreign or folder.is_symlink():
            shown = f" ({', '.join(foreign[:5])})" if foreign else ""
            raise JunoBenchError(f"{handle}: the folder holds files `construct download` did not "
                                 f"write{shown}", file=folder,
                                 hint="move them away, then run again: a download replaces only "
                                      "its own files")
    source = fetch(handle)
    with locked(dest):
        earlier = [str(f.get("path")) for f in recorded or [] if relative_name(f.get("path")) == f.get("path")]
        with swapped_in(folder, earlier,  # a file kept appeared while the new copy was made
                        kept="%(old)s: kept %(files)s, which the earlier download did not write") as staging:
            files = _copy_tree(source, staging)
        write_text(record_path, json.dumps({"handle": handle, "files": files}, indent=2) + "\n")
    return Downloaded(handle, folder, files, skipped=False)


def _copy_tree(source: Path, target: Path) -> list[dict[str, Any]]:
    """Copy regular files of ``source`` into ``target``; their size and sha256."""
    if source.is_file():  # kagglehub returns a file for single-file downloads
        pairs = [(source, Path(source.name))]
    else:
        pairs = [(p, p.relative_to(source)) for p in sorted(source.rglob("*"))
                 if p.is_file() and not p.is_symlink()]
    files = []
    for path, relative in pairs:
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        with os.fdopen(open_regular(path), "rb") as reader, destination.open("wb") as writer:
            while chunk := reader.read(1 << 20):
                digest.update(chunk)
                writer.write(chunk)
                size += len(chunk)
        files.append({"path": relative.as_posix(), "size": size, "sha256": digest.hexdigest()})
    return files


def _read_record(path: Path, handle: str) -> list[dict[str, Any]] | None:
    try:
        data = json.loads(read_regular(path, limit=64 << 20).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("handle") != handle:
        return None
    files = data.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        return None
    return files


def _matches(folder: Path, files: list[dict[str, Any]]) -> bool:
    """The recorded files are all there, regular files inside ``folder`` with their
    recorded sizes and sha256 (verified, not trusted)."""
    from junobench.data.export import file_digest

    if not folder.is_dir() or folder.is_symlink():
        return False
    for entry in files:
        name = entry.get("path")
        if not isinstance(name, str) or relative_name(name) != name:
            return False
        try:
            found = file_digest(folder / name)
        except OSError:
            return False
        if found != {"sha256": entry.get("sha256"), "size": entry.get("size")}:
            return False
    return True


def _redact(text: str) -> str:
    """Drop anything that looks like a credential from a message before showing it."""
    return re.sub(r"(?i)(key|token|password|secret)([\"']?\s*[:=]\s*)\S+", r"\1\2***", text)


def _int(value: Any) -> int | None:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None
