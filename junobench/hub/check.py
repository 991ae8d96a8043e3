"""``junobench check DIR``: is an export intact and loadable?

Checks the checksum manifest (every listed file present, size and sha256 equal, nothing
unlisted), the card (its YAML parses, names both configs with their parquet file and the
``cases`` default, and carries the records' features; its body names the licence of
every input dataset), ``croissant.json`` (Croissant 1.0, a FileObject per parquet file
with its sha256, a RecordSet per config; validated by mlcroissant when it is installed)
and each parquet file (readable, the records' schema, the manifest's row count). Every
problem is reported, with its file.

>>> from junobench.hub.write_export import export
>>> _ = export("sample", "export")
>>> problems = check("export")
>>> print("\\n".join(map(str, problems)) or "ok")
ok
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from junobench.data.export import (
    CARD,
    CONFIG_NAMES,
    CROISSANT,
    DEFAULT_CONFIG,
    MANIFEST,
    PARQUET,
    SPLIT,
    file_digest,
    read_manifest,
)
from junobench.errors import JunoBenchError, Problem
from junobench.safety.paths import is_within, link_root, require_regular, require_utf8_path
from junobench.safety.text import first_line

#: Files that may sit in an export directory without being listed: the Hub client's
#: download bookkeeping.
_IGNORED_DIRS = (".cache", ".git")


def check(directory: str | Path) -> list[Problem]:
    """Every problem found in the export ``directory`` (empty when it is intact)."""
    root = Path(directory)
    if not root.is_dir():
        raise JunoBenchError("no such export directory", file=root,
                             hint="pass the directory written by `junobench export`")
    require_utf8_path(root)
    problems: list[Problem] = []
    manifest = _check_manifest(root, problems)
    _check_card(root, problems)
    rows = manifest.get("rows", {}) if manifest else {}
    for config in CONFIG_NAMES:
        _check_parquet(root, config, rows.get(config), problems)
    _check_croissant(root, problems)
    _check_card_licences(root, problems)
    return problems


def _check_manifest(root: Path, problems: list[Problem]) -> dict[str, Any] | None:
    try:
        manifest = read_manifest(root)
    except JunoBenchError as error:
        problems.append(Problem(error.problem_.problem, MANIFEST, hint=error.problem_.hint))
        return None
    listed = manifest["files"]
    for name in sorted({CARD, *PARQUET.values()} - set(listed)):
        problems.append(Problem("not listed in the manifest", name, hint="re-export"))
    base = link_root(root)
    for name, expected in sorted(listed.items()):
        path = root / name
        if not os.path.lexists(path):
            problems.append(Problem("listed in the manifest but missing", name))
            continue
        if not is_within(path, base):
            problems.append(Problem("a link out of the export", name,
                                    hint="an export holds its files; it never links out"))
            continue
        try:
            actual = file_digest(path)
        except OSError as error:
            problems.append(Problem(f"cannot read ({error.strerror or error})", name))
            continue
        if actual["size"] != expected["size"]:
            problems.append(Problem(f"size {actual['size']} bytes, the manifest says {expected['size']}",
                                    name, hint="the file changed after export: re-export"))
        elif actual["sha256"] != expected["sha256"]:
            problems.append(Problem(f"sha256 {actual['sha256'][:16]}…, the manifest says "
                                    f"{expected['sha256'][:16]}…", name,
                                    hint="the file changed after export: re-export"))
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        name = path.relative_to(root).as_posix()
        if name != MANIFEST and name not in listed and not name.startswith(_IGNORED_DIRS):
            problems.append(Problem("not listed in the manifest", name,
                                    hint="an export holds only what `junobench export` wrote"))
    return manifest


def _check_card(root: Path, problems: list[Problem]) -> None:
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    from junobench.data.records import FEATURES

    path = root / CARD
    if not path.is_file():
        problems.append(Problem("the dataset card is missing", CARD, hint="re-export"))
        return
    if not _regular(path, CARD, problems):
        return
    try:
        data = DatasetCard.load(path).data
    except Exception as error:  # the card parser raises ValueError, yaml errors, ...
        problems.append(Problem(f"the card's YAML does not parse ({first_line(error)})", CARD))
        return
    try:
        configs = MetadataConfigs.from_dataset_card_data(data)
        infos = DatasetInfosDict.from_dataset_card_data(data)
    except Exception as error:
        problems.append(Problem(f"the card's configs or dataset_info are malformed ({first_line(error)})",
                                CARD))
        return
    for config in CONFIG_NAMES:
        entry = configs.get(config)
        if entry is None:
            problems.append(Problem(f"the card's YAML names no config {config!r}", CARD))
            continue
        files = entry.get("data_files")
        expected = [{"split": SPLIT, "path": PARQUET[config]}]
        if files != expected:
            problems.append(Problem(f"config {config!r} has data_files {files!r}, expected {expected!r}",
                                    CARD))
        if config == DEFAULT_CONFIG and not entry.get("default"):
            problems.append(Problem(f"config {config!r} is not marked as the default", CARD))
        info = infos.get(config)
        if info is None or info.features is None:
            problems.append(Problem(f"the card's dataset_info has no features for {config!r}", CARD))
        elif info.features != FEATURES[config]:
            problems.append(Problem(f"the card's features for {config!r} are not the records' features",
                                    CARD, hint="re-export with this version of junobench"))


def _check_parquet(root: Path, config: str, rows: int | None, problems: list[Problem]) -> None:
    import json

    import pyarrow.parquet as pq

    from junobench.data.records import FEATURES

    name = PARQUET[config]
    path = root / name
    if not path.is_file():
        problems.append(Problem(f"the parquet file of config {config!r} is missing", name))
        return
    if not _regular(path, name, problems):
        return
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        count = parquet.metadata.num_rows
        parquet.read()  # decodes every page: a damaged page fails here
    except Exception as error:  # pyarrow raises ArrowInvalid, OSError, ... on damaged files
        problems.append(Problem(f"not a readable parquet file ({first_line(error)})", name))
        return
    features = FEATURES[config]
    if schema.remove_metadata() != features.arrow_schema.remove_metadata():
        problems.append(Problem(f"its columns are not those of the {config!r} records", name,
                                hint="re-export with this version of junobench"))
    stored = (schema.metadata or {}).get(b"huggingface")
    try:
        stored_features = json.loads(stored)["info"]["features"] if stored else None
    except (ValueError, KeyError, TypeError):
        stored_features = None
    if stored_features != features.to_dict():
        problems.append(Problem(f"its datasets features metadata is not that of the {config!r} records",
                                name, hint="re-export with this version of junobench"))
    if rows is not None and count != rows:
        problems.append(Problem(f"{count} rows, the manifest says {rows}", name))


def _check_croissant(root: Path, problems: list[Problem]) -> None:
    """``croissant.json``: Croissant 1.0, each parquet file with its sha256, both record sets."""
    import json

    from junobench.hub.croissant import CONFORMS_TO, validate_with_mlcroissant
    from junobench.safety.paths import read_regular

    path = root / CROISSANT
    if not os.path.lexists(path):
        problems.append(Problem("the Croissant metadata is missing", CROISSANT,
                                hint="re-export with this version of junobench"))
        return
    if not _regular(path, CROISSANT, problems):
        return
    try:
        data = json.loads(read_regular(path, limit=64 << 20).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        problems.append(Problem(f"not readable JSON ({first_line(error)})", CROISSANT, hint="re-export"))
        return
    if not isinstance(data, dict) or data.get("conformsTo") != CONFORMS_TO:
        problems.append(Problem(f"does not declare conformsTo {CONFORMS_TO}", CROISSANT, hint="re-export"))
        return
    if not isinstance(data.get("@context"), dict):  # a remote context would be fetched by a reader
        problems.append(Problem("its @context is not given inline", CROISSANT, hint="re-export"))
        return
    files = {str(d.get("contentUrl")): d for d in _items(data.get("distribution"))}
    for config in CONFIG_NAMES:
        entry = files.get(PARQUET[config])
        if entry is None:
            problems.append(Problem(f"names no FileObject for {PARQUET[config]}", CROISSANT, hint="re-export"))
            continue
        try:
            actual = file_digest(root / PARQUET[config])["sha256"]
        except OSError:
            continue  # reported with the parquet file
        if entry.get("sha256") != actual:
            problems.append(Problem(f"the sha256 of {PARQUET[config]} is not the file's", CROISSANT,
                                    hint="the parquet changed after export: re-export"))
    sets = {str(r.get("name")) for r in _items(data.get("recordSet"))}
    for config in CONFIG_NAMES:
        if config not in sets:
            problems.append(Problem(f"has no RecordSet {config!r}", CROISSANT, hint="re-export"))
    if any(p.file == CROISSANT for p in problems):
        return
    for message in validate_with_mlcroissant(path) or []:
        problems.append(Problem(f"mlcroissant: {message}", CROISSANT))


def _items(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON-LD list (one object stands for a list of one)."""
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]


def _check_card_licences(root: Path, problems: list[Problem]) -> None:
    """The card's body names the licence of every input dataset of the cases."""
    import pyarrow.parquet as pq

    from junobench.hub.card import licence_names
    from junobench.safety.text import markdown_text

    try:
        cases = pq.read_table(root / PARQUET["cases"], columns=["case_id", "datasets"]).to_pylist()
        card = (root / CARD).read_text(encoding="utf-8")
    except Exception:  # reported with the card or the parquet file
        return
    body = card.split("\n---", 2)[-1]
    for licence in licence_names(cases):
        if markdown_text(licence) not in body:
            problems.append(Problem(f"the card does not name the input-dataset licence {licence!r}", CARD,
                                    hint="re-export with the published card template"))


def _regular(path: Path, name: str, problems: list[Problem]) -> bool:
    """Whether ``path`` is a regular file inside the export (a problem is added if not)."""
    if not is_within(path, link_root(path.parent if "/" not in name else path.parent.parent)):
        return False  # reported with the manifest
    try:
        require_regular(path)
    except OSError as error:
        problems.append(Problem(f"cannot read ({error.strerror or error})", name))
        return False
    return True
