"""Verbs ``annotate``, ``agreement`` and ``judge``: the evaluation of crash diagnoses.

End-to-end scores of judged diagnoses are ``junobench evaluate --judgments FILE``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from junobench.cli.common import add_format, add_model_options, add_source, dash_values, model_options, status


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from junobench.detection.names import FORMATS
    from junobench.diagnosis.annotation import DEFAULT_MARGIN, DEFAULT_SEED
    from junobench.diagnosis.judge import DEFAULT_REPEATS

    parser = subparsers.add_parser(
        "annotate", help="blinded sheets for judging diagnoses by hand, and reading them back",
        description="The human evaluation of diagnoses: `annotate export` writes the diagnoses "
        "that need a judgment (crashes the detector got right) as a blinded xlsx sheet with "
        "the ground-truth diagnosis beside each prediction, and its key; `annotate read` turns "
        "a filled sheet back into judgments (see `evaluate --judgments`).")
    steps = parser.add_subparsers(dest="step", metavar="STEP", required=True)
    export = steps.add_parser("export", help="write a blinded annotation sheet and its key",
                              description="Write the diagnoses to judge of each PRED (one "
                              "setting each) as a blinded sheet: items shuffled, settings as "
                              "codes, a drop-down of the four outcomes; the key that maps "
                              "them back goes to a separate file. With --second-rater, only "
                              "the second rater's stratified sample (95%% confidence, 5%% "
                              "margin, p = 0.5, finite population).")
    export.add_argument("predictions", metavar="PRED", nargs="+", help="a prediction set per setting")
    dash_values(export.add_argument("--name", action="append", metavar="NAME",
                                    help="setting name of each PRED, in order (default: from "
                                    "the paths)"))
    add_source(export)
    export.add_argument("--truth", action="append", metavar="TASKS.truth.jsonl",
                        help="ground-truth file(s) written by `junobench tasks` (instead of "
                        "--source)")
    export.add_argument("--sheet", required=True, metavar="OUT.xlsx", help="sheet to write")
    export.add_argument("--key", required=True, metavar="KEY.json",
                        help="key to write (keep it from the rater)")
    export.add_argument("--second-rater", action="store_true",
                        help="only the second rater's stratified sample")
    export.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                        help=f"margin of error of the second rater's sample (default: {DEFAULT_MARGIN})")
    export.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the shuffle and the sample")
    export.set_defaults(handler=_export)
    read = steps.add_parser("read", help="read a filled sheet as judgments",
                            description="Read the judgments of a filled sheet through its key "
                            "and write them (.jsonl or .csv), with the judgments the detections "
                            "settle (fixed notebooks, missed crashes) unless --only-sheet.")
    read.add_argument("sheet", metavar="SHEET.xlsx")
    read.add_argument("--key", required=True, metavar="KEY.json")
    read.add_argument("--out", required=True, metavar="JUDGMENTS.jsonl")
    read.add_argument("--only-sheet", action="store_true",
                      help="only the sheet's judgments (for agreement between raters)")
    read.set_defaults(handler=_read)

    parser = subparsers.add_parser(
        "agreement", help="Cohen's kappa and raw agreement between two raters' judgments",
        description="Agreement between two raters' judgments of the same diagnoses, per "
        "setting and overall: FIRST and SECOND judgments files (any format `evaluate "
        "--judgments` reads), or CRANE-LLM's second-rater sheet (--second-rater).")
    parser.add_argument("raters", metavar="FILE", nargs="*", help="two judgments files")
    parser.add_argument("--second-rater", metavar="XLSX",
                        help="CRANE-LLM's evaluation_human_LLMjudge_validation.xlsx")
    add_format(parser, choices=FORMATS)
    parser.set_defaults(handler=_agreement)

    parser = subparsers.add_parser(
        "judge", help="an LLM judge of diagnoses, and its agreement with the humans",
        description="Run CRANE-LLM's LLM-judge protocol (every run judged against the "
        "ground truth, REPEATS passes, majority per pass then over passes) on PRED through an "
        "OpenAI-compatible endpoint, appending labels to --out (resumable); or, with "
        "--against, compare judge judgments (--labels files, or CRANE-LLM's judged folders "
        "with --folders) with human judgments per model, beside --published statistics.")
    parser.add_argument("predictions", metavar="PRED", nargs="?", help="the runs to judge")
    dash_values(parser.add_argument("--setting",
                                    help="setting name of PRED (how the judgments name it)"))
    parser.add_argument("--out", metavar="LABELS.jsonl", help="judge labels to append to")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                        help=f"judge passes (default: {DEFAULT_REPEATS})")
    parser.add_argument("--reverse", action="store_true",
                        help="the reversed protocol: the prediction shown before the ground truth")
    parser.add_argument("--judgments-out", metavar="FILE",
                        help="also write the reduced judgments (.jsonl or .csv)")
    add_source(parser)
    parser.add_argument("--truth", action="append", metavar="TASKS.truth.jsonl")
    parser.add_argument("--labels", action="append", metavar="LABELS.jsonl",
                        help="judge labels written by `junobench judge` (with --against)")
    parser.add_argument("--folders", metavar="DIR",
                        help="CRANE-LLM's llms/llms_outputs or sas/sas_outputs (with --against)")
    parser.add_argument("--passes", action="append", metavar="FOLDER",
                        help="with --folders: the pass folders to read (default: every "
                        "results_parsed[_<k>])")
    parser.add_argument("--against", metavar="JUDGMENTS",
                        help="human judgments to compare the judge with (e.g. CRANE-LLM's "
                        "results_summary.xlsx)")
    parser.add_argument("--published", metavar="XLSX",
                        help="published judge statistics to show beside (llm_judge_statistics.xlsx)")
    add_model_options(parser, json_mode=False)
    add_format(parser, choices=FORMATS)
    parser.set_defaults(handler=_judge)


def _export(args: argparse.Namespace) -> int:
    from junobench.detection.compare import unique_names
    from junobench.diagnosis.annotation import (
        answers_to_judge,
        export_sheet,
        second_rater_sample,
    )
    from junobench.errors import JunoBenchError

    names = args.name or unique_names(args.predictions)
    if len(names) != len(args.predictions) or len(set(names)) != len(names):
        raise JunoBenchError("give one distinct --name per PRED")
    truth, rows = _ground_truth(args)
    items, decided = answers_to_judge(dict(zip(names, args.predictions, strict=True)),
                                      {i: t["diagnosis"] for i, t in truth.items()
                                       if t["crash"] and t["diagnosis"]}, truth_rows=rows)
    chosen = second_rater_sample(items, margin=args.margin, seed=args.seed) if args.second_rater else items
    sheet, key = export_sheet(chosen, args.sheet, args.key, seed=args.seed,
                              decided=None if args.second_rater else decided)
    status(f"wrote {len(chosen)} diagnoses to judge"
           + (f" (the second rater's sample of {len(items)})" if args.second_rater else "")
           + f" to {sheet}; key in {key} (keep it from the rater)")
    return 0


def _ground_truth(args: argparse.Namespace
                  ) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]] | None]:
    """Instance → crash and diagnosis, from the --truth files (with their rows: they map
    blind task ids back) or else from --source."""
    from junobench.detection.tasks import read_truth
    from junobench.diagnosis.annotation import ground_truth

    rows = read_truth(args.truth) if args.truth else None
    return ground_truth(args.source, truth_rows=rows, revision=args.revision), rows


def _read(args: argparse.Namespace) -> int:
    from junobench.diagnosis.annotation import read_filled
    from junobench.diagnosis.judgments import write_judgments

    filled = read_filled(args.sheet, args.key, decided=not args.only_sheet)
    path = write_judgments(args.out, filled.judgments)
    total = sum(len(v) for v in filled.judgments.settings.values())
    status(f"wrote {total} judgments to {path}")
    if filled.unjudged:
        print(f"warning: {len(filled.unjudged)} items have no judgment yet: "
              + ", ".join(filled.unjudged[:10]), file=sys.stderr)
    return 0


def _agreement(args: argparse.Namespace) -> int:
    from junobench.diagnosis.agreement import rater_agreement, read_second_rater, render_agreement
    from junobench.diagnosis.judgments import read_judgments
    from junobench.errors import JunoBenchError

    if args.second_rater:
        if args.raters:
            raise JunoBenchError("pass two judgments files or --second-rater, not both")
        first, second = read_second_rater(args.second_rater)
    elif len(args.raters) == 2:
        first, second = (read_judgments(Path(p)) for p in args.raters)
    else:
        raise JunoBenchError("agreement needs two judgments files (or --second-rater XLSX)")
    print(render_agreement(rater_agreement(first, second), args.format), end="")
    return 0


def _judge(args: argparse.Namespace) -> int:
    from junobench.errors import JunoBenchError

    if args.against:
        return _judge_against(args)
    from junobench.diagnosis.judge import judge, judgments_from
    from junobench.diagnosis.judgments import write_judgments

    for option in ("predictions", "setting", "endpoint", "model", "out"):
        if not getattr(args, option):
            raise JunoBenchError(f"running the judge needs {'PRED' if option == 'predictions' else '--' + option}",
                                 hint="or compare judgments with the humans: --against FILE")
    truth, rows = _ground_truth(args)
    summary = judge(args.predictions, truth, args.out, setting=args.setting,
                    truth_rows=rows, repeats=args.repeats, reverse=args.reverse,
                    log=lambda line: print(line, file=sys.stderr), **model_options(args))
    status(f"judged {len(summary.written)} notebook passes into {summary.out}"
           + (f"; {len(summary.resumed)} were already there" if summary.resumed else ""))
    if summary.rejected:
        status(f"skipped {len(summary.rejected)} the server rejected: "
               + ", ".join(sorted(summary.rejected)[:10]))
    if args.judgments_out:
        path = write_judgments(args.judgments_out, judgments_from(args.out))
        status(f"judgments in {path}")
    if summary.failed:
        print(f"failed {len(summary.failed)}: " + ", ".join(sorted(summary.failed)[:10]),
              file=sys.stderr)
        print("run the same command again to retry them", file=sys.stderr)
        return 1
    return 0


def _judge_against(args: argparse.Namespace) -> int:
    import json

    from junobench.diagnosis.judge import (
        judge_agreement,
        judgments_from,
        read_judge_statistics,
        read_judged_folders,
        side_by_side,
    )
    from junobench.diagnosis.judgments import read_judgments
    from junobench.errors import JunoBenchError
    from junobench.render import render

    if bool(args.labels) == bool(args.folders):
        raise JunoBenchError("compare either --labels files or --folders with --against")
    judged = (judgments_from(args.labels) if args.labels
              else read_judged_folders(args.folders, passes=args.passes))
    rows = judge_agreement(judged, read_judgments(args.against))
    published = read_judge_statistics(args.published) if args.published else None
    table: list[dict[str, Any]] = side_by_side(rows, published)
    if args.format == "json":
        print(json.dumps(table, indent=2))
    else:
        print(render(table, args.format), end="")
    return 0
