"""Verbs ``construct <step>`` (the maintainers' pipeline) and ``validate``."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from junobench.cli.common import add_licence_options, licence_policy_from, status, step_lines
from junobench.errors import JunoBenchError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "construct", help="rebuild or extend the benchmark from Kaggle sources (maintainers)",
        description="The construction pipeline: filter → resample → library-cause → "
                    "kaggle-metadata → download → downsample / synthetic.")
    steps = parser.add_subparsers(dest="step", metavar="STEP", required=True)
    _filter(steps)
    _resample(steps)
    _library_cause(steps)
    _kaggle_metadata(steps)
    _download(steps)
    _downsample(steps)
    _synthetic(steps)
    _reproduce(steps)
    _add_case(steps)
    _remove_case(steps)
    _renumber(steps)
    _edit(steps)
    _clean(steps)

    parser = subparsers.add_parser(
        "validate", help="check a whole snapshot: tables, notebooks, datasets, licences",
        description="Check the whole snapshot: benchmark_desc.xlsx (required columns, case "
                    "ids), the diagnosis table, every case's notebooks (present, parsed, "
                    "target cell and execution orders resolved), every "
                    "data/<name>.metadata.json (JSON Schema, listed files), the table's "
                    "datasets against the metadata files both ways, licences, and no folder "
                    "over 10,000 files; report every problem at once. Exit code 1 when "
                    "there is one. Warnings (absent originals and data, conflicting "
                    "diagnosis rows, a reproduced notebook whose exception is not the "
                    "table's ename) are problems with --strict.")
    parser.add_argument("snapshot", help="snapshot directory, or 'sample'")
    parser.add_argument("--strict", action="store_true",
                        help="count every warning as a problem (exit code 1)")
    add_licence_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="no step lines (shown on a terminal only)")
    parser.set_defaults(handler=_run_validate)


# --------------------------------------------------------------------------- filter


def _filter(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.construct.filter import ENVIRONMENT_ROOT_CAUSES, ML_BUG

    parser = steps.add_parser(
        "filter", help="the benchmark's inclusion criteria over labeled crashes",
        description="Keep Kaggle crashes (nb_source 1) that involve an ML library or are "
                    "notebook-specific, excluding environment root causes. Prints the count "
                    "after each criterion.")
    parser.add_argument("labeled", type=Path, help="labeled crashes (cluster_sampled_labeled_final.xlsx)")
    parser.add_argument("--out", type=Path, required=True, help="candidates table to write (xlsx)")
    parser.add_argument("--source-value", action="append", metavar="V",
                        help="nb_source value(s) kept (default: 1, Kaggle)")
    parser.add_argument("--ml-bug-label", action="append", metavar="TEXT",
                        help=f"label_if_ML_bug value(s) kept (default: {ML_BUG!r})")
    parser.add_argument("--notebook-specific-prefix", action="append", metavar="TEXT",
                        help="label_root_cause prefix(es) also kept (default: 'nb specific')")
    parser.add_argument("--exclude-root-cause", action="append", metavar="TEXT",
                        help="root cause(s) excluded (default: the environment-related ones: "
                             + "; ".join(ENVIRONMENT_ROOT_CAUSES) + ")")
    parser.add_argument("--column", action="append", metavar="FIELD=NAME",
                        help="column names: source, ml_bug, root_cause, notebook "
                             "(default nb_source, label_if_ML_bug, label_root_cause, fname)")
    parser.set_defaults(handler=_run_filter)


def _run_filter(args: argparse.Namespace) -> int:
    from junobench.construct.filter import COLUMNS, Criteria, filter_table

    defaults = Criteria()
    columns = dict(COLUMNS)
    for item in args.column or ():
        field, sep, name = item.partition("=")
        if not sep or field not in COLUMNS or not name:
            raise JunoBenchError(f"--column {item!r}: expected FIELD=NAME with FIELD one of "
                                 + ", ".join(COLUMNS))
        columns[field] = name
    criteria = Criteria(
        sources=tuple(args.source_value or defaults.sources),
        ml_bug_labels=tuple(args.ml_bug_label or defaults.ml_bug_labels),
        notebook_specific_prefixes=tuple(args.notebook_specific_prefix
                                         or defaults.notebook_specific_prefixes),
        excluded_root_causes=tuple(args.exclude_root_cause or defaults.excluded_root_causes),
        columns=columns)
    steps = filter_table(args.labeled, args.out, criteria)
    width = max(len(s.name) for s in steps)
    status(f"{'step'.ljust(width)}  crashes  notebooks")
    for step in steps:
        status(f"{step.name.ljust(width)}  {step.rows:7}  {step.notebooks:9}")
    status(f"wrote {steps[-1].rows} candidates to {args.out}")
    return 0


# --------------------------------------------------------------------------- resample


def _resample(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.construct.resample import PUBLISHED_LIBRARIES, PUBLISHED_N, PUBLISHED_SEED

    parser = steps.add_parser(
        "resample", help="draw further crashes from the pool, seeded (the published draw)",
        description="The published draw by default: drop the notebooks of the labeled "
                    "table's Kaggle rows, keep notebooks whose import list contains one of "
                    "the libraries exactly, draw N crashes with pandas' DataFrame.sample("
                    "n=N, random_state=SEED), write them with the labeled table's columns "
                    "(label cells blank). Every crash is taken, with a warning, when no "
                    "more than N notebooks are eligible.")
    parser.add_argument("pool", type=Path, help="all crashes (clusters_Kaggle_final.xlsx)")
    parser.add_argument("--imports", type=Path, required=True,
                        help="notebook imports (nb_imports_all_final.xlsx: fname, imports)")
    parser.add_argument("--exclude", type=Path, action="append", default=[], metavar="TABLE",
                        help="crashes whose notebooks are dropped (repeatable); the first is the "
                             "labeled table whose columns the output takes. Notebooks are named "
                             "by fname, or by URL (NotebookUrl, nb_url_kaggle: turned into the "
                             "study's file name)")
    parser.add_argument("--libraries", default=",".join(PUBLISHED_LIBRARIES),
                        help="comma-separated libraries (default: the published "
                             f"{','.join(PUBLISHED_LIBRARIES)})")
    parser.add_argument("--n", type=int, default=PUBLISHED_N,
                        help=f"crashes to draw (default {PUBLISHED_N})")
    parser.add_argument("--seed", type=int, default=PUBLISHED_SEED,
                        help=f"random seed (default {PUBLISHED_SEED})")
    parser.add_argument("--out", type=Path, required=True, help="sample table to write (xlsx)")
    parser.add_argument("--match", choices=("exact", "module"), default="exact",
                        help="exact: a library is an item of the import list (published); "
                             "module: an import's top-level package, tensorflow/keras as one")
    parser.add_argument("--sampler", choices=("pandas", "python"), default="pandas",
                        help="pandas: DataFrame.sample, drawn order (published); python: "
                             "random.Random, pool order")
    parser.add_argument("--columns", choices=("labeled", "pool"), default="labeled",
                        help="labeled: the labeled table's columns, labels blank (published); "
                             "pool: the pool's columns plus imported_libraries")
    parser.add_argument("--exclude-any-source", action="store_true",
                        help="exclude every row of the excluded tables, not only nb_source 1")
    parser.add_argument("--notebook-column", default="fname")
    parser.add_argument("--imports-column", default="imports")
    parser.set_defaults(handler=_run_resample)


def _run_resample(args: argparse.Namespace) -> int:
    from junobench.construct.resample import KAGGLE_SOURCE, Procedure, resample

    libraries = tuple(lib.strip() for lib in args.libraries.split(",") if lib.strip())
    if not libraries:
        raise JunoBenchError("--libraries names no library")
    procedure = Procedure(libraries=libraries, match=args.match, sampler=args.sampler,
                          columns=args.columns,
                          excluded_source=None if args.exclude_any_source else KAGGLE_SOURCE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sample = resample(args.pool, args.imports, exclude=args.exclude, procedure=procedure,
                          n=args.n, seed=args.seed, out=args.out,
                          notebook_column=args.notebook_column,
                          imports_column=args.imports_column)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    for name, crashes, notebooks in sample.counts:
        status(f"{name}: {crashes} crashes in {notebooks} notebooks")
    status(f"wrote {len(sample.rows)} crashes to {args.out}")
    return 0


# --------------------------------------------------------------------------- library cause


def _library_cause(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "library-cause", help="estimate which library each crash belongs to",
        description="Estimate the library cause from each traceback (crash line, library "
                    "frames, exception, message): any library, or with --benchmark-labels "
                    "one of the benchmark's ten. With --out, write the table with a "
                    "Libs-cause-estimated column ('None' where no library is involved); "
                    "with --evaluate, score the estimate against the labelled rows, those "
                    "of the benchmark's libraries and those of other libraries apart, and "
                    "print confusion tables.")
    parser.add_argument("table", type=Path, help="crashes table (xlsx)")
    parser.add_argument("--traceback-column", default="traceback")
    parser.add_argument("--code-column", help="column with the crashing cell's code (optional)")
    parser.add_argument("--benchmark-labels", action="store_true",
                        help="answer only the benchmark's ten library labels")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--out", type=Path, help="scored table to write (xlsx)")
    action.add_argument("--evaluate", action="store_true",
                        help="compare with --label-column and print confusion tables")
    parser.add_argument("--label-column", default="Libs-cause",
                        help="labels for --evaluate (keras and tensorflow count as one)")
    parser.add_argument("--split", choices=("all", "tune", "held-out"), default="all",
                        help="with --evaluate: the rows the estimator was tuned on, the "
                             "held-out third (never tuned on), or all (default)")
    parser.add_argument("--misses", action="store_true", help="with --evaluate: list the misses")
    parser.set_defaults(handler=_run_library_cause)


def _run_library_cause(args: argparse.Namespace) -> int:
    from junobench.construct import library_cause

    if args.evaluate:
        for group in ("target", "other"):
            try:
                evaluation = library_cause.evaluate(
                    args.table, traceback_column=args.traceback_column,
                    label_column=args.label_column, code_column=args.code_column, rows=group,
                    split=args.split, benchmark=args.benchmark_labels)
            except JunoBenchError:
                if group == "target":
                    raise
                print("(no row is labelled with another library)")
                continue
            print(evaluation.table())
            if args.misses:
                for miss in evaluation.misses:
                    print(f"  {miss[args.label_column]} → {miss['estimated']}: "
                          f"{str(miss.get('evalue') or '')[:100]}")
        return 0
    rows = library_cause.score_table(args.table, args.out, traceback_column=args.traceback_column,
                                     code_column=args.code_column,
                                     benchmark=args.benchmark_labels)
    counts = Counter(row["Libs-cause-estimated"] for row in rows)
    status(", ".join(f"{label}: {n}" for label, n in counts.most_common()))
    status(f"wrote {len(rows)} rows to {args.out}")
    return 0


# --------------------------------------------------------------------------- Kaggle


def _kaggle_metadata(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "kaggle-metadata", help="resolve notebooks to their input datasets with Meta Kaggle",
        description="Query the Meta Kaggle CSV tables in place (DuckDB) for each notebook's "
                    "input datasets: title, https://www.kaggle.com/datasets/<owner>/<slug> URL, "
                    "licence, version.")
    parser.add_argument("notebooks", type=Path,
                        help="CSV (or xlsx) with a column of notebook URLs or owner/slug")
    parser.add_argument("--meta-kaggle", type=Path, required=True,
                        help="folder with Meta Kaggle's CSV files (Users.csv, Kernels.csv, …)")
    parser.add_argument("--out", type=Path, required=True, help="datasets table (xlsx or csv)")
    parser.add_argument("--column", help="the notebook column (default: notebook, NotebookUrl, "
                                         "nb_url_kaggle, notebook_url, url, or the only column)")
    parser.set_defaults(handler=_run_kaggle_metadata)


def _run_kaggle_metadata(args: argparse.Namespace) -> int:
    from junobench.construct.kaggle import NOT_FOUND, kaggle_metadata

    rows = kaggle_metadata(args.notebooks, args.meta_kaggle, args.out, column=args.column)
    notebooks = {r["notebook"] for r in rows}
    datasets = [r for r in rows if r.get("url")]
    unresolved = sorted({r["notebook"] for r in rows if r.get("note") == NOT_FOUND})
    status(f"{len(notebooks)} notebooks, {len(datasets)} input datasets; wrote {args.out}")
    if unresolved:
        print(f"warning: {len(unresolved)} {NOT_FOUND.replace('notebook', 'notebook(s)', 1)} "
              f"(noted in their rows): {', '.join(unresolved)}", file=sys.stderr)
    return 0


def _download(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "download", help="fetch the datasets with kagglehub (resumable, hashed)",
        description="Fetch each dataset of a datasets table with kagglehub (credentials from "
                    "KAGGLE_USERNAME/KAGGLE_KEY or ~/.kaggle/kaggle.json): version N into "
                    "DEST/<owner>/<slug>/versions/<N>/ (latest/ when the table gives no "
                    "version), with size and sha256 per file in <folder>.download.json; "
                    "versions already there and verified are skipped.")
    parser.add_argument("datasets", type=Path, help="datasets table from kaggle-metadata")
    parser.add_argument("--dest", type=Path, required=True, help="download folder")
    parser.add_argument("--mirror", type=Path,
                        help="read MIRROR/<owner>/<slug>/ instead of downloading")
    parser.set_defaults(handler=_run_download)


def _run_download(args: argparse.Namespace) -> int:
    from junobench.construct.kaggle import DownloadFailed, download

    try:
        items = download(args.datasets, args.dest, mirror=args.mirror)
        failed = None
    except DownloadFailed as error:
        items, failed = error.done, error
    for item in items:
        size = sum(f["size"] for f in item.files)
        state = "already complete" if item.skipped else "downloaded"
        status(f"{item.handle}: {state}, {len(item.files)} files, {size:,} bytes → {item.folder}")
    if failed is None:
        return 0
    for handle, problem in failed.failures:
        print(f"failed: {handle}: {problem}", file=sys.stderr)
    raise JunoBenchError(failed.summary + " (each failure listed above)", hint=failed.problem_.hint)


# --------------------------------------------------------------------------- downsample


def _downsample(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.safety.archives import MAX_ARCHIVE_BYTES, MAX_ARCHIVE_MEMBERS, MAX_COMPRESSION_RATIO

    parser = steps.add_parser(
        "downsample", help="keep a seeded share of each class of a dataset",
        description="Downsample image folders, archives, tables or tables with the files they "
                    "reference, and record the modification in the dataset's metadata file "
                    "(by default DEST's sibling <name>.metadata.json).")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    helps = {
        "images": "image folders: k or a fraction per class folder",
        "archive": "zip/tar: per top-level folder, extracted safely",
        "table": "CSV/TSV/parquet/xlsx: stratified by --label-column",
        "paired": "a table and the files its rows reference",
    }
    for kind, text in helps.items():
        sub = kinds.add_parser(kind, help=text, description=text)
        sub.add_argument("source", type=Path)
        sub.add_argument("--out", type=Path, required=True,
                         help="new folder (a new table file for 'table')")
        amount = sub.add_mutually_exclusive_group(required=True)
        amount.add_argument("--fraction", type=float, help="share kept per class, in (0, 1]")
        amount.add_argument("--per-class", type=int, help="items kept per class")
        sub.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        if kind in ("table", "paired"):
            sub.add_argument("--label-column", help="stratify by this column")
        if kind == "paired":
            sub.add_argument("--files-column", required=True, action="append",
                             help="column with each row's file, relative to --files-root "
                                  "(repeatable: every file of a kept row is copied)")
            sub.add_argument("--files-root", type=Path,
                             help="folder the file paths are relative to (default: the "
                                  "table's); the files keep its place relative to the table")
        if kind == "archive":
            sub.add_argument("--max-size", type=int, default=MAX_ARCHIVE_BYTES,
                             help="refuse archives whose uncompressed size passes this many "
                                  f"bytes (default {MAX_ARCHIVE_BYTES})")
            sub.add_argument("--max-members", type=int, default=MAX_ARCHIVE_MEMBERS,
                             help="refuse archives with more members than this "
                                  f"(default {MAX_ARCHIVE_MEMBERS})")
            sub.add_argument("--max-ratio", type=float, default=MAX_COMPRESSION_RATIO,
                             help="refuse archives compressed more than this many to one "
                                  f"(default {MAX_COMPRESSION_RATIO})")
        _metadata_options(sub)
        sub.set_defaults(handler=_run_downsample)


def _metadata_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--metadata", type=Path,
                       help="the dataset's metadata file to record in (default: "
                            "<out folder>/<name>.metadata.json beside the output)")
    group.add_argument("--no-metadata", action="store_true",
                       help="do not record the modification")


def _run_downsample(args: argparse.Namespace) -> int:
    from junobench.construct import downsample

    common = {"fraction": args.fraction, "per_class": args.per_class, "seed": args.seed,
              "metadata": args.metadata, "record": not args.no_metadata}
    if args.kind == "images":
        result = downsample.downsample_images(args.source, args.out, **common)
    elif args.kind == "archive":
        result = downsample.downsample_archive(args.source, args.out, max_bytes=args.max_size,
                                               max_members=args.max_members,
                                               max_ratio=args.max_ratio, **common)
    elif args.kind == "table":
        result = downsample.downsample_table(args.source, args.out,
                                             label_column=args.label_column, **common)
    else:
        result = downsample.downsample_paired(args.source, args.out,
                                              files_column=args.files_column,
                                              files_root=args.files_root,
                                              label_column=args.label_column, **common)
    for name, (before, after) in result.classes.items():
        status(f"  {name}: {before} → {after}")
    status(f"kept {result.after} of {result.before} {result.unit} ({result.ratio:.1%}) → {result.out}")
    return 0


def _synthetic(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "synthetic", help="replace a restricted-licence table by a synthetic one",
        description="Same columns, dtypes and missing cells; numbers and dates within the "
                    "original ranges; other values from the original set; no original row "
                    "reproduced whole; deterministic for a seed. CSV, TSV and parquet.")
    parser.add_argument("table", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="synthetic table (same format)")
    parser.add_argument("--seed", type=int, required=True, help="random seed")
    _metadata_options(parser)
    parser.set_defaults(handler=_run_synthetic)


def _run_synthetic(args: argparse.Namespace) -> int:
    from junobench.construct.synthetic import synthetic

    report = synthetic(args.table, args.out, seed=args.seed, metadata=args.metadata,
                       record=not args.no_metadata)
    for name, how in report.columns.items():
        status(f"  {name}: {how}")
    if report.repeated_rows:
        print(f"note: {report.repeated_rows} row(s) equal an original row (too few distinct "
              "values to avoid it)", file=sys.stderr)
    status(f"wrote {report.rows} synthetic rows to {args.out}")
    return 0


# --------------------------------------------------------------------------- reproduce


def _reproduce(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.cli.common import add_executor, add_sandbox

    parser = steps.add_parser(
        "reproduce", help="replay sampled crashes up to their crashing cell and classify them",
        description="For each row of a sampled table: find the notebook's crashing cell from its "
                    "error output, run the notebook in execution order up to that cell in a fresh "
                    "kernel (working/ beside input/<slug>/, as on Kaggle), and classify the run: "
                    "same exception, different exception, crashed earlier, no crash, timeout, "
                    "missing data, missing module, kernel died, not run, or infrastructure error "
                    "(a crash that needs its cell run twice is tried that way, and said so). "
                    "Writes the table with a `reproduced` column and its details; a rerun with "
                    "the same --out keeps the rows that already have a verdict.")
    parser.add_argument("table", type=Path, help="sampled crashes (construct resample's output)")
    parser.add_argument("--notebooks", type=Path, required=True, metavar="DIR",
                        help="folder holding the notebooks the table's notebook column names")
    parser.add_argument("--data", type=Path, metavar="DIR",
                        help="input datasets: DIR/<slug>/ (as Kaggle's /kaggle/input) or construct "
                             "download's DIR/<owner>/<slug>/")
    parser.add_argument("--out", type=Path, required=True, help="table to write (xlsx)")
    parser.add_argument("--env", type=Path, metavar="DIR",
                        help="run the kernels in this environment (made by `junobench env create`; "
                             "with Ray, at the same path on every worker)")
    parser.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                        help="notebooks running at once (default: number of cores, or what the "
                             "Ray cluster's CPUs hold)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SEC",
                        help="time limit per cell run, in seconds (default: 600)")
    parser.add_argument("--notebook-column", default="fname")
    parser.add_argument("--exception-column", default="ename")
    parser.add_argument("--message-column", default="evalue")
    parser.add_argument("--fresh", action="store_true",
                        help="run every row again, even those --out already has a verdict for")
    parser.add_argument("--quota", type=int, metavar="N",
                        help="stop trying a library's crashes once N of them reproduced (rows in "
                             "table order; the rest are left 'over quota')")
    parser.add_argument("--library-column", metavar="NAME",
                        help="the column naming each row's library, for --quota (default: "
                             "Libs-cause-estimated, Libs-cause or library)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_executor(parser)
    add_sandbox(parser)
    parser.set_defaults(handler=_run_reproduce)


def _run_reproduce(args: argparse.Namespace) -> int:
    from junobench.cli.common import executor_options, interrupted_saying, report_stopped, sandbox_from
    from junobench.construct.reproduce import DEFAULT_TIMEOUT, reproduce

    with interrupted_saying(f"{args.out} holds every row"):
        result = reproduce(
            args.table, args.notebooks, out=args.out, data=args.data, env=args.env, executor=args.executor,
            jobs=args.jobs, timeout=DEFAULT_TIMEOUT if args.timeout is None else args.timeout,
            notebook_column=args.notebook_column, exception_column=args.exception_column,
            message_column=args.message_column, resume=not args.fresh,
            progress=False if args.no_progress else None, executor_options=executor_options(args),
            quota=args.quota, library_column=args.library_column, sandbox=sandbox_from(args))
    counts = ", ".join(f"{n} {outcome}" for outcome, n in result.counts().items())
    reused = f", {result.reused} kept from the earlier run" if result.reused else ""
    status(f"wrote {len(result.rows)} rows to {args.out}: {counts}{reused} "
           f"({result.seconds:.1f} s, {result.executor}, sandbox {result.sandbox})")
    return 1 if report_stopped(result.stopped, f"{args.out} holds every row") else 0


# --------------------------------------------------------------------------- add-case


def _add_case(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench import vocab

    parser = steps.add_parser(
        "add-case", help="add a case to a snapshot: folder, metadata files, table rows",
        description="Create benchmark/<library>_<next free number>/ with the notebooks, "
                    "data/<name>.metadata.json per dataset and the data files, its row in "
                    "benchmark_desc.xlsx (DatasetTitle_N/DatasetUrl_N/DatasetLicenseName_N "
                    "included) and its rows in the diagnosis table, all at once; then "
                    "validate the snapshot. A case the snapshot has already (same eid, "
                    "notebook URL or file name, or a notebook's code) is refused, and so is a "
                    "pair that does not behave when run first (the reproduced notebook must "
                    "crash at its target with the recorded exception, the fixed one must run; "
                    "--no-verify skips this and records it).")
    parser.add_argument("snapshot", type=Path, help="the snapshot folder to extend")
    parser.add_argument("notebook", help="the original notebook: its Kaggle URL (or "
                                         "owner/slug), or a local .ipynb file")
    parser.add_argument("--url", help="the notebook's Kaggle URL, when NOTEBOOK is a file")
    parser.add_argument("--reproduced", type=Path, required=True,
                        help="the reproduced notebook (it crashes: its error output is saved)")
    parser.add_argument("--fixed", type=Path, required=True, help="the fixed notebook")
    parser.add_argument("--pull-original", action="store_true",
                        help="with a URL: fetch the original notebook with the Kaggle API "
                             "client (pip install kaggle; its credentials)")
    parser.add_argument("--library", required=True,
                        help=f"library cause: {', '.join(vocab.LIBRARIES)} (or its label)")
    parser.add_argument("--root-cause", required=True, help="; ".join(vocab.ROOT_CAUSES))
    parser.add_argument("--crash-type", required=True, help="e.g. 'key error'")
    parser.add_argument("--stage", required=True, help="; ".join(vocab.PIPELINE_STAGES))
    parser.add_argument("--ml-bug", default="ML bug", help="label_if_ML_bug (default 'ML bug')")
    parser.add_argument("--diagnosis", required=True, help="the crash diagnosis (text)")
    parser.add_argument("--origin", choices=vocab.ORIGINS, help="where the case was found")
    parser.add_argument("--eid", help="the crash's id in the empirical study")
    parser.add_argument("--datasets", type=Path,
                        help="the kaggle-metadata table: its rows for this notebook")
    parser.add_argument("--dataset", action="append", default=[], metavar="SPEC",
                        help="a dataset by hand: 'name=…;title=…;url=…;license=…' (repeatable)")
    parser.add_argument("--data", action="append", default=[], metavar="NAME=PATH",
                        help="a file or folder of dataset NAME, copied into data/ (repeatable); "
                             "a <stem>.metadata.json beside it gives its modifications")
    parser.add_argument("--dataset-note", help="Dataset_note (default: the modifications)")
    parser.add_argument("--new-library", action="store_true",
                        help="allow a library prefix outside the benchmark's")
    _edit_options(parser, env="run the pair in this environment (made by `junobench env create`), as verify does",
                  no_verify="add the case without running its pair (its provenance says so)")
    parser.set_defaults(handler=_run_add_case)


def _edit_options(parser: argparse.ArgumentParser, *, env: str, no_verify: str) -> None:
    """Options of the edits that bring code or data into a snapshot (add-case, edit);
    ``env`` and ``no_verify``: the help of ``--env`` and ``--no-verify``."""
    from junobench.construct.add_case import LARGE_FILE
    from junobench.data.similarity import THRESHOLD, percent
    from junobench.safety.archives import human_size

    parser.add_argument("--allow-new-labels", action="store_true",
                        help="allow labels outside the published vocabularies")
    parser.add_argument("--env", type=Path, metavar="DIR", help=env)
    parser.add_argument("--timeout", type=float, default=None, metavar="SEC",
                        help="time limit per cell run of the pair, in seconds (default: 600)")
    parser.add_argument("--no-verify", action="store_true", help=no_verify)
    parser.add_argument("--allow-similar", action="store_true",
                        help=f"accept a case whose normalised code is {percent(THRESHOLD).replace('%', '%%')} or "
                             "more similar to one of the snapshot's (a near-duplicate); recorded in its provenance")
    parser.add_argument("--large-file", type=_size, default=LARGE_FILE, metavar="SIZE",
                        help=f"name data files of this size or more (default {human_size(LARGE_FILE)})")
    parser.add_argument("--refuse-large", action="store_true",
                        help="refuse a data file of --large-file or more instead of naming it")
    parser.add_argument("--no-progress", action="store_true",
                        help="no step lines (shown on a terminal only)")


def _size(text: str) -> int:
    from junobench.cli.common import parse_size

    try:
        return int(parse_size(text))
    except (ValueError, JunoBenchError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _run_add_case(args: argparse.Namespace) -> int:
    from junobench.construct import add_case as ac
    from junobench.construct.kaggle import kaggle_pull

    _finish_pending(args.snapshot)
    local = Path(args.notebook)
    is_file = args.notebook.endswith(".ipynb") or local.exists()
    url = args.url if is_file else args.notebook
    datasets = ac.datasets_from_table(args.datasets, url) if args.datasets and url else []
    if args.datasets and not url:
        raise JunoBenchError("--datasets needs the notebook's URL (give --url)")
    datasets += [ac.parse_dataset_spec(spec) for spec in args.dataset]
    ac.attach_data(datasets, args.data)
    case = ac.NewCase(
        library=args.library, reproduced=args.reproduced, fixed=args.fixed,
        root_cause=args.root_cause, crash_type=args.crash_type, pipeline_stage=args.stage,
        ml_bug=args.ml_bug, diagnosis=args.diagnosis, original=local if is_file else None,
        notebook_url=url, datasets=datasets, source=args.origin, eid=args.eid,
        dataset_note=args.dataset_note)
    added = ac.add_case(args.snapshot, case, allow_new_library=args.new_library,
                        pull=kaggle_pull if args.pull_original else None, **_edit_keywords(args))
    return _edited(args.snapshot, f"added {added.case_id}: {', '.join(added.files)}"
                   + (f"; datasets {', '.join(added.datasets)}" if added.datasets else ""),
                   added.checked, added.warnings)


def _edit_keywords(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of ``add_case`` and ``edit_case`` that :func:`_edit_options` gives."""
    return {"verify": not args.no_verify, "env": args.env, "timeout": args.timeout,
            "allow_new_labels": args.allow_new_labels, "allow_similar": args.allow_similar,
            "large_file": args.large_file, "refuse_large": args.refuse_large, "progress": step_lines(args)}


