"""What makes an export runnable: the snapshot layout beside the parquet configs.

An export carries, besides its parquet files, card and ``croissant.json``, the snapshot it
was made from in the published layout: ``benchmark_desc.xlsx``, the diagnosis table,
``VERSION``, the environment's files and, for every exported case, its folder
``benchmark/<case>/`` (notebooks, ``provenance.json``, ``data/`` with the input data and
their metadata files). ``verify``, ``checkout``, ``runtime-info`` and ``env`` then work on a
released version by its Hub id and revision; the card's YAML names the parquet files only,
so stock ``datasets.load_dataset`` reads the configs as before.

Input data go out under the licence policy ``validate`` applies
(:class:`junobench.data.licences.LicencePolicy`): each data file of a dataset whose licence
is unknown or outside the allow-list is named, as a warning (``warn``, the default) or as
a refusal of the whole export (``error``); ``off`` says nothing.

>>> from junobench.data.snapshot import sample_path
>>> files = layout_files(sample_path(), ["pandas_1"])
>>> sorted(f for f in files if f.startswith("benchmark/"))
['benchmark/pandas_1/data/passengers.csv', 'benchmark/pandas_1/data/passengers.metadata.json', \
'benchmark/pandas_1/pandas_1.ipynb', 'benchmark/pandas_1/pandas_1_fixed.ipynb', \
'benchmark/pandas_1/pandas_1_reproduced.ipynb']
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from junobench.data import layout
from junobench.data.licences import LicencePolicy, check_policy_mode
from junobench.errors import JunoBenchError
from junobench.safety.paths import open_regular


def layout_files(root: str | Path, case_ids: Sequence[str]) -> dict[str, Path]:
    """Export name → file of the snapshot, for the layout's root files and the folders of
    ``case_ids``. Links inside the snapshot are carried as the files they point to; a link
    out of it, or anything but a regular file, is a :class:`JunoBenchError` naming it
    (:func:`~junobench.data.layout.unexportable` says which; ``validate`` reports them all)."""
    root = Path(root)
    found = layout.snapshot_entries(root, case_ids)
    for path in found.values():
        refused = layout.unexportable(root, path)
        if refused is not None:
            raise JunoBenchError(refused[0], file=path, hint=refused[1])
    return found


def copy_files(files: dict[str, Path], into: Path) -> None:
    """Copy ``files`` (export name → file) into the folder ``into``."""
    for name, source in sorted(files.items()):
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(open_regular(source), "rb") as reader, open(target, "xb") as writer:
            shutil.copyfileobj(reader, writer, 1 << 20)


def restricted_data(root: str | Path, case_ids: Sequence[str], files: Sequence[str],
                    policy: LicencePolicy) -> list[str]:
    """One line per exported data file whose dataset's licence is unknown or outside
    ``policy``: ``benchmark/<case>/data/<file>: licence '…' (dataset '…')``."""
    from junobench.data.metadata import load_metadata_json

    root = Path(root)
    exported = set(files)
    lines = []
    for case_id in case_ids:
        for path in layout.metadata_files(root, case_id):
            try:
                meta = load_metadata_json(path, case=case_id)
            except JunoBenchError:
                continue  # validate reports it
            if not isinstance(meta, dict):
                continue
            licence = meta.get("license")
            verdict = policy.verdict(licence if isinstance(licence, str) else None)
            if verdict == "allowed":
                continue
            what = "unknown licence" if verdict == "unknown" else "licence not in the allow-list"
            why = f"{what} ({licence or 'none stated'}; dataset {meta.get('title') or layout.dataset_name(path)!r})"
            for listed in meta.get("files") or []:
                name = f"{layout.BENCHMARK_DIR}/{case_id}/{layout.DATA_DIR}/{listed}"
                if name in exported:
                    lines.append(f"{name}: {why}")
                else:  # a listed folder: its files
                    lines += [f"{f}: {why}" for f in sorted(exported) if f.startswith(name + "/")]
    return lines


def apply_licence_policy(lines: Sequence[str], mode: str) -> list[str]:
    """The warnings of :func:`restricted_data`'s ``lines`` under ``mode``; with ``error``, a
    :class:`JunoBenchError` naming every file."""
    check_policy_mode(mode)
    if not lines or mode == "off":
        return []
    if mode == "error":
        raise JunoBenchError(f"{len(lines)} data file(s) may not be redistributed: " + "; ".join(lines),
                             hint="replace the data (construct synthetic), allow the licence "
                                  "(--allow-licence, --licences), or --licence-policy warn")
    return [f"redistributed under the licence policy's warning: {line}" for line in lines]
