"""Recording what a construction step did to a dataset in its metadata file.

A dataset's metadata file sits beside its data in the snapshot layout
(``data/<name>.metadata.json`` for ``data/<name>/`` or ``data/<name>.csv``); steps that
change data (downsample, synthetic) append a ``modifications`` entry to it and list the
files they wrote in its ``files``. The file is looked up before any work is done, so a run
never ends with data it could not record.

>>> metadata_path("benchmark/torch_1/data/flowers").as_posix()
'benchmark/torch_1/data/flowers.metadata.json'
>>> metadata_path("benchmark/torch_1/data/kdd.train.csv").as_posix()
'benchmark/torch_1/data/kdd.metadata.json'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from junobench.data.layout import METADATA_SUFFIX, case_dir
from junobench.data.metadata import read_metadata, write_metadata
from junobench.errors import JunoBenchError


def metadata_path(out: str | Path) -> Path:
    """The metadata file of a dataset written to ``out`` (same folder, name up to the first dot)."""
    out = Path(out)
    return out.parent / (out.name.split(".", 1)[0] + METADATA_SUFFIX)


def resolve_metadata(out: str | Path, metadata: str | Path | None, *, record: bool = True
                     ) -> Path | None:
    """The metadata file to record in (checked now: it must exist and be valid), or None
    when ``record`` is False."""
    if not record:
        return None
    path = Path(metadata) if metadata is not None else metadata_path(out)
    if not path.is_file():
        raise JunoBenchError(
            "no dataset metadata file to record the modification in", file=path,
            hint="create it first (title, url, license, files, modifications; see "
                 "junobench/schemas/dataset_metadata.schema.json), pass --metadata FILE, "
                 "or --no-metadata to skip recording")
    read_metadata(path)
    return path


def record(path: Path | None, entry: dict[str, Any] | None, *,
           outputs: Sequence[Path] = ()) -> None:
    """Append ``entry`` (when given) to the ``modifications`` of the metadata file at
    ``path``, and add the files written (``outputs``: files, or folders whose files all
    count) to its ``files``, relative to the metadata file's folder; nothing when ``path``
    is None. Outputs outside that folder are not listed (the file names what it can)."""
    if path is None:
        return
    data = read_metadata(path)
    if entry is not None:
        data["modifications"] = [*data.get("modifications", []),
                                 {k: v for k, v in entry.items() if v is not None}]
    files = set(data.get("files", []))
    base = path.parent.resolve()
    for output in outputs:
        for file in _files_of(output):
            relative = os.path.relpath(file.resolve(), base)
            if not relative.startswith(".."):
                files.add(Path(relative).as_posix())
    data["files"] = sorted(files)
    write_metadata(path, data)


def _files_of(output: Path) -> list[Path]:
    if output.is_file():
        return [output]
    return sorted(p for p in output.rglob("*") if p.is_file() and not p.is_symlink()
                  and not p.name.endswith(METADATA_SUFFIX))


def tool(step: str) -> str:
    """``junobench <version> construct <step>``, for the ``tool`` field of an entry."""
    import junobench

    return f"junobench {junobench.__version__} construct {step}"


def tree_size(path: Path) -> tuple[int, int]:
    """``(files, bytes)`` of a file or of the regular files under a folder."""
    if path.is_file():
        return 1, path.stat().st_size
    files = total = 0
    for root, _, names in os.walk(path):
        for name in names:
            files += 1
            total += os.path.getsize(os.path.join(root, name))
    return files, total


def record_verification(snapshot: str | Path, report: Any) -> list[str]:
    """Record the verdicts of a :class:`~junobench.verify.report.VerifyReport` in the cases'
    provenance (``verify --record``): a passing case is *verified* (when, the Python and
    the versions of the libraries it needs the kernels had, the sandbox, the environment),
    a failing one *failed*; a skipped case or an infrastructure error changes nothing.
    Returns one line per case recorded."""
    import junobench
    from junobench.construct.transaction import editable_root
    from junobench.data import provenance as case_provenance
    from junobench.loader import load
    from junobench.safety.atomic import locked
    from junobench.verify.judge import OUT_OF_MEMORY
    from junobench.verify.report import FAILED, PASSED, TIMED_OUT

    root = editable_root(snapshot)
    environment = report.environment or {}
    where = (f"{environment.get('env_name') or 'environment'} at {environment['env_dir']}"
             if environment.get("env_dir") else "junobench's own environment")
    needs = {c["case_id"]: c["requirements"] for c in
             load(root, "cases", skip_invalid=True).select_columns(["case_id", "requirements"]).to_list()}
    lines = []
    with locked(root):
        for case in report.cases:
            status = {PASSED: case_provenance.VERIFIED, FAILED: case_provenance.FAILED,
                      TIMED_OUT: case_provenance.FAILED, OUT_OF_MEMORY: case_provenance.FAILED}.get(case.status)
            if status is None:
                continue
            recorded = case_provenance.read(root, case.case_id) or {}
            recorded.pop("format", None)
            recorded["verification"] = case_provenance.verification(
                status, tool=f"junobench {junobench.__version__} verify --record", environment=environment,
                requirements=needs.get(case.case_id, []), sandbox=case.sandbox, where=where,
                detail=f"reproduced: {case.reproduced.reason}; fixed: {case.fixed.reason}")
            case_provenance.write(case_dir(root, case.case_id), recorded)
            lines.append(f"{case.case_id}: {status}")
    return lines
