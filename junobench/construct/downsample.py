"""Smaller input data for a case: keep a seeded share of each class.

- :func:`downsample_images`: image folders, ``k`` images or a fraction per class folder;
- :func:`downsample_archive`: zip and tar archives, sampled per top-level folder and
  extracted safely (no absolute paths, no ``..``, no links leaving the destination, no
  bombs: declared and actual sizes are capped);
- :func:`downsample_table`: CSV, TSV, parquet and xlsx tables, stratified by a label column;
- :func:`downsample_paired`: a table whose rows reference files: the kept rows and exactly
  the files they reference.

Each class is sampled with its own generator seeded from ``seed`` and the class name, so
the same inputs and seed give the same output and adding a class does not change the
others. Outputs are written into a fresh destination (nothing is left behind when a step
fails), and each run appends its modification (method, ratio, seed, sizes before and
after) to the dataset's metadata file (:mod:`junobench.construct.provenance`).

>>> sample_count(10, fraction=0.25), sample_count(10, per_class=3), sample_count(2, per_class=5)
(2, 3, 2)
"""

from __future__ import annotations

import logging
import math
import random
import shutil
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from junobench.construct import provenance
from junobench.errors import JunoBenchError
from junobench.safety.archives import (
    MAX_ARCHIVE_BYTES,
    MAX_ARCHIVE_MEMBERS,
    MAX_COMPRESSION_RATIO,
    Member,
    archive_members,
    human_size,
    safe_name,
    unsafe_archive,
)
from junobench.safety.atomic import atomic_path, place, staged

logger = logging.getLogger("junobench")

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff",
                              ".webp", ".ppm", ".pgm"})
_CHUNK = 1 << 20


@dataclass
class Downsampled:
    """What a downsampling kept: counts before and after, per class and in total."""

    out: Path
    unit: str  # "files" or "rows"
    before: int
    after: int
    classes: dict[str, tuple[int, int]] = field(default_factory=dict)  # class → (before, after)
    bytes_before: int | None = None
    bytes_after: int | None = None

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else 0.0


# --------------------------------------------------------------------------- sampling


def sample_count(n: int, *, fraction: float | None = None, per_class: int | None = None) -> int:
    """How many of ``n`` items a class keeps: ``per_class`` (at most n), or ``fraction``
    of n rounded, at least one of a non-empty class."""
    if per_class is not None:
        return min(per_class, n)
    assert fraction is not None
    return min(n, max(1, round(n * fraction))) if n else 0


def choose(items: Sequence[Any], group: str, *, seed: int, fraction: float | None = None,
           per_class: int | None = None) -> list[int]:
    """Indices (ascending) of the items a class keeps, drawn with ``seed`` and its name."""
    k = sample_count(len(items), fraction=fraction, per_class=per_class)
    return sorted(random.Random(f"{seed}:{group}").sample(range(len(items)), k))


def check_amount(fraction: float | None, per_class: int | None) -> None:
    if (fraction is None) == (per_class is None):
        raise JunoBenchError("give exactly one of --fraction and --per-class")
    if fraction is not None and not 0 < fraction <= 1:  # also refuses NaN
        raise JunoBenchError(f"--fraction {fraction} is not in (0, 1]")
    if per_class is not None and per_class < 1:
        raise JunoBenchError(f"--per-class {per_class} is not a positive number")


def _method(fraction: float | None, per_class: int | None, what: str) -> str:
    amount = f"{per_class} per {what}" if per_class is not None else f"{fraction:.4g} of each {what}"
    return f"seeded random sample: {amount}"


# --------------------------------------------------------------------------- output


