"""``junobench export``: a snapshot's records as parquet + dataset card + checksums.

The export is the Hub layout of :mod:`junobench.data.export`, readable by stock
``datasets.load_dataset(dir, "cases")``. Rows and features are exactly the builder's.
Exporting the same snapshot twice gives byte-identical files. The export is written into
a new directory beside ``out`` and moved into place only when complete: a failed export
leaves a previous ``out`` as it was.

>>> result = export("sample", "export")
>>> sorted(name for name in result.files if not name.startswith("benchmark/"))
... # doctest: +NORMALIZE_WHITESPACE
['README.md', 'benchmark_desc.xlsx', 'cases/test-00000-of-00001.parquet', 'croissant.json',
 'environment/environment.json', 'ground_truth_crash_prediction.xlsx',
 'notebooks/test-00000-of-00001.parquet']
>>> "benchmark/pandas_1/pandas_1_reproduced.ipynb" in result.files
True
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.data.export import (
    CARD,
    CONFIG_NAMES,
    CROISSANT,
    EXPORT_FILES,
    MANIFEST,
    MANIFEST_FORMAT,
    PARQUET,
    file_digest,
    is_export_name,
    read_manifest,
)
from junobench.errors import JunoBenchError
from junobench.render import some
from junobench.safety.atomic import locked, recover, swapped_in, write_text
from junobench.safety.paths import check_not_linked_out, read_regular, require_utf8_path, unlisted_files


@dataclass
class ExportResult:
    """What an export wrote: the directory, row counts and the manifest's files."""

    out: Path
    rows: dict[str, int]
    files: dict[str, dict[str, Any]]
    report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def export(
    source: str | Path,
    out: str | Path,
    *,
    revision: str | None = None,
    skip_invalid: bool = False,
    repo_id: str | None = None,
    template: str | Path | None = None,
    cache_dir: str | Path | None = None,
    version: str | None = None,
    published: str | None = None,
    licences: Any = None,
    licence_policy: str = "warn",
    progress: Any = None,
    renamed: bytes | None = None,
) -> ExportResult:
    """Write the records of ``source`` (a snapshot, ``"sample"`` or a Hub repo) to ``out``.

    ``repo_id`` is the repo the card's loading examples name (default the published one);
    ``template`` replaces ``data_cards/junobench.md``; ``version`` is the dataset version
    recorded (default: the snapshot's ``VERSION`` file, if any); ``published`` the release
    date (``YYYY-MM-DD``) ``croissant.json`` gives (none by default: exports stay
    byte-identical). The export carries the snapshot's layout (:mod:`junobench.hub.runnable`);
    data files whose licence ``licences`` (a :class:`~junobench.data.licences.LicencePolicy`,
    default the open licences) does not allow are named in :attr:`ExportResult.warnings`
    (``licence_policy="warn"``) or refuse the export (``"error"``). ``progress`` is told
    each step as it starts. ``renamed`` replaces the snapshot's ``renamed_cases.json``
    (a release writes the record of its renames and removals there).
    """
    from junobench.data.build import build
    from junobench.data.layout import VERSION_FILE
    from junobench.data.licences import LicencePolicy
    from junobench.data.release_files import data_digests, dataset_version
    from junobench.data.snapshot import resolve
    from junobench.envs.environment import snapshot_environment
    from junobench.hub import runnable
    from junobench.hub.card import DEFAULT_REPO_ID

    step = progress or (lambda _: None)
    root = resolve(source, revision=revision)
    out = require_utf8_path(Path(out).expanduser().absolute())
    _check_target(root, out)
    version = version or dataset_version(root)
    step("building the records")
    cases, report = build(root, "cases", skip_invalid=skip_invalid, cache_dir=cache_dir)
    notebooks, _ = build(root, "notebooks", skip_invalid=skip_invalid, cache_dir=cache_dir)
    records = {"cases": cases, "notebooks": notebooks}
    report_dict = {
        "skipped": list(report.skipped),
        "problems": [p.to_dict() for p in report.problems],
        "absent": {what: sorted(ids) for what, ids in sorted(report.absent.items())},
        "unlisted_folders": list(report.unlisted_folders),
        "unpinned": dict(sorted(report.unpinned.items())),
        "environment": snapshot_environment(root).summary(),
    }
    digests = data_digests(root)
    exported = [str(c) for c in cases["case_id"]]
    carried = runnable.layout_files(root, exported)
    carried.pop(VERSION_FILE, None)  # written with the version exported
    warnings = runnable.apply_licence_policy(
        runnable.restricted_data(root, exported, list(carried), licences or LicencePolicy.default()),
        licence_policy)
    with locked(out.parent):
        recover(out, owned=_is_own_folder)
        _check_target(root, out)  # again: a recovered export is back, or a folder appeared
        with swapped_in(out, _earlier_export_files, kept="%(old)s: the earlier export of %(out)s held files "
                        "it did not write (%(files)s); they were kept there") as staging:
            step(f"copying the snapshot layout ({len(carried)} files) beside the parquet files")
            runnable.copy_files(carried, staging)
            step("writing the parquet files, card, croissant.json and checksums")
            write_export(staging, records, report_dict, repo_id=repo_id or DEFAULT_REPO_ID,
                         template=template, version=version, data=digests, published=published,
                         extra={**carried_files(root, renamed),
                                **({VERSION_FILE: f"{version}\n".encode()} if version else {})},
                         layout=sorted(carried))
            manifest = read_manifest(staging)
    return ExportResult(out, {c: len(d) for c, d in records.items()}, manifest["files"], report_dict, warnings)


