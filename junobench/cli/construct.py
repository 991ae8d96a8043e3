"""Verbs ``construct <step>`` (the maintainers' pipeline) and ``validate``."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

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

    parser = subparsers.add_parser(
        "validate", help="check a snapshot's tables and dataset metadata files",
        description="Check benchmark_desc.xlsx (required columns, case ids), the diagnosis "
                    "table, and every data/<name>.metadata.json (JSON Schema, listed files); "
                    "report every problem at once. Exit code 1 when there is one. Conflicting "
                    "diagnosis rows and a reproduced notebook whose exception is not the "
                    "table's ename are warnings (problems with --strict).")
    parser.add_argument("snapshot", help="snapshot directory, or 'sample'")
    parser.add_argument("--strict", action="store_true",
                        help="count the warnings (conflicting diagnosis rows, a reproduced "
                             "notebook's exception other than the table's ename) as problems")
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
    print(f"{'step'.ljust(width)}  crashes  notebooks")
    for step in steps:
        print(f"{step.name.ljust(width)}  {step.rows:7}  {step.notebooks:9}")
    print(f"wrote {steps[-1].rows} candidates to {args.out}")
    return 0


# --------------------------------------------------------------------------- resample


def _resample(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "resample", help="draw further crashes from the pool, seeded",
        description="Drop notebooks already labeled, keep notebooks importing a target "
                    "library, draw N crashes with the seed (all of them, with a warning, "
                    "when fewer are eligible).")
    parser.add_argument("pool", type=Path, help="all crashes (clusters_Kaggle_final.xlsx)")
    parser.add_argument("--imports", type=Path, required=True,
                        help="notebook imports (nb_imports_all_final.xlsx: fname, imports)")
    parser.add_argument("--exclude", type=Path, help="labeled crashes whose notebooks are dropped")
    parser.add_argument("--libraries", required=True,
                        help="comma-separated target libraries, e.g. torch,sklearn,tensorflow")
    parser.add_argument("--n", type=int, required=True, help="crashes to draw")
    parser.add_argument("--seed", type=int, required=True, help="random seed")
    parser.add_argument("--out", type=Path, required=True, help="sample table to write (xlsx)")
    parser.add_argument("--notebook-column", default="fname")
    parser.add_argument("--imports-column", default="imports")
    parser.set_defaults(handler=_run_resample)


def _run_resample(args: argparse.Namespace) -> int:
    from junobench.construct.resample import resample

    libraries = [lib.strip() for lib in args.libraries.split(",") if lib.strip()]
    if not libraries:
        raise JunoBenchError("--libraries names no library")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sample = resample(args.pool, args.imports, exclude=args.exclude, libraries=libraries,
                          n=args.n, seed=args.seed, out=args.out,
                          notebook_column=args.notebook_column,
                          imports_column=args.imports_column)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    for name, crashes, notebooks in sample.counts:
        print(f"{name}: {crashes} crashes in {notebooks} notebooks")
    print(f"wrote {len(sample.rows)} crashes to {args.out}")
    return 0


# --------------------------------------------------------------------------- library cause


def _library_cause(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = steps.add_parser(
        "library-cause", help="estimate which ML library each crash belongs to",
        description="Estimate the library cause from each traceback (crash line, library "
                    "frames, exception, message). With --out, write the table with a "
                    "Libs-cause-estimated column; with --evaluate, score the estimate against "
                    "the rows labeled with one of the 10 benchmark libraries and print a "
                    "confusion table.")
    parser.add_argument("table", type=Path, help="crashes table (xlsx)")
    parser.add_argument("--traceback-column", default="traceback")
    parser.add_argument("--code-column", help="column with the crashing cell's code (optional)")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--out", type=Path, help="scored table to write (xlsx)")
    action.add_argument("--evaluate", action="store_true",
                        help="compare with --label-column and print a confusion table")
    parser.add_argument("--label-column", default="Libs-cause",
                        help="labels for --evaluate (keras and tensorflow count as one)")
    parser.add_argument("--misses", action="store_true", help="with --evaluate: list the misses")
    parser.set_defaults(handler=_run_library_cause)


def _run_library_cause(args: argparse.Namespace) -> int:
    from junobench.construct import library_cause

    if args.evaluate:
        evaluation = library_cause.evaluate(args.table, traceback_column=args.traceback_column,
                                             label_column=args.label_column,
                                             code_column=args.code_column)
        print(evaluation.table(), end="")
        if args.misses:
            for miss in evaluation.misses:
                print(f"  {library_cause.normalise_label(miss[args.label_column])} → "
                      f"{miss['estimated']}: {str(miss.get('evalue') or '')[:100]}")
        return 0
    rows = library_cause.score_table(args.table, args.out, traceback_column=args.traceback_column,
                                     code_column=args.code_column)
    counts: dict[str, int] = {}
    for row in rows:
        label = row["Libs-cause-estimated"] or "None"
        counts[label] = counts.get(label, 0) + 1
    print(", ".join(f"{label}: {n}" for label, n in sorted(counts.items(), key=lambda x: -x[1])))
    print(f"wrote {len(rows)} rows to {args.out}")
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
    from junobench.construct.kaggle import kaggle_metadata

    rows = kaggle_metadata(args.notebooks, args.meta_kaggle, args.out, column=args.column)
    notebooks = {r["notebook"] for r in rows}
    datasets = [r for r in rows if r.get("url")]
    unresolved = sorted({r["notebook"] for r in rows if r.get("note")
                         and "not found" in r["note"]})
    print(f"{len(notebooks)} notebooks, {len(datasets)} input datasets; wrote {args.out}")
    for name in unresolved:
        print(f"  not in Meta Kaggle: {name}", file=sys.stderr)
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
    from junobench.construct.kaggle import download

    for item in download(args.datasets, args.dest, mirror=args.mirror):
        size = sum(f["size"] for f in item.files)
        state = "already complete" if item.skipped else "downloaded"
        print(f"{item.handle}: {state}, {len(item.files)} files, {size:,} bytes → {item.folder}")
    return 0


# --------------------------------------------------------------------------- downsample


def _downsample(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.construct.downsample import MAX_ARCHIVE_BYTES, MAX_ARCHIVE_MEMBERS, MAX_COMPRESSION_RATIO

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
            sub.add_argument("--files-column", required=True,
                             help="column with each row's file, relative to --files-root")
            sub.add_argument("--files-root", type=Path,
                             help="folder the file paths are relative to (default: the table's)")
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
        print(f"  {name}: {before} → {after}")
    print(f"kept {result.after} of {result.before} {result.unit} ({result.ratio:.1%}) → {result.out}")
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
        print(f"  {name}: {how}")
    if report.repeated_rows:
        print(f"note: {report.repeated_rows} row(s) equal an original row (too few distinct "
              "values to avoid it)", file=sys.stderr)
    print(f"wrote {report.rows} synthetic rows to {args.out}")
    return 0


# --------------------------------------------------------------------------- validate


def _run_validate(args: argparse.Namespace) -> int:
    from junobench.data.validate import metadata_files, snapshot_root, validate, validation_warnings

    problems = validate(args.snapshot, strict=args.strict)
    warnings = [] if args.strict else validation_warnings(args.snapshot)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in {args.snapshot}:")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    count = len(metadata_files(snapshot_root(args.snapshot)))
    print(f"{args.snapshot}: valid (tables and {count} dataset metadata files)"
          + (f", {len(warnings)} warning(s)" if warnings else ""))
    return 0
