#!/usr/bin/env python3
"""Regenerate the bundled sample (junobench/sample/) from scripts/sample_cases/.

For every case: generate its input data (seeded, CC0) and dataset metadata, derive the
original, reproduced and fixed notebooks from the case definition, and execute each of
them in a fresh kernel of the sample's pinned environment (junobench-2025: numpy 1.26.4,
pandas 2.1.4, …; made or reused with ``junobench env create``, or ``--env DIR``) in its
recorded order (junobench.data.notebook.execution_order: a
``[reexecute]`` target runs twice), so every stored output, execution count and
traceback comes from a real run. The original runs in Kaggle's layout (data under
``../input/<slug>/``); the reproduced and fixed notebooks in a copy of the case folder.
Then the case table and the diagnosis table are written.

The build checks what it produced: the reproduced and original notebooks crash at the
target (and only there), the fixed notebook runs clean, and re-reading the stored
notebooks gives back the order that was run. Outputs are normalised where they would
depend on the machine (installation paths); there is no timing metadata, so two builds
on one machine give identical notebooks. Tables are rewritten only when their content
changes.

    python scripts/build_sample.py                 # all cases into junobench/sample/
    python scripts/build_sample.py --out DIR numpy_1 pandas_2
    python scripts/build_sample.py --env DIR       # in an environment made before
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402
from sample_cases import Case, all_cases  # noqa: E402

from junobench import vocab  # noqa: E402
from junobench.data import layout  # noqa: E402
from junobench.data.cache import cache_root  # noqa: E402
from junobench.data.metadata import write_metadata  # noqa: E402
from junobench.data.notebook import (  # noqa: E402
    Step,
    execution_order,
    find_target,
    parse_notebook,
    strip_ansi,
)
from junobench.data.tables import DESC_COLUMNS, read_table, write_table  # noqa: E402
from junobench.envs.create import Selection, create_environment, kernel_requirements  # noqa: E402
from junobench.envs.environment import SNAPSHOT_FOLDER, SPEC_FILE, packaged  # noqa: E402
from junobench.envs.kernel import KernelTarget, env_kernel  # noqa: E402
from junobench.envs.requirements import requirements_of  # noqa: E402
from junobench.safety.atomic import remove_tree, staged, swap_in  # noqa: E402
from junobench.verify import default_jobs  # noqa: E402
from junobench.verify.judge import ERROR, OK, RunLog  # noqa: E402
from junobench.verify.runner import replay  # noqa: E402

SAMPLE = REPO / "junobench" / "sample"
SAMPLE_README = HERE / "sample_cases" / "README.md"
MAX_BYTES = 2 * 1024 * 1024
CELL_TIMEOUT = 300
#: The environment the sample declares (environment/environment.json) and is run in.
SAMPLE_ENVIRONMENT = "junobench-2025"

#: benchmark_desc.xlsx columns: the labelling sheet's, without its review columns.
DESC_TABLE_COLUMNS: tuple[str, ...] = (
    "fname", "nb_name", "eid", "ename", "evalue", "traceback", "Libs-cause",
    "label_root_cause", "label_refined_exp_type", "label_ML_pipeline", "label_if_ML_bug",
    "source", "Dataset_note", "DatasetTitle_1", "DatasetTitle_2", "DatasetLicenseName_1",
    "DatasetLicenseName_2", "DatasetUrl_1", "DatasetUrl_2", "NotebookUrl",
)
DIAGNOSIS_COLUMNS: tuple[str, ...] = ("library", "instance", "detection", "diagnosis",
                                      "runinfo_help")
EID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://huggingface.co/datasets/PELAB-LiU/JunoBench#sample")

NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                   "name": "python3"},
    "language_info": {"codemirror_mode": {"name": "ipython", "version": 3},
                      "file_extension": ".py", "mimetype": "text/x-python", "name": "python",
                      "nbconvert_exporter": "python", "pygments_lexer": "ipython3"},
}
# Installation paths in tracebacks and warnings (…/site-packages/, …/lib/python3.11/).
_INSTALL_PATH = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s'\"<>()\x1b]*?[/\\](site-packages|dist-packages)[/\\]")
# IPython's per-process cell files: /tmp/ipykernel_<pid>/<hash of the code>.py.
_KERNEL_PID = re.compile(r"ipykernel_\d+")
_STDLIB_PATH = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s'\"<>()\x1b]*?[/\\]lib[/\\](python3\.\d+)[/\\]")


class BuildError(Exception):
    """A case did not behave as its definition says."""


@dataclass
class Built:
    """The executed notebooks of a case."""

    case: Case
    notebooks: dict[str, Any]
    target: int


# --------------------------------------------------------------------------- notebooks


def cell_id(case: Case, position: int) -> str:
    return hashlib.sha1(f"{case.case_id}/{position}".encode()).hexdigest()[:8]


def original_source(case: Case, source: str) -> str:
    """The as-collected cell: Kaggle input paths, no [reexecute] annotation."""
    lines = source.split("\n")
    if lines and "[reexecute]" in lines[0] and lines[0].lstrip().startswith("#"):
        lines = lines[1:]
    text = "\n".join(lines)
    for quote in "'\"":
        text = text.replace(f"{quote}data/", f"{quote}../input/{case.kaggle_slug}/")
        text = text.replace(f"{quote}data{quote}", f"{quote}../input{quote}")
    return text


def sources(case: Case, version: str) -> list[tuple[str, str]]:
    """(kind, source) of every cell of one version of the notebook."""
    out = []
    index = 0
    for cell in case.cells:
        source = cell.source
        if cell.kind == "code":
            if version == "fixed" and index in case.fixed:
                source = case.fixed[index]
            elif version == "original":
                source = original_source(case, source)
            index += 1
        out.append((cell.kind, source))
    return out


def run_order(case: Case, version: str) -> list[int]:
    if version == "fixed":
        return case.fixed_order or list(range(case.target + 1))
    return case.order


def new_notebook(case: Case, version: str) -> tuple[Any, list[Step]]:
    """The unexecuted notebook and the steps to run, from execution_order() applied to
    the case's order written as provisional execution counts."""
    order = run_order(case, version)
    cells = []
    code_index = 0
    for position, (kind, source) in enumerate(sources(case, version)):
        if kind == "markdown":
            cell = nbformat.v4.new_markdown_cell(source)
        else:
            cell = nbformat.v4.new_code_cell(source)
            if code_index in order:
                cell.execution_count = order.index(code_index) + 1
            code_index += 1
        cell.id = cell_id(case, position)
        cells.append(cell)
    notebook = nbformat.v4.new_notebook(cells=cells, metadata=json.loads(json.dumps(NOTEBOOK_METADATA)))
    parsed = parse_notebook(nbformat.writes(notebook))
    steps = execution_order(parsed.code_cells, case.target)
    if version == "original":  # the annotation is gone, the runs are the reproduced ones
        steps = new_notebook(case, "reproduced")[1]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.execution_count = None
    return notebook, steps