def _edited(snapshot: Path, summary: str, checked: str, warned: list[str]) -> int:
    """Say what an add-case or edit did and how its pair was checked, then validate the snapshot."""
    status(summary)
    status(f"  {checked}")
    for warning in warned:
        print(f"warning: {warning}", file=sys.stderr)
    return _print_validation(snapshot, show=status)


def _finish_pending(snapshot: Path) -> list[str]:
    """Finish what an interrupted edit of ``snapshot`` left and say so; the lines said."""
    from junobench.construct.transaction import editable_root, editing

    with editing(editable_root(snapshot)) as recovered:
        messages = recovered.messages()
    for message in messages:
        status(message)
    return messages


def _remove_case(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "remove-case", help="remove a case from a snapshot: folder and table rows",
        description="Remove benchmark/<CASE>/, its row of benchmark_desc.xlsx and its rows of "
                    "the diagnosis table, all at once (journaled: a killed run is finished by "
                    "the next editing command); then validate the snapshot. The gap in the "
                    "numbering stays until `construct renumber`.")
    parser.add_argument("snapshot", type=Path, help="the snapshot folder")
    parser.add_argument("cases", nargs="+", metavar="CASE", help="the case ids, e.g. pandas_2 torch_7")
    parser.set_defaults(handler=_run_remove_case)


