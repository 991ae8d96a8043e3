"""``junobench export``: a snapshot's records as parquet + dataset card + checksums.

The export is the Hub layout of :mod:`junobench.hub.read_export`, readable by stock
``datasets.load_dataset(dir, "cases")``. Rows and features are exactly the builder's.
Exporting the same snapshot twice gives byte-identical files. The export is written into
a new directory beside ``out`` and moved into place only when complete: a failed export
leaves a previous ``out`` as it was.

>>> result = export("sample", "export")
>>> sorted(result.files)
['README.md', 'cases/test-00000-of-00001.parquet', 'notebooks/test-00000-of-00001.parquet']
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.hub.read_export import CARD, CONFIG_NAMES, MANIFEST, MANIFEST_FORMAT, PARQUET, file_digest


@dataclass
class ExportResult:
    """What an export wrote: the directory, row counts and the manifest's files."""

    out: Path
    rows: dict[str, int]
    files: dict[str, dict[str, Any]]
    report: dict[str, Any]


def export(
    source: str | Path,
    out: str | Path,
    *,
    revision: str | None = None,
    skip_invalid: bool = False,
    repo_id: str | None = None,
    template: str | Path | None = None,
    cache_dir: str | Path | None = None,
) -> ExportResult:
    """Write the records of ``source`` (a snapshot, ``"sample"`` or a Hub repo) to ``out``.

    ``repo_id`` is the repo the card's loading examples name (default the published one);
    ``template`` replaces ``data_cards/junobench.md``.
    """
    from junobench.data.build import build
    from junobench.data.snapshot import resolve
    from junobench.envs.environment import snapshot_environment
    from junobench.hub.card import DEFAULT_REPO_ID

    root = resolve(source, revision=revision)
    out = Path(out).expanduser().absolute()
    _check_target(root, out)
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
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        staging.chmod(0o777 & ~_umask())
        write_export(staging, records, report_dict, repo_id=repo_id or DEFAULT_REPO_ID,
                     template=template)
        manifest = json.loads((staging / MANIFEST).read_text(encoding="utf-8"))
        _move_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportResult(out, {c: len(d) for c, d in records.items()}, manifest["files"], report_dict)


def write_export(directory: Path, records: dict[str, Any], report: dict[str, Any], *,
                 repo_id: str, template: str | Path | None = None) -> None:
    """Write the parquet files, the card and the manifest of ``records`` into ``directory``."""
    import datasets

    from junobench.hub.card import render_card

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
    card = render_card(infos, records["cases"].to_list(), records["notebooks"].to_list(), report,
                       repo_id=repo_id, template=template)
    (directory / CARD).write_text(card, encoding="utf-8", newline="\n")
    files = {name: file_digest(directory / name) for name in sorted([CARD, *PARQUET.values()])}
    manifest = {
        "format": MANIFEST_FORMAT,
        "files": files,
        "rows": {config: len(records[config]) for config in CONFIG_NAMES},
        "report": report,
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                      encoding="utf-8", newline="\n")


def _check_target(root: Path, out: Path) -> None:
    """Refuse an ``out`` that is inside the snapshot, or an existing directory that is not an export."""
    resolved = out.resolve()
    if resolved == root or root in resolved.parents:
        raise JunoBenchError("the export directory is inside the snapshot", file=out,
                             hint="nothing in a snapshot is ever modified: choose a directory outside it")
    if out.exists() and not out.is_dir():
        raise JunoBenchError("the export target exists and is not a directory", file=out,
                             hint="choose a new directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise JunoBenchError(f"the directory is not empty and holds no {MANIFEST}: not an earlier export",
                             file=out, hint="an export replaces only an earlier export; choose a new "
                             "or empty directory")


def _move_into_place(staging: Path, out: Path) -> None:
    """Put the complete ``staging`` at ``out``; an earlier ``out`` is swapped out, then removed."""
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if not out.exists():
        os.rename(staging, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    old.rmdir()
    os.rename(out, old)
    try:
        os.rename(staging, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