def normalise(notebook: Any, scratch: Path) -> None:
    """Machine-specific paths out of outputs; nothing else is touched."""

    def clean(text: str) -> str:
        text = text.replace(str(scratch), "")
        text = _KERNEL_PID.sub("ipykernel_0", text)  # a fixed process id: still IPython's form
        text = _INSTALL_PATH.sub(lambda m: f".../{m.group(1)}/", text)
        return _STDLIB_PATH.sub(lambda m: f".../lib/{m.group(1)}/", text)

    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata = {}
        for output in cell.outputs:
            if output.output_type == "stream":
                output.text = clean(output.text)
            elif output.output_type == "error":
                output.traceback = [clean(line) for line in output.traceback]
                output.evalue = clean(output.evalue)
            elif "data" in output:
                for mime in ("text/plain", "text/html"):
                    if mime in output.data:
                        output.data[mime] = clean(output.data[mime])


def pinned_kernel(cases: list[Case], env_dir: Path | None) -> KernelTarget:
    """Kernels of the sample's environment holding what ``cases`` import (made or reused at
    ``env_dir``, default a folder of junobench's cache)."""
    env = packaged(SAMPLE_ENVIRONMENT)
    sources = [cell.source for case in cases for cell in case.cells if cell.kind == "code"]
    sources += [text for case in cases for text in case.fixed.values()]
    needs = requirements_of(sources, env)
    if needs.unpinned:
        raise BuildError(f"the cases import what {env.name} does not pin: {', '.join(needs.unpinned)}")
    selection = Selection(env, sorted(set(needs.requirements) | set(kernel_requirements(env))))
    made = create_environment(env_dir or cache_root() / "envs" / "sample-build", selection)
    print(f"{'reused' if made.reused else 'created'} the environment {made.path} "
          f"(Python {made.manifest['python']['used']}{'; ' + made.python_note if made.python_note else ''})")
    return env_kernel(made.path)