def write_export(directory: Path, records: dict[str, Any], report: dict[str, Any], *,
                 repo_id: str, template: str | Path | None = None, version: str | None = None,
                 data: dict[str, dict[str, str]] | None = None, published: str | None = None,
                 extra: dict[str, bytes] | None = None, layout: list[str] | None = None) -> None:
    """Write the parquet files, the card, ``croissant.json`` and the manifest of ``records``
    into ``directory``; ``version`` is the dataset's, ``data`` the digests of the input-data
    files of each case (both recorded in the manifest); ``extra`` (export file name → bytes:
    files of the snapshot carried as they are)."""
    import datasets

    from junobench.hub.card import render_card
    from junobench.hub.croissant import croissant

    infos = {}
    for config in CONFIG_NAMES:
        dataset = records[config]
        path = directory / PARQUET[config]
        path.parent.mkdir(parents=True, exist_ok=True)
        dataset.to_parquet(str(path))
        # No split sizes: they would make ``load_dataset(..., filters=...)`` fail its split
        # verification (the counts are in the card body and the manifest). The byte sizes
        # key ``datasets``' cache of a local export on more than its directory name.
        infos[config] = datasets.DatasetInfo(features=dataset.features,
                                             download_size=path.stat().st_size,
                                             dataset_size=dataset.data.nbytes)
    cases = records["cases"].to_list()
    card = render_card(infos, cases, records["notebooks"].to_list(), report,
                       repo_id=repo_id, template=template, version=version)
    write_text(directory / CARD, card)
    parquet = {config: file_digest(directory / PARQUET[config]) for config in CONFIG_NAMES}
    metadata = croissant({c: records[c].features for c in CONFIG_NAMES}, parquet, cases, report,
                         repo_id=repo_id, version=version, published=published)
    write_text(directory / CROISSANT, json.dumps(metadata, indent=2, ensure_ascii=False) + "\n")
    for name, content in (extra or {}).items():
        (directory / name).write_bytes(content)
    files = {name: file_digest(directory / name)
             for name in sorted({CARD, CROISSANT, *PARQUET.values(), *(extra or {}), *(layout or [])})}
    manifest = {
        "format": MANIFEST_FORMAT,
        "files": files,
        "rows": {config: len(records[config]) for config in CONFIG_NAMES},
        "report": report,
        "version": version,
        "data": data or {},
    }
    write_text(directory / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _check_target(root: Path, out: Path) -> None:
    """Refuse an ``out`` that is inside the snapshot or holds it, a link, a file, or a
    folder holding anything an earlier export did not write."""
    resolved = out.resolve()
    if resolved == root or root in resolved.parents:
        raise JunoBenchError("the export directory is inside the snapshot", file=out,
                             hint="nothing in a snapshot is ever modified: choose a directory outside it")
    if resolved in root.parents:
        raise JunoBenchError("the export directory holds the snapshot being exported", file=out,
                             hint="an export replaces its directory: choose one outside the snapshot")
    if out.is_symlink():
        raise JunoBenchError("the export target is a symbolic link", file=out,
                             hint="give the real path of the directory")
    if out.exists() and not out.is_dir():
        raise JunoBenchError("the export target exists and is not a directory", file=out,
                             hint="choose a new directory")
    if not out.is_dir() or not any(out.iterdir()):
        return
    hint = ("an export replaces only an earlier export, and nothing else: choose a new or "
            "empty directory, or move those files away")
    if not (out / MANIFEST).is_file():
        raise JunoBenchError(f"the directory is not empty and holds no {MANIFEST}: not an earlier export",
                             file=out, hint=hint)
    try:
        listed = set(read_manifest(out)["files"])
    except JunoBenchError as error:
        raise JunoBenchError(f"the directory holds no readable earlier export ({error.problem_.problem})",
                             file=out, hint=hint) from None
    foreign = unlisted_files(out, listed | {MANIFEST})
    if foreign:
        raise JunoBenchError(f"the earlier export holds files it did not write: {some(foreign, 5)}", file=out,
                             hint=hint)


def carried_files(root: Path, renamed: bytes | None = None) -> dict[str, bytes]:
    """The snapshot's files an export carries as they are: the record of renamed cases
    (``renamed_cases.json``, when there is one; it must be JSON), or ``renamed`` (``b""``:
    none)."""
    from junobench.data import layout

    if renamed is not None:  # b"": none
        return {layout.RENAMED_CASES: renamed} if renamed else {}
    path = root / layout.RENAMED_CASES
    if not os.path.lexists(path):
        return {}
    check_not_linked_out(path, root)
    try:
        data = read_regular(path, limit=16 << 20)
        json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as error:
        raise JunoBenchError(f"the record of renamed cases cannot be read ({error})", file=path,
                             hint="restore it, or remove it if no published id changed") from None
    return {layout.RENAMED_CASES: data}


#: What an export folder holds: its files, and the temporary files written on the way.
_EXPORT_FILES = EXPORT_FILES | {MANIFEST}
_TEMPORARY = re.compile(r"^(?:[^/]+/)?\.[^/]+\.tmp$")


def _is_own_folder(folder: Path) -> bool:
    """Whether a folder left beside an export by a killed run holds only what an export
    writes (so that removing or restoring it loses nothing else)."""
    for current, _, files in os.walk(folder):
        for name in files:
            path = Path(current, name)
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink() or not (relative in _EXPORT_FILES or is_export_name(relative)
                                         or _TEMPORARY.match(relative)):
                return False
    return True


def _earlier_export_files(old: Path) -> list[str]:
    """The files of the swapped-out earlier export (those its manifest lists), to delete;
    anything else that appeared there meanwhile stays, with a warning."""
    try:
        listed = list(read_manifest(old)["files"])
    except JunoBenchError:
        listed = []
    return [*listed, MANIFEST]
