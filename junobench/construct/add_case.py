"""Add a case to a snapshot: its folder, dataset metadata files and table rows, at once.

From a Kaggle notebook (its URL, or a local ``.ipynb`` of the original) with its
reproduced and fixed versions, the four labels, the diagnosis and the input datasets
(rows of a ``kaggle-metadata`` table for the notebook, or given by hand), :func:`add_case`

1. picks the next free id of the library (one past the highest ``<library>_<n>`` among
   the case folders and table rows);
2. stages ``benchmark/<case>/`` inside the snapshot: the three notebooks (the original
   when known), ``data/<name>.metadata.json`` per dataset (title, URL, licence, the files
   copied into ``data/``, the modifications recorded beside a downsampled or synthetic
   source) and the data files;
3. checks the staged case as the builder reads it (notebooks parse, the reproduced
   notebook has its error output, the fixed one its target cell), refuses a case the
   snapshot has already (same eid, notebook URL or file name, or a notebook's code:
   :mod:`junobench.data.duplicates`), and runs the pair
   (:mod:`~junobench.construct.pair_check`: the reproduced notebook must crash at its
   target with the recorded exception, the fixed one must run) unless told not to, which
   the case's ``provenance`` cell records;
4. writes the new ``benchmark_desc.xlsx`` (the case's row, with ``DatasetTitle_N`` /
   ``DatasetUrl_N`` / ``DatasetLicenseName_N`` columns added when it has more datasets
   than the table has slots) and the diagnosis table (a reproduced and a fixed row) as
   temporary files;
5. commits the three through one journal (:mod:`~junobench.construct.transaction`):
   the snapshot has the whole case or none of it; a refusal leaves it as it was.

The caller then validates the snapshot (:func:`junobench.data.validate.check`).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.construct import provenance, transaction
from junobench.construct.pair_check import pair_verification
from junobench.data import layout
from junobench.data import provenance as case_provenance
from junobench.data.metadata import read_metadata, validate_metadata
from junobench.data.tables import DATASET_COLUMNS, DESC_COLUMNS, Table, snapshot_table, stripped
from junobench.errors import JunoBenchError
from junobench.safety.paths import check_no_link_on_the_way, is_within

#: Label options → (table column, vocabulary).
LABELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "root_cause": ("label_root_cause", vocab.ROOT_CAUSES),
    "crash_type": ("label_refined_exp_type", vocab.CRASH_TYPES),
    "pipeline_stage": ("label_ML_pipeline", vocab.PIPELINE_STAGES),
    "ml_bug": ("label_if_ML_bug", ("ML bug", "python bug")),
}
DIAGNOSIS_COLUMNS: tuple[str, ...] = ("library", "instance", "detection", "diagnosis")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")

#: A data file this large or larger is named when it is added (``--large-file``).
LARGE_FILE = 100 << 20


#: Told each step of an edit as it starts (a line on a terminal).
Progress = Callable[[str], None]
#: Fetches a Kaggle notebook's source (``owner``, ``slug``, destination folder) → the file.
PullNotebook = Callable[[str, str, Path], Path]


@dataclass
class Dataset:
    """One input dataset of a new case."""

    name: str  # data/<name>.metadata.json
    title: str
    url: str | None
    license: str | None
    sources: list[Path] = field(default_factory=list)  # files or folders copied into data/
    modifications: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None


@dataclass
class NewCase:
    """Everything a new case needs."""

    library: str  # a case-id prefix (torch, tensorflow, NBspecific …) or its label
    reproduced: Path
    fixed: Path
    root_cause: str
    crash_type: str
    pipeline_stage: str
    ml_bug: str
    diagnosis: str
    original: Path | None = None
    notebook_url: str | None = None
    datasets: list[Dataset] = field(default_factory=list)
    source: str | None = None  # labeled in empirical study / newly sampled
    eid: str | None = None
    dataset_note: str | None = None


@dataclass
class Added:
    """What :func:`add_case` wrote."""

    case_id: str
    folder: Path
    files: list[str]  # relative to the case folder
    datasets: list[str]
    checked: str = ""  # how the pair was verified (or that it was not)
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- inputs


def library_prefix(library: str, *, allow_new: bool = False) -> str:
    """The case-id prefix of a library given as a prefix or a label (``tensorflow/keras``
    → ``tensorflow``, ``notebook-specific`` → ``NBspecific``)."""
    text = library.strip()
    for prefix, label in vocab.LIBRARY_LABELS.items():
        if text.lower() in (prefix.lower(), label.lower()):
            return prefix
    if text.lower() == "keras":
        return "tensorflow"
    if allow_new and re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", text):
        return text
    raise JunoBenchError(f"unknown library {library!r}",
                         hint=f"one of {', '.join(vocab.LIBRARIES)} (or --new-library)")


def check_labels(case: NewCase, *, allow_new: bool = False) -> None:
    """The four labels are in the benchmark's vocabularies (every wrong one named)."""
    wrong = []
    for name, (column, values) in LABELS.items():
        value = getattr(case, name)
        if not value or not str(value).strip():
            wrong.append(f"{column} is empty")
        elif not allow_new and value not in values:
            wrong.append(f"{column} {value!r} is not one of: {', '.join(values)}")
    if not case.diagnosis or not case.diagnosis.strip():
        wrong.append("the diagnosis is empty")
    if case.source is not None and case.source not in vocab.ORIGINS:
        wrong.append(f"source {case.source!r} is not one of: {', '.join(vocab.ORIGINS)}")
    if wrong:
        raise JunoBenchError("; ".join(wrong), hint="labels use the published vocabulary "
                                                     "(--allow-new-labels to extend it)")