async def execute(case: Case, version: str, data: dict[str, bytes], slots: asyncio.Semaphore,
                  target: KernelTarget) -> Any:
    notebook, steps = new_notebook(case, version)
    async with slots:
        with tempfile.TemporaryDirectory(prefix=f"junobench-build-{case.case_id}-") as tmp:
            scratch = Path(tmp)
            if version == "original":
                inputs, cwd = scratch / "input" / case.kaggle_slug, scratch / "working"
            else:
                inputs, cwd = scratch / case.case_id / layout.DATA_DIR, scratch / case.case_id
            inputs.mkdir(parents=True)
            cwd.mkdir(parents=True, exist_ok=True)
            for name, content in data.items():
                (inputs / name).write_bytes(content)
            # the whole scratch folder is the sandboxed kernel's to see: an original reads
            # its data from ../input, beside its working folder, as on Kaggle
            log = await replay(notebook, steps, cwd=cwd, timeout=CELL_TIMEOUT,
                               kernel_log=scratch / "kernel.log", target=target, writable=[scratch])
            check_run(case, version, steps, log)
            normalise(notebook, scratch)
    check_stored(case, version, notebook, steps)
    return notebook


def check_run(case: Case, version: str, steps: list[Step], log: RunLog) -> None:
    where = f"{case.case_id} {version}"
    if log.failure:
        raise BuildError(f"{where}: kernel failure: {log.failure}")
    statuses = [s.status for s in log.steps]
    if version == "fixed":
        if statuses != [OK] * len(steps):
            bad = log.steps[-1]
            raise BuildError(f"{where}: expected every run to succeed; code cell "
                             f"{bad.code_cell_index} ended {bad.status} {bad.ename}: {bad.evalue}")
        return
    if statuses != [OK] * (len(steps) - 1) + [ERROR]:
        bad = log.steps[-1]
        raise BuildError(f"{where}: expected a crash at the last run only (code cell "
                         f"{case.target}); code cell {bad.code_cell_index} ended {bad.status} "
                         f"{bad.ename}: {bad.evalue}")


def check_stored(case: Case, version: str, notebook: Any, steps: list[Step]) -> None:
    """Re-read the stored notebook: its counts and error output give the order that ran."""
    parsed = parse_notebook(nbformat.writes(notebook))
    where = f"{case.case_id} {version}"
    target = find_target(parsed.code_cells)
    if version == "fixed":
        if target is not None:
            raise BuildError(f"{where}: the fixed notebook has an error output")
    elif target != case.target:
        raise BuildError(f"{where}: error output at code cell {target}, expected {case.target}")
    stored = [s.code_cell_index for s in execution_order(parsed.code_cells, case.target)]
    ran = [s.code_cell_index for s in steps]
    if version == "original":  # no [reexecute] annotation: a repeated run shows once
        ran = [i for n, i in enumerate(ran) if n == 0 or ran[n - 1] != i]
    if stored != ran:
        raise BuildError(f"{where}: stored counts give order {stored}, ran {ran}")
    for cell in parsed.code_cells:
        ran = cell.index in {s.code_cell_index for s in steps}
        if not ran and cell.execution_count is not None:
            raise BuildError(f"{where}: code cell {cell.index} did not run but has a count")


async def build_case(case: Case, slots: asyncio.Semaphore, target: KernelTarget) -> tuple[Built, dict[str, bytes]]:
    data: dict[str, bytes] = {}
    for dataset in case.datasets:
        data.update(dataset.files())
    notebooks = await asyncio.gather(*(execute(case, v, data, slots, target) for v in vocab.VERSIONS))
    return Built(case, dict(zip(vocab.VERSIONS, notebooks, strict=True)), case.target), data


# --------------------------------------------------------------------------- tables


def desc_row(built: Built) -> dict[str, Any]:
    case = built.case
    error = next(o for o in built.notebooks["reproduced"].cells[_position(built)].outputs
                 if o.output_type == "error")
    library = vocab.library_of(case.case_id)
    row: dict[str, Any] = {
        "fname": case.fname,
        "nb_name": case.case_id,
        "eid": str(uuid.uuid3(EID_NAMESPACE, case.case_id)),
        "ename": error.ename.lower(),
        "evalue": strip_ansi(error.evalue),
        "traceback": repr([strip_ansi(line) for line in error.traceback]),
        "Libs-cause": "None" if library == vocab.NOTEBOOK_SPECIFIC else vocab.library_label(library),
        "label_root_cause": case.root_cause,
        "label_refined_exp_type": case.crash_type,
        "label_ML_pipeline": case.pipeline_stage,
        "label_if_ML_bug": case.ml_bug,
        "source": None,  # self-written: neither labelled in the study nor sampled from Kaggle
        "Dataset_note": case.dataset_note,
        "NotebookUrl": None,
    }
    for slot, dataset in enumerate(case.datasets, start=1):
        row[f"DatasetTitle_{slot}"] = dataset.title
        row[f"DatasetLicenseName_{slot}"] = dataset.license
        row[f"DatasetUrl_{slot}"] = dataset.url
    return row