@contextmanager
def fresh_output(out: Path) -> Iterator[Path]:
    """A staging folder beside ``out`` (which must be new or empty) that becomes ``out``
    in one rename on success; nothing is left on failure."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise JunoBenchError("the destination exists and is not empty", file=out,
                             hint="give a new folder; nothing is overwritten")
    with staged(out) as staging:
        yield staging
        place(staging, out)


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


# --------------------------------------------------------------------------- images


def downsample_images(source: str | Path, out: str | Path, *, fraction: float | None = None,
                      per_class: int | None = None, seed: int = 0,
                      metadata: str | Path | None = None, record: bool = True) -> Downsampled:
    """Keep ``per_class`` images or a ``fraction`` of each class folder (every folder that
    directly holds images). Other files follow the images: a file named after an image
    (``Annotations/2007_000027.xml`` for ``JPEGImages/2007_000027.jpg``, a ``.npy`` of its
    features) is kept only with its image; a text file that lists image ids (a split list
    such as VOC's ``ImageSets/Main/train.txt``) keeps only the lines of kept images; any
    other file is copied as it is."""
    check_amount(fraction, per_class)
    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise JunoBenchError("image folder not found", file=source)
    meta = provenance.resolve_metadata(out, metadata, record=record)
    classes: dict[str, list[Path]] = {}
    others: list[Path] = []
    for path in sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = path.relative_to(source)
        if path.suffix.lower() in IMAGE_EXTENSIONS:
            classes.setdefault(relative.parent.as_posix(), []).append(relative)
        else:
            others.append(relative)
    if not classes:
        raise JunoBenchError("no images found", file=source,
                             hint=f"images end with {', '.join(sorted(IMAGE_EXTENSIONS))}")
    result = Downsampled(out, "files", 0, 0)
    ids = {f.stem for files in classes.values() for f in files}
    kept_ids: set[str] = set()
    with fresh_output(out) as staging:
        for name, files in classes.items():
            kept = choose(files, name, seed=seed, fraction=fraction, per_class=per_class)
            for i in kept:
                _copy(source / files[i], staging / files[i])
                kept_ids.add(files[i].stem)
            result.classes[name] = (len(files), len(kept))
        for relative in others:
            if relative.stem in ids:  # an image's annotation or features: with its image
                if relative.stem in kept_ids:
                    _copy(source / relative, staging / relative)
            elif not _filter_id_list(source / relative, staging / relative, ids, kept_ids):
                _copy(source / relative, staging / relative)
    result.before = sum(b for b, _ in result.classes.values())
    result.after = sum(a for _, a in result.classes.values())
    _, result.bytes_before = provenance.tree_size(source)
    _, result.bytes_after = provenance.tree_size(out)
    _record(meta, result, _entry("images", source, result, fraction, per_class, seed,
                                 "class folder"))
    return result


def _filter_id_list(source: Path, target: Path, ids: set[str], kept: set[str]) -> bool:
    """Copy a text file whose lines start with image ids keeping the lines of kept images;
    False (nothing written) when the file is not such a list."""
    if source.suffix.lower() not in (".txt", ".lst", ".csv", ".tsv") or \
            source.stat().st_size > 256 * 1024**2:
        return False
    try:
        lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    except (UnicodeDecodeError, OSError):
        return False
    keys = [_first_token(line) for line in lines]
    listed = [k for k in keys if k in ids]
    if not listed or len(listed) < 0.5 * sum(1 for k in keys if k):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(line for line, key in zip(lines, keys, strict=True)
                              if key not in ids or key in kept), encoding="utf-8")
    return True


def _first_token(line: str) -> str:
    token = line.strip().replace(",", " ").replace("\t", " ").split(" ", 1)[0]
    return Path(token).stem if "/" in token or "." in token else token


def _record(meta: Path | None, result: Downsampled, entry: dict[str, Any]) -> None:
    """Record the modification, and the files written; a run that removed nothing is not
    recorded as downsampled (its files are listed all the same)."""
    reduced = result.after < result.before
    provenance.record(meta, entry if reduced else None, outputs=[result.out])
    if not reduced:
        logger.warning("nothing was removed from %s: every class keeps all its items, so "
                       "no downsampling is recorded", result.out)


# --------------------------------------------------------------------------- archives


def downsample_archive(source: str | Path, out: str | Path, *, fraction: float | None = None,
                       per_class: int | None = None, seed: int = 0,
                       max_bytes: int = MAX_ARCHIVE_BYTES, max_members: int = MAX_ARCHIVE_MEMBERS,
                       max_ratio: float = MAX_COMPRESSION_RATIO, metadata: str | Path | None = None,
                       record: bool = True) -> Downsampled:
    """Sample each top-level folder of a zip or tar archive and extract only the chosen
    files into ``out`` (files at the archive's root are all kept). The archive is refused
    past ``max_members`` members, ``max_bytes`` uncompressed bytes or a compression ratio
    of ``max_ratio`` (see :func:`archive_members`)."""
    for value, name in ((max_bytes, "--max-size"), (max_members, "--max-members"), (max_ratio, "--max-ratio")):
        if not value > 0:
            raise JunoBenchError(f"{name} must be positive, got {value}")
    check_amount(fraction, per_class)
    source, out = Path(source), Path(out)
    if not source.is_file():
        raise JunoBenchError("archive not found", file=source)
    meta = provenance.resolve_metadata(out, metadata, record=record)
    members = archive_members(source, max_bytes=max_bytes, max_members=max_members,
                              max_ratio=max_ratio)
    groups: dict[str, list[Member]] = {}
    for member in members:
        top = member.name.split("/", 1)[0] if "/" in member.name else ""
        groups.setdefault(top, []).append(member)
    chosen: list[Member] = []
    result = Downsampled(out, "files", len(members), 0)
    only_root = list(groups) == [""]
    for top, group in groups.items():
        # Files at the root beside folders (labels, notes) are kept; an archive of files
        # at the root only is sampled as one class.
        kept = (list(range(len(group))) if top == "" and not only_root else
                choose(group, top or "(root)", seed=seed, fraction=fraction,
                       per_class=per_class))
        chosen += [group[i] for i in kept]
        result.classes[top or "(root)"] = (len(group), len(kept))
    result.after = len(chosen)
    with fresh_output(out) as staging:
        try:
            written = _extract(source, chosen, staging, max_bytes)
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, OSError) as error:
            raise JunoBenchError(f"the archive is damaged ({error})", file=source,
                                 hint="nothing was extracted") from None
    result.bytes_before = sum(m.size for m in members)
    result.bytes_after = written
    _record(meta, result, _entry("archive", source, result, fraction, per_class, seed,
                                 "top-level folder"))
    return result


def _extract(source: Path, members: Sequence[Member], staging: Path, max_bytes: int) -> int:
    """Write the chosen members under ``staging``, counting actual bytes against the cap."""
    written = 0
    root = staging.resolve()
    with _opener(source) as open_member:
        for member in members:
            target = (staging / member.name).resolve()
            if root not in target.parents:
                raise unsafe_archive(source, member.name, "its path leaves the destination")
            target.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            with open_member(member) as reader, target.open("wb") as writer:
                while chunk := reader.read(_CHUNK):
                    size += len(chunk)
                    written += len(chunk)
                    if size > member.size or written > max_bytes:
                        raise unsafe_archive(source, member.name,
                                      "its data is larger than declared or passes the cap of "
                                      f"{human_size(max_bytes)} (a decompression bomb?)")
                    writer.write(chunk)
    return written


@contextmanager
def _opener(source: Path) -> Iterator[Callable[[Member], Any]]:
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            yield lambda member: archive.open(member.key)
        return
    with tarfile.open(source) as tar:
        def open_member(member: Member) -> IO[bytes]:
            handle = tar.extractfile(member.key)
            if handle is None:
                raise unsafe_archive(source, member.name, "it cannot be read as a file")
            return handle

        yield open_member


# --------------------------------------------------------------------------- tables


TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".xlsx")


def read_any_table(path: Path) -> Any:
    """A table as a pandas DataFrame; CSV/TSV cells are kept as the exact text."""
    import pandas as pd

    suffix = path.suffix.lower()
    if not path.is_file():
        raise JunoBenchError("table not found", file=path)
    try:
        if suffix in (".csv", ".tsv"):
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype=str,
                               keep_default_na=False, na_filter=False)
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix == ".xlsx":
            from junobench.data.tables import read_table

            table = read_table(path)
            return pd.DataFrame(table.rows, columns=table.columns)
    except (ValueError, OSError, UnicodeDecodeError) as error:
        raise JunoBenchError(f"cannot read the table ({error})", file=path) from None
    raise JunoBenchError(f"unsupported table format {suffix!r}", file=path,
                         hint=f"use one of {', '.join(TABLE_SUFFIXES)}")


def write_any_table(frame: Any, path: Path, like: Path) -> None:
    """Write ``frame`` in the format of ``like`` (CSV text as read, parquet schema as read)."""
    suffix = like.suffix.lower()
    if suffix in (".csv", ".tsv"):
        frame.to_csv(path, sep="\t" if suffix == ".tsv" else ",", index=False)
    elif suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        from junobench.data.tables import write_table

        write_table(path, frame.to_dict("records"), list(frame.columns))


def stratified_rows(frame: Any, *, label_column: str | None, seed: int,
                    fraction: float | None, per_class: int | None, source: Path
                    ) -> tuple[list[int], dict[str, tuple[int, int]]]:
    """Row positions (ascending) kept from each class of ``label_column`` (one class when
    None), and per class (before, after)."""
    if label_column is not None and label_column not in frame.columns:
        raise JunoBenchError(f"no column {label_column!r}", file=source,
                             hint=f"columns: {', '.join(map(str, frame.columns))}")
    labels = (["(all)"] * len(frame) if label_column is None
              else [_label(v) for v in frame[label_column].tolist()])
    groups: dict[str, list[int]] = {}
    for position, label in enumerate(labels):
        groups.setdefault(label, []).append(position)
    kept: list[int] = []
    classes = {}
    for label in sorted(groups):
        positions = groups[label]
        chosen = choose(positions, label, seed=seed, fraction=fraction, per_class=per_class)
        kept += [positions[i] for i in chosen]
        classes[label] = (len(positions), len(chosen))
    return sorted(kept), classes


def _label(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "(missing)"
    return str(value)


def downsample_table(source: str | Path, out: str | Path, *, fraction: float | None = None,
                     per_class: int | None = None, seed: int = 0,
                     label_column: str | None = None, metadata: str | Path | None = None,
                     record: bool = True) -> Downsampled:
    """Keep a seeded share of the rows of each class of ``label_column`` (or of all rows),
    in their original order; ``out`` is the new table's path (same format)."""
    check_amount(fraction, per_class)
    source, out = Path(source), Path(out)
    if out.suffix.lower() != source.suffix.lower():
        raise JunoBenchError(f"the output should be a {source.suffix} file like the input",
                             file=out)
    if out.exists():
        raise JunoBenchError("the output exists", file=out, hint="nothing is overwritten")
    meta = provenance.resolve_metadata(out, metadata, record=record)
    frame = read_any_table(source)
    kept, classes = stratified_rows(frame, label_column=label_column, seed=seed,
                                    fraction=fraction, per_class=per_class, source=source)
    with atomic_path(out, suffix=out.suffix) as temporary:  # written beside, then moved into place
        write_any_table(frame.iloc[kept], temporary, source)
    result = Downsampled(out, "rows", len(frame), len(kept), classes,
                         source.stat().st_size, out.stat().st_size)
    _record(meta, result, _entry("table", source, result, fraction, per_class, seed,
                                 f"class of {label_column!r}" if label_column else "table"))
    return result


# --------------------------------------------------------------------------- paired


def downsample_paired(source: str | Path, out: str | Path, *,
                      files_column: str | Sequence[str],
                      files_root: str | Path | None = None, fraction: float | None = None,
                      per_class: int | None = None, seed: int = 0,
                      label_column: str | None = None, metadata: str | Path | None = None,
                      record: bool = True) -> Downsampled:
    """Sample the rows of a table whose ``files_column`` (one or several columns, e.g. the
    two images of a pair) names files relative to ``files_root`` (by default the table's
    folder); write the kept rows to ``out/<table name>`` and exactly the files they
    reference, where the notebook expects them: under ``out`` at ``files_root``'s place
    relative to the table's folder (``out/archive/images/x.jpg`` for
    ``--files-root archive/images``)."""
    check_amount(fraction, per_class)
    source, out = Path(source), Path(out)
    columns = [files_column] if isinstance(files_column, str) else list(files_column)
    if not columns:
        raise JunoBenchError("give at least one --files-column")
    root = Path(files_root) if files_root is not None else source.parent
    place = _place_of(root, source.parent)
    meta = provenance.resolve_metadata(out, metadata, record=record)
    frame = read_any_table(source)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise JunoBenchError(f"no column(s) {', '.join(map(repr, missing))}", file=source,
                             hint=f"columns: {', '.join(map(str, frame.columns))}")
    references = [[_reference(v) for v in frame[c].tolist()] for c in columns]
    problems = []
    for column, values in zip(columns, references, strict=True):
        for number, reference in enumerate(values, start=2):
            if reference is None:
                continue
            safe = safe_name(reference)
            if safe is None:
                problems.append(f"row {number}, {column}: {reference!r} is absolute or "
                                "leaves the folder")
            elif not (root / safe).is_file():
                problems.append(f"row {number}, {column}: {reference!r} not found under {root}")
    if problems:
        raise JunoBenchError(f"{len(problems)} file reference(s) cannot be used: "
                             + "; ".join(problems[:5]) + (" …" if len(problems) > 5 else ""),
                             file=source, hint="fix the table or pass --files-root DIR")
    kept, classes = stratified_rows(frame, label_column=label_column, seed=seed,
                                    fraction=fraction, per_class=per_class, source=source)
    files = sorted({safe for values in references for i in kept
                    if (safe := _safe_reference(values[i]))})
    every = sorted({safe for values in references for value in values
                    if (safe := _safe_reference(value))})
    with fresh_output(out) as staging:
        write_any_table(frame.iloc[kept], staging / source.name, source)
        for name in files:
            _copy(root / name, staging / place / name)
    result = Downsampled(out, "rows", len(frame), len(kept), classes,
                         sum((root / n).stat().st_size for n in every),
                         sum((out / place / n).stat().st_size for n in files))
    entry = _entry("paired", source, result, fraction, per_class, seed,
                   f"class of {label_column!r}" if label_column else "table")
    entry["before"]["files"], entry["after"]["files"] = len(every), len(files)
    _record(meta, result, entry)
    return result


def _reference(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def _safe_reference(value: str | None) -> str | None:
    return None if value is None else safe_name(value)


def _place_of(root: Path, table_folder: Path) -> Path:
    """Where the files of ``root`` go under the output: ``root`` relative to the table's
    folder when it is inside it, else ``root``'s own name."""
    try:
        relative = root.resolve().relative_to(table_folder.resolve())
    except ValueError:
        return Path(root.resolve().name)
    return relative


# --------------------------------------------------------------------------- records


def _entry(kind: str, source: Path, result: Downsampled, fraction: float | None,
           per_class: int | None, seed: int, what: str) -> dict[str, Any]:
    sizes = {"before": {result.unit: result.before}, "after": {result.unit: result.after}}
    if result.bytes_before is not None:
        sizes["before"]["bytes"] = result.bytes_before
    if result.bytes_after is not None:
        sizes["after"]["bytes"] = result.bytes_after
    return {
        "kind": "downsampled",
        "method": _method(fraction, per_class, what),
        "ratio": round(result.ratio, 6),
        "per_class": per_class,
        "seed": seed,
        "source": source.name,
        **sizes,
        "tool": provenance.tool(f"downsample {kind}"),
    }