def dataset_name(text: str) -> str:
    """A dataset name for ``data/<name>.metadata.json`` from a slug or title."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", text.strip()).strip("-_")[:100]
    if not name:
        raise JunoBenchError(f"cannot make a dataset name of {text!r}", hint="give name=…")
    return name


def datasets_from_table(path: str | Path, notebook: str) -> list[Dataset]:
    """The datasets a ``kaggle-metadata`` table resolved for ``notebook`` (its URL or
    ``owner/slug``)."""
    from junobench.construct.kaggle import handle_of, notebook_ref, read_rows

    owner, slug = checked_notebook(notebook)
    wanted = (owner.lower(), slug.lower())
    out = []
    for number, row in enumerate(read_rows(Path(path)), start=2):
        ref = row.get("notebook_url") or row.get("notebook")
        try:
            found = notebook_ref(str(ref or ""))
        except ValueError:
            continue
        if (found[0].lower(), found[1].lower()) != wanted or not row.get("url"):
            continue
        try:
            handle = handle_of(str(row["url"]))
        except ValueError as error:
            raise JunoBenchError(f"row {number}: {error}", file=path) from None
        out.append(Dataset(name=dataset_name(handle.split("/")[-1]),
                           title=str(row.get("title") or handle), url=str(row["url"]),
                           license=stripped(row.get("license")), note=stripped(row.get("note"))))
    return out


def checked_notebook(notebook: str) -> tuple[str, str]:
    """``(owner, slug)`` of a Kaggle notebook URL or ``owner/slug``, or a clear error."""
    from junobench.construct.kaggle import notebook_ref

    try:
        return notebook_ref(notebook)
    except ValueError as error:
        raise JunoBenchError(str(error), hint="give https://www.kaggle.com/code/<owner>/<slug>, "
                                              "<owner>/<slug>, or a local .ipynb") from None


def parse_dataset_spec(spec: str) -> Dataset:
    """``name=scores;title=Exam scores;license=CC0: Public Domain;url=…`` → a Dataset."""
    fields: dict[str, str] = {}
    for item in spec.split(";"):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("name", "title", "url", "license", "note"):
            raise JunoBenchError(f"--dataset {spec!r}: {item!r} is not KEY=VALUE with KEY one "
                                 "of name, title, url, license, note")
        fields[key] = value.strip()
    if not fields.get("title"):
        raise JunoBenchError(f"--dataset {spec!r}: a dataset needs a title")
    return Dataset(name=dataset_name(fields.get("name") or fields["title"]),
                   title=fields["title"], url=fields.get("url") or None,
                   license=fields.get("license") or None, note=fields.get("note") or None)


def attach_data(datasets: Sequence[Dataset], items: Iterable[str]) -> None:
    """``NAME=PATH`` items: the files or folders of each dataset, copied into ``data/``."""
    by_name = {d.name: d for d in datasets}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or name not in by_name:
            raise JunoBenchError(f"--data {item!r}: expected NAME=PATH with NAME one of "
                                 f"{', '.join(by_name) or '(no dataset)'}")
        by_name[name].sources.append(Path(path))


# --------------------------------------------------------------------------- ids


def case_ids(root: Path) -> set[str]:
    """Case ids of the snapshot: its case folders and its table rows."""
    ids = set()
    folder = layout.benchmark_dir(root)
    if folder.is_dir():
        ids |= {p.name for p in folder.iterdir() if p.is_dir() and vocab.is_case_id(p.name)}
    desc = root / layout.DESC_TABLE
    if desc.is_file():
        table = snapshot_table(root, layout.DESC_TABLE, columns=["nb_name"])
        ids |= {str(r[0]) for r in table.rows if r and r[0] and vocab.is_case_id(str(r[0]))}
    return ids


def _same_prefix(root: Path, prefix: str) -> str:
    """``prefix``, refused when the snapshot spells a library's prefix the same but for
    case (``Foo`` beside ``foo``): their case ids would collide on case-insensitive file
    systems."""
    for other in {vocab.library_of(i) for i in case_ids(root)} | set(vocab.LIBRARIES):
        if other and other != prefix and other.casefold() == prefix.casefold():
            raise JunoBenchError(f"library {prefix!r} differs from the snapshot's {other!r} only in case",
                                 hint=f"use --library {other}: case ids must be unique ignoring case")
    return prefix


def next_case_id(root: Path, prefix: str) -> str:
    """One past the highest ``<prefix>_<n>`` of the snapshot."""
    numbers = [int(i.rpartition("_")[2]) for i in case_ids(root) if vocab.library_of(i) == prefix]
    return f"{prefix}_{max(numbers, default=0) + 1}"


# --------------------------------------------------------------------------- add


def add_case(snapshot: str | Path, case: NewCase, *, allow_new_library: bool = False,
             allow_new_labels: bool = False, pull: PullNotebook | None = None,
             verify: bool = True, env: str | Path | None = None,
             timeout: float | None = None, allow_similar: bool = False,
             large_file: int = LARGE_FILE, refuse_large: bool = False,
             progress: Progress | None = None) -> Added:
    """Add ``case`` to the snapshot (see the module docstring); returns what was written.

    A case that shares its eid, notebook (URL or file name) or a notebook's code with one
    of the snapshot is refused, naming it (:mod:`junobench.data.duplicates`). With
    ``verify``, the pair is run first (:func:`~junobench.construct.pair_check.check_pair`,
    kernels in ``env``'s interpreter, ``timeout`` seconds per cell) and refused unless the
    reproduced notebook crashes at its target with the recorded exception and the fixed
    one runs; without, the case's ``provenance`` says it was not verified. A case whose
    code is at least :data:`~junobench.data.similarity.THRESHOLD` similar to a case of the
    snapshot (a near-duplicate: comments, spacing, strings, names or import order changed)
    is refused naming that case and the similarity, unless ``allow_similar`` (then recorded
    in its provenance). Paths are read as written: a link on the way to a notebook or data
    file is refused. A data file of ``large_file`` bytes or more is named in
    :attr:`Added.warnings` (refused with ``refuse_large``). ``progress`` is told each step
    as it starts. A refusal leaves the snapshot as it was."""
    root = transaction.editable_root(snapshot)
    with transaction.editing(root):
        return _add_case(root, case, allow_new_library=allow_new_library,
                         allow_new_labels=allow_new_labels, pull=pull, verify=verify, env=env,
                         timeout=timeout, allow_similar=allow_similar, large_file=large_file,
                         refuse_large=refuse_large, progress=progress or (lambda _: None))


def _add_case(root: Path, case: NewCase, *, allow_new_library: bool, allow_new_labels: bool,
              pull: PullNotebook | None, verify: bool, env: str | Path | None,
              timeout: float | None, allow_similar: bool, large_file: int, refuse_large: bool,
              progress: Progress) -> Added:
    if case.notebook_url:
        checked_notebook(case.notebook_url)
    prefix = _same_prefix(root, library_prefix(case.library, allow_new=allow_new_library))
    check_labels(case, allow_new=allow_new_labels)
    for path in (case.reproduced, case.fixed, *([case.original] if case.original else [])):
        _require_file(path)
    names = [d.name for d in case.datasets]
    for name in names:
        if not _NAME.match(name):
            raise JunoBenchError(f"dataset name {name!r} cannot be a file name",
                                 hint="letters, digits, '_' and '-'")
    if len(set(names)) != len(names):
        raise JunoBenchError(f"two datasets are named alike: {', '.join(names)}",
                             hint="give each a distinct name=")
    desc = snapshot_table(root, layout.DESC_TABLE)
    desc.require(["nb_name"], hint="the case table of a snapshot")
    case_id = next_case_id(root, prefix)

    warnings = check_sources(root, {d.name: d.sources for d in case.datasets}, large_file, refuse=refuse_large)
    with transaction.preparing(root) as prepared:
        staging = prepared.staging
        folder = layout.case_dir(staging, case_id)
        folder.mkdir(parents=True)
        progress(f"copying the notebooks and data of {case_id}")
        files = _stage_notebooks(case, case_id, folder, pull)
        metadata = [_stage_dataset(d, layout.data_dir(staging, case_id)) for d in case.datasets]
        record = staged_record(staging, case_id, "the new case", hint="nothing was added to the snapshot")
        row = _desc_row(desc, case, case_id, metadata, _crash(record))
        progress(f"comparing {case_id} with the snapshot's cases")
        _refuse_duplicates(root, desc, staging, case_id, row)
        similar = near_duplicates(root, staging, case_id, allow=allow_similar)
        checked, verification = pair_verification(staging, case_id, row, metadata, step="add-case", verify=verify,
                                                  env=env, timeout=timeout, snapshot=root, progress=progress)
        when = case_provenance.now()
        case_provenance.write(folder, {
            "added": {"when": when, "tool": provenance.tool("add-case")}, "verification": verification,
            "similar": similar_entries(similar, when)})
        prepared.table(layout.DESC_TABLE, _insert(desc.records(), row, "nb_name", prefix),
                       _desc_columns(desc.columns, len(metadata)))
        diag_columns, diag_rows = _diagnosis_rows(root / layout.DIAGNOSIS_TABLE, case, case_id, prefix)
        prepared.table(layout.DIAGNOSIS_TABLE, diag_rows, diag_columns)
        layout.benchmark_dir(root).mkdir(exist_ok=True)  # only now: a refusal adds nothing
        prepared.commit([(f"{staging.name}/{layout.BENCHMARK_DIR}/{case_id}", f"{layout.BENCHMARK_DIR}/{case_id}")],
                        f"add-case {case_id}")
    return Added(case_id, layout.case_dir(root, case_id), files, names, checked, [*warnings, *allowed_similar(similar)])


def check_sources(root: Path, sources: Mapping[str, Sequence[Path]], large_file: int, *,
                  refuse: bool) -> list[str]:
    """Check the data files and folders given for each dataset before anything is staged
    (no link on the way, :func:`data_source`); the warnings of :func:`large_files`."""
    for name, paths in sources.items():
        for source in paths:
            check_no_link_on_the_way(source, what=f"the data of {name!r}")
            data_source(source, root)
    return large_files([s for paths in sources.values() for s in paths], large_file, refuse=refuse)


def staged_record(staging: Path, case_id: str, what: str, *, hint: str) -> dict[str, Any]:
    """The record of the case staged under ``staging`` as the builder reads it, or a
    :class:`JunoBenchError` saying why ``what`` (the new case, the edited case) would not build."""
    from junobench.data.cases import parse_case_folder

    result = parse_case_folder(staging, case_id)
    if result.record is None:
        raise JunoBenchError(f"{what} would not build: " + "; ".join(p.problem for p in result.problems),
                             case=case_id, hint=hint)
    return result.record


def similar_entries(similar: Sequence[Any], when: str) -> list[dict[str, Any]]:
    """The provenance ``similar`` entries of the near-duplicates a case was allowed beside."""
    return [{"case": s.other, "similarity": round(s.similarity, 4), "version": s.version, "when": when}
            for s in similar]


def allowed_similar(similar: Sequence[Any]) -> list[str]:
    """The warning naming the near-duplicates a case was allowed beside (none when none)."""
    if not similar:
        return []
    return ["allowed with --allow-similar (recorded in its provenance): similar to "
            + ", ".join(s.describe() for s in similar)]


def near_duplicates(root: Path, staging: Path, case_id: str, *, allow: bool, exclude: str | None = None) -> list[Any]:
    """The snapshot's cases (but ``exclude``) the staged ``case_id`` is a near-duplicate of
    (:mod:`junobench.data.similarity`); refused unless ``allow``."""
    from junobench.data import similarity

    new = similarity.folder_prints(staging, case_id)
    others = {other: similarity.folder_prints(root, other) for other in sorted(case_ids(root)) if other != exclude}
    found = similarity.most_similar(new, others)
    if found and not allow:
        raise JunoBenchError("the case is a near-duplicate of "
                             + ", ".join(s.describe() for s in found)
                             + f" (normalised code; the threshold is {similarity.percent(similarity.THRESHOLD)})",
                             file=root / layout.DESC_TABLE,
                             hint="nothing was added; if it is another crash all the same, add it with "
                                  "--allow-similar (recorded in its provenance)")
    return found


def large_files(sources: Sequence[Path], limit: int, *, refuse: bool = False) -> list[str]:
    """Warnings naming the files of ``sources`` (files, or folders' regular files) of
    ``limit`` bytes or more; with ``refuse``, a :class:`JunoBenchError` instead."""
    from junobench.safety.archives import human_size

    found = []
    for source in sources:
        paths = [source] if not source.is_dir() else sorted(p for p in source.rglob("*") if not p.is_symlink())
        for path in paths:
            try:
                size = path.lstat().st_size if path.is_file() else 0
            except OSError:
                continue
            if size >= limit:
                found.append(f"data file {path} is {human_size(size)} (the threshold is {human_size(limit)})")
    if found and refuse:
        raise JunoBenchError("; ".join(found), hint="nothing was added; downsample it (construct downsample) "
                                                      "or leave out --refuse-large")
    return [f"{text}: consider downsampling it (construct downsample)" for text in found]


def _refuse_duplicates(root: Path, desc: Table, staging: Path, case_id: str,
                       row: Mapping[str, Any]) -> None:
    """A :class:`JunoBenchError` naming the snapshot's cases the new one repeats (same eid,
    notebook URL or file name, or a notebook's code), or two versions with the same code."""
    from junobench.data import duplicates
    from junobench.data.tables import DescRow

    notebooks = {v: layout.notebook_path(staging, case_id, v) for v in vocab.VERSIONS}
    keys = duplicates.case_keys({DESC_COLUMNS.get(k, k): v for k, v in row.items()}, notebooks)
    if keys.get("reproduced") and keys.get("reproduced") == keys.get("fixed"):
        raise JunoBenchError("the fixed notebook's code is the reproduced notebook's",
                             hint="give the repaired notebook as --fixed; nothing was added")
    rows = [DescRow(str(r.get("nb_name") or "").strip(), number,
                    {DESC_COLUMNS.get(k, k): v for k, v in r.items()})
            for number, r in enumerate(desc.records(), start=2)]
    found = duplicates.matches(keys, duplicates.snapshot_keys(root, rows))
    if found:
        raise JunoBenchError(f"the case is already in the snapshot as {duplicates.describe(found)}",
                             file=root / layout.DESC_TABLE,
                             hint="nothing was added; a case is added once (remove the other "
                                  "with `junobench construct remove-case` to replace it)")


def _require_file(path: Path) -> None:
    check_no_link_on_the_way(path, what="the notebook path")
    try:
        mode = path.stat().st_mode
    except OSError:
        raise JunoBenchError("file not found", file=path) from None
    if not stat.S_ISREG(mode):
        raise JunoBenchError("not a regular file", file=path)


def _stage_notebooks(case: NewCase, case_id: str, folder: Path,
                     pull: PullNotebook | None) -> list[str]:
    files = []
    original = case.original
    if original is None and case.notebook_url and pull is not None:
        from junobench.construct.kaggle import notebook_ref

        owner, slug = notebook_ref(case.notebook_url)
        original = pull(owner, slug, folder.parent)
        _require_file(original)
    for version, source in (("original", original), ("reproduced", case.reproduced),
                            ("fixed", case.fixed)):
        if source is None:
            continue
        name = layout.notebook_name(case_id, version)
        shutil.copyfile(source, folder / name)
        files.append(name)
    if original is not None and original.parent == folder.parent:
        original.unlink(missing_ok=True)  # a pulled file, now copied in
    return files


def _stage_dataset(dataset: Dataset, data: Path) -> dict[str, Any]:
    """Copy a dataset's files into ``data`` and write its metadata file; the metadata."""
    data.mkdir(exist_ok=True)
    files: list[str] = []
    modifications = list(dataset.modifications)
    title, url, license_ = dataset.title, dataset.url, dataset.license
    for source in map(Path, map(os.path.abspath, dataset.sources)):
        files += _copy_into(source, data)
        beside = source.parent / (source.name.split(".", 1)[0] + layout.METADATA_SUFFIX)
        if beside.is_file() and beside.resolve() != source.resolve():
            recorded = read_metadata(beside)
            modifications += recorded.get("modifications", [])
            title = title or recorded["title"]
            url = url or recorded["url"]
            license_ = license_ or recorded["license"]
    if not license_:
        raise JunoBenchError(f"dataset {dataset.name!r} ({title}) has no licence",
                             hint="give license=… (the licence its source states)")
    meta: dict[str, Any] = {"title": title, "url": url, "license": license_,
                            "files": sorted(set(files)), "modifications": modifications}
    if dataset.note:
        meta["note"] = dataset.note
    problems = validate_metadata(meta)
    if problems:
        raise JunoBenchError(f"dataset {dataset.name!r}: " + "; ".join(problems),
                             hint="check its title, URL and licence")
    path = data / f"{dataset.name}{layout.METADATA_SUFFIX}"
    if path.exists():
        raise JunoBenchError(f"two datasets would write {path.name}")
    import json

    path.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def data_source(source: Path, root: Path) -> Path:
    """``source`` (a data file or folder named by the user, no link on the way) as an
    absolute path, whose last component is the name it gets in a case's ``data/``:
    ``..`` and ``.`` lead where they say (``data/..`` would be the case folder). Refused
    when it has no name (the root) or is a folder holding the snapshot ``root``."""
    absolute = Path(os.path.abspath(source))
    if not absolute.name:
        raise JunoBenchError("a data source must be a file or a folder with a name", file=source)
    if absolute.is_dir() and is_within(root, absolute):
        raise JunoBenchError("the data folder holds the snapshot itself", file=source,
                             hint="name the data files, or a folder beside the snapshot")
    return absolute


def _copy_into(source: Path, data: Path) -> list[str]:
    """Copy a regular file, or a folder's regular files, into ``data`` under the source's
    name; links and special files are refused."""
    source = Path(os.path.abspath(source))
    if source.is_symlink():
        raise JunoBenchError("a link is not copied into a snapshot", file=source)
    if source.is_file():
        if source.name.endswith(layout.METADATA_SUFFIX):
            return []
        target = data / source.name
        if target.exists():
            raise JunoBenchError(f"two data sources are named {source.name}", file=source)
        shutil.copyfile(source, target)
        return [source.name]
    if not source.is_dir():
        raise JunoBenchError("data not found (or not a regular file or folder)", file=source)
    copied = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_symlink():
            raise JunoBenchError("a link is not copied into a snapshot", file=path)
        if path.is_dir():
            continue
        if not path.is_file():
            raise JunoBenchError("not a regular file", file=path)
        target = data / source.name / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append((Path(source.name) / relative).as_posix())
    return copied


def _crash(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"ename": record["exception"], "evalue": record["evalue"],
            "traceback": record["traceback"]}


def _desc_row(desc: Table, case: NewCase, case_id: str, datasets: list[dict[str, Any]],
              error: Mapping[str, Any]) -> dict[str, Any]:
    from junobench.construct.kaggle import notebook_url
    from junobench.construct.naming import file_name_of_url

    url = notebook_url(case.notebook_url) if case.notebook_url else None
    kinds = sorted({m["kind"] for d in datasets for m in d["modifications"]})
    row: dict[str, Any] = {
        "nb_name": case_id, "eid": case.eid, "ename": str(error["ename"]).lower(),
        "evalue": error["evalue"], "traceback": repr(list(error["traceback"])),
        "label_root_cause": case.root_cause, "label_refined_exp_type": case.crash_type,
        "label_ML_pipeline": case.pipeline_stage, "label_if_ML_bug": case.ml_bug,
        "NotebookUrl": url, "source": case.source,
        "Libs-cause": None if vocab.library_of(case_id) == vocab.NOTEBOOK_SPECIFIC
        else vocab.library_label(vocab.library_of(case_id)),
        "fname": file_name_of_url(url) if url else None,
        "Dataset_note": case.dataset_note or ("; ".join(kinds) if kinds else None),
    }
    for slot, dataset in enumerate(datasets, start=1):
        row[f"DatasetTitle_{slot}"] = dataset["title"]
        row[f"DatasetUrl_{slot}"] = dataset["url"]
        row[f"DatasetLicenseName_{slot}"] = dataset["license"]
    return row


def _desc_columns(columns: Sequence[str], datasets: int) -> list[str]:
    """The table's columns plus dataset slots up to ``datasets``, each new one placed after
    the last column of its kind (``DatasetTitle_3`` after ``DatasetTitle_2``)."""
    out = list(columns)
    for kind in DATASET_COLUMNS:
        for slot in range(1, datasets + 1):
            name = f"{kind}_{slot}"
            if name in out:
                continue
            same = [i for i, c in enumerate(out) if c.startswith(f"{kind}_")]
            out.insert(same[-1] + 1 if same else len(out), name)
    return out


def _insert(rows: list[dict[str, Any]], row: dict[str, Any], id_column: str,
            prefix: str) -> list[dict[str, Any]]:
    """``rows`` with ``row`` after the last row of the same library (else at the end)."""
    last = max((i for i, r in enumerate(rows) if vocab.is_case_id(str(r.get(id_column) or ""))
                and vocab.library_of(str(r[id_column])) == prefix), default=len(rows) - 1)
    return [*rows[:last + 1], row, *rows[last + 1:]]


def _diagnosis_rows(path: Path, case: NewCase, case_id: str, prefix: str
                    ) -> tuple[list[str], list[dict[str, Any]]]:
    if path.is_file():
        table = snapshot_table(path.parent, path.name)
        table.require(["instance", "diagnosis"], hint="the diagnosis table of a snapshot")
        columns, rows = list(table.columns), table.records()
    else:
        columns, rows = list(DIAGNOSIS_COLUMNS), []
    for column in DIAGNOSIS_COLUMNS:
        if column not in columns:
            columns.append(column)
    new = [{"library": prefix, "instance": vocab.instance_id(case_id, "reproduced"),
            "detection": True, "diagnosis": case.diagnosis.strip()},
           {"library": prefix, "instance": vocab.instance_id(case_id, "fixed"),
            "detection": False, "diagnosis": None}]
    return columns, [*rows, *new]