def _run_remove_case(args: argparse.Namespace) -> int:
    from junobench.construct.remove_case import remove_cases

    _finish_pending(args.snapshot)
    for removed in remove_cases(args.snapshot, args.cases):
        what = [*(["its folder"] if removed.folder else []),
                *([f"{removed.desc_rows} row(s) of benchmark_desc.xlsx"] if removed.desc_rows else []),
                *([f"{removed.diagnosis_rows} diagnosis row(s)"] if removed.diagnosis_rows else [])]
        status(f"removed {removed.case_id}: {', '.join(what)}")
    return _print_validation(args.snapshot, show=status)


def _edit(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench import vocab

    parser = steps.add_parser(
        "edit", help="change a case: labels, diagnosis, dataset metadata, a notebook or a data file",
        description="Edit one case all at once, as add-case adds one: the folder is edited in a staging "
                    "copy, checked (it builds; a new notebook is no near-duplicate), its pair run again "
                    "when code or data changed (--no-verify: recorded as not verified in its provenance), "
                    "then swapped in with the tables through one journal. A refusal changes nothing.")
    parser.add_argument("snapshot", type=Path, help="the snapshot folder")
    parser.add_argument("case", help="the case id, e.g. pandas_2")
    parser.add_argument("--root-cause", help="; ".join(vocab.ROOT_CAUSES))
    parser.add_argument("--crash-type", help="e.g. 'key error'")
    parser.add_argument("--stage", help="; ".join(vocab.PIPELINE_STAGES))
    parser.add_argument("--ml-bug", help="label_if_ML_bug")
    parser.add_argument("--diagnosis", help="the new diagnosis (text)")
    parser.add_argument("--set-dataset", action="append", default=[], metavar="NAME.FIELD=VALUE",
                        help="a dataset's title, url, license or note (its metadata file and table columns)")
    parser.add_argument("--original", type=Path, help="a new original notebook")
    parser.add_argument("--reproduced", type=Path, help="a new reproduced notebook")
    parser.add_argument("--fixed", type=Path, help="a new fixed notebook")
    parser.add_argument("--data", action="append", default=[], metavar="NAME=PATH",
                        help="a file or folder put into data/ for dataset NAME (replacing one of its name)")
    _edit_options(parser, env="run the pair in this environment",
                  no_verify="do not run the pair again after a change of code or data (its provenance says so)")
    parser.set_defaults(handler=_run_edit)


def _run_edit(args: argparse.Namespace) -> int:
    from junobench.construct import edit_case as ec

    _finish_pending(args.snapshot)
    labels = {key: value for key, value in (("root_cause", args.root_cause), ("crash_type", args.crash_type),
                                            ("pipeline_stage", args.stage), ("ml_bug", args.ml_bug)) if value}
    notebooks = {v: p for v, p in (("original", args.original), ("reproduced", args.reproduced),
                                   ("fixed", args.fixed)) if p is not None}
    edit = ec.CaseEdit(labels, args.diagnosis, ec.parse_assignments(args.set_dataset), notebooks,
                       ec.parse_data(args.data))
    edited = ec.edit_case(args.snapshot, args.case, edit, **_edit_keywords(args))
    return _edited(args.snapshot, ec.edit_summary(edited), edited.checked, edited.warnings)


def _clean(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "clean", help="finish an interrupted edit and remove what a killed one left",
        description="Finish an add-case, edit, remove-case or renumber killed half-way (its journal), "
                    "and remove what one killed before its journal left in the snapshot: staging "
                    "folders (.junobench-edit-*.partial/) and temporary tables, known by their names.")
    parser.add_argument("snapshot", type=Path, help="the snapshot folder")
    parser.set_defaults(handler=_run_clean)


def _run_clean(args: argparse.Namespace) -> int:
    if not _finish_pending(args.snapshot):
        status("nothing to clean: no interrupted edit, no leftovers")
    return 0


def _renumber(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "renumber", help="close gaps in case numbering (folders, notebooks, table rows)",
        description="Number each library's cases 1, 2, … in their order: rename the case "
                    "folders, the notebooks named after them and the rows of both tables "
                    "together. --dry-run prints the plan only.")
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("--library", action="append", metavar="PREFIX",
                        help="only these libraries (repeatable; default all)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    parser.set_defaults(handler=_run_renumber)


def _run_renumber(args: argparse.Namespace) -> int:
    from junobench.construct.renumber import renumber

    if not args.dry_run:
        _finish_pending(args.snapshot)
    plan = renumber(args.snapshot, libraries=args.library, dry_run=args.dry_run)
    if not plan:
        status("nothing to renumber: every library is numbered 1, 2, … without gaps")
        return 0 if args.dry_run else _print_validation(args.snapshot, show=status)
    for old, new in plan:  # a dry run's plan is its data; a renumbering's, a status
        (print if args.dry_run else status)(f"{old} -> {new}")
    if args.dry_run:
        status(f"dry run: {len(plan)} case(s) would be renamed; nothing changed")
        return 0
    status(f"renamed {len(plan)} case(s); the next release records the published ids renamed "
           "(renamed_cases.json)")
    return _print_validation(args.snapshot, show=status)


# --------------------------------------------------------------------------- validate


def _run_validate(args: argparse.Namespace) -> int:
    policy = licence_policy_from(args)
    step = step_lines(args)
    if step is not None:
        step(f"checking {args.snapshot}: tables, every case's notebooks and datasets, licences, near-duplicates")
    return _print_validation(args.snapshot, strict=args.strict, licences=policy,
                             licence_policy=args.licence_policy)


def _print_validation(snapshot: str | Path, *, strict: bool = False,
                      show: Callable[[str], None] = print, **options: Any) -> int:
    """Validate ``snapshot`` and ``show`` the verdict (``validate``'s data on stdout; after an
    edit of the snapshot, a status line on stderr); warnings go to stderr."""
    from junobench.data.validate import check

    report = check(snapshot, strict=strict, **options)
    grouped: dict[str, list[str]] = {}
    for warning in report.warnings:
        grouped.setdefault(warning.problem, []).append(warning.case or warning.file or "")
    for text, where in grouped.items():
        shown = ", ".join(where[:6]) + (f", … ({len(where)} in all)" if len(where) > 6 else "")
        print(f"warning: {text}: {shown}", file=sys.stderr)
    if report.problems:
        show(f"{len(report.problems)} problem(s) in {snapshot}:")
        for problem in report.problems:
            show(f"  - {problem}")
        return 1
    show(f"{snapshot}: valid ({report.cases} cases, tables and "
         f"{report.metadata_files} dataset metadata files)")
    return 0