def diagnosis_rows(case: Case) -> list[dict[str, Any]]:
    library = vocab.library_of(case.case_id)
    return [
        {"library": library, "instance": vocab.instance_id(case.case_id, "reproduced"),
         "detection": True, "diagnosis": case.diagnosis, "runinfo_help": case.runinfo_help},
        {"library": library, "instance": vocab.instance_id(case.case_id, "fixed"),
         "detection": False, "diagnosis": None, "runinfo_help": "None"},
    ]


def _position(built: Built) -> int:
    code = [i for i, c in enumerate(built.notebooks["reproduced"].cells) if c.cell_type == "code"]
    return code[built.target]


# --------------------------------------------------------------------------- writing


def write_case(root: Path, built: Built, data: dict[str, bytes]) -> None:
    case = built.case
    folder = layout.case_dir(root, case.case_id)
    (folder / layout.DATA_DIR).mkdir(parents=True)
    for version, notebook in built.notebooks.items():
        nbformat.validate(notebook)
        nbformat.write(notebook, layout.notebook_path(root, case.case_id, version))
    for name, content in data.items():
        (layout.data_dir(root, case.case_id) / name).write_bytes(content)
    for dataset in case.datasets:
        meta = {"title": dataset.title, "url": dataset.url, "license": dataset.license,
                "files": sorted(dataset.files()), "modifications": dataset.modifications,
                "note": dataset.note}
        write_metadata(layout.data_dir(root, case.case_id)
                       / f"{dataset.name}{layout.METADATA_SUFFIX}", meta)


def keep_unchanged_table(new: Path, old: Path) -> None:
    """xlsx files embed save times: keep the old file when the content is the same."""
    if old.is_file():
        a, b = read_table(new), read_table(old)
        if a.columns == b.columns and a.rows == b.rows:
            shutil.copy2(old, new)


def directory_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


async def build_all(cases: list[Case], jobs: int, target: KernelTarget) -> list[tuple[Built, dict[str, bytes]]]:
    slots = asyncio.Semaphore(jobs)
    return list(await asyncio.gather(*(build_case(c, slots, target) for c in cases)))


def build(out: Path, case_ids: list[str] | None = None, jobs: int | None = None,
          env_dir: Path | None = None) -> Path:
    missing = set(DESC_COLUMNS) - set(DESC_TABLE_COLUMNS)
    assert not missing, f"DESC_TABLE_COLUMNS lacks {missing}"
    cases = all_cases()
    if case_ids:
        unknown = set(case_ids) - {c.case_id for c in cases}
        if unknown:
            raise SystemExit(f"unknown case(s): {', '.join(sorted(unknown))}")
        cases = [c for c in cases if c.case_id in case_ids]
    target = pinned_kernel(all_cases(), env_dir)
    started = time.perf_counter()
    results = asyncio.run(build_all(cases, jobs or default_jobs(), target))

    with staged(out) as staging:
        for built, data in results:
            write_case(staging, built, data)
        write_table(staging / layout.DESC_TABLE, [desc_row(b) for b, _ in results],
                    DESC_TABLE_COLUMNS)
        write_table(staging / layout.DIAGNOSIS_TABLE,
                    [r for b, _ in results for r in diagnosis_rows(b.case)], DIAGNOSIS_COLUMNS)
        for name in (layout.DESC_TABLE, layout.DIAGNOSIS_TABLE):
            keep_unchanged_table(staging / name, out / name)
        shutil.copyfile(SAMPLE_README, staging / "README.md")
        (staging / SNAPSHOT_FOLDER).mkdir()
        (staging / SNAPSHOT_FOLDER / SPEC_FILE).write_text(
            json.dumps({"name": SAMPLE_ENVIRONMENT}) + "\n", encoding="utf-8")
        size = directory_size(staging)
        if size >= MAX_BYTES:
            raise BuildError(f"the sample is {size:,} bytes; it must stay under {MAX_BYTES:,}")
        old = swap_in(staging, out)  # the sample is all generated: the old one goes whole
    if old is not None:
        remove_tree(old)
    print(f"built {len(results)} cases into {out} ({size / 1024:.0f} KiB) in "
          f"{time.perf_counter() - started:.1f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="only these case ids (default: all)")
    parser.add_argument("--out", type=Path, default=SAMPLE, help=f"default: {SAMPLE}")
    parser.add_argument("--jobs", type=int, default=None, help="kernels at once (default: cores)")
    parser.add_argument("--env", type=Path, default=None, help="the environment folder to run in "
                        "(made or reused; default: one in junobench's cache)")
    args = parser.parse_args(argv)
    try:
        build(args.out, args.cases or None, args.jobs, args.env)
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
