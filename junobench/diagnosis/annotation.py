"""The human evaluation of diagnoses: blinded annotation sheets, the second rater's sample,
and the filled sheets read back as judgments.

A detector's answer needs a human judgment only where it detected a crash that happens
(a reproduced notebook whose voted detection is crash): the rater grades its diagnosis
against the ground-truth one as ``correct``, ``partially correct`` or ``reasoning wrong``
(or ``wrong``). Every other answer is judged by its detection alone (``correct`` or
``wrong``); the key file keeps those, so that the sheet read back gives every notebook's
judgment (:mod:`.endtoend` scores them).

The sheet is blinded: items are shuffled (seeded), each setting appears only as a code
(``S1``, ``S2`` …), and the key that maps items and codes back to settings and notebooks
is a separate JSON file for whoever scores the sheet, not for the rater. The judgment
column takes one of the four outcomes from a drop-down list.

The second rater's sample is drawn as CRANE-LLM drew it: its size for a 95% confidence
level, a 5% margin of error and p = 0.5 with the finite-population correction
(:func:`sample_size`, Yamane's n = N / (1 + N e²), the FPC-corrected Cochran size with the
95% z-score taken as 2; 222 of 501), allocated to the settings in proportion to their
diagnoses (largest remainders), drawn at random within each (seeded).

>>> sample_size(501)
222
>>> allocate({"a": 90, "b": 99, "c": 71}, 100)
{'a': 35, 'b': 38, 'c': 27}
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data.tables import drop_down, review_rows, review_sheet, save_review_sheet, sheet_text
from junobench.diagnosis.judgments import CORRECT, OUTCOMES, WRONG, Judgments, outcome
from junobench.errors import JunoBenchError
from junobench.safety.atomic import write_text

SHEET = "Judgments"
COLUMNS: tuple[str, ...] = ("item", "set", "instance", "ground-truth diagnosis",
                            "predicted diagnosis", "judgment", "comment")
DEFAULT_MARGIN = 0.05
DEFAULT_SEED = 0
KEY_FORMAT = "junobench-annotation-key/1"


def sample_size(population: int, margin: float = DEFAULT_MARGIN) -> int:
    """Diagnoses to sample from ``population`` for a 95% confidence level, ``margin``
    margin of error and p = 0.5, finite population corrected: N / (1 + N e²), rounded."""
    if population < 0 or not 0 < margin < 1:
        raise JunoBenchError(f"a sample needs a population >= 0 and a margin in (0, 1), not "
                             f"{population} and {margin}")
    return min(population, round(population / (1 + population * margin * margin)))


def allocate(strata: Mapping[str, int], total: int) -> dict[str, int]:
    """``total`` split over ``strata`` in proportion to their sizes, largest remainders
    first (ties to the earlier stratum); never more than a stratum holds."""
    size = sum(strata.values())
    if size == 0:
        return dict.fromkeys(strata, 0)
    exact = {k: total * v / size for k, v in strata.items()}
    out = {k: int(x) for k, x in exact.items()}
    order = sorted(strata, key=lambda k: (-(exact[k] - out[k]), list(strata).index(k)))
    for k in order[: total - sum(out.values())]:
        out[k] += 1
    return {k: min(v, strata[k]) for k, v in out.items()}


def ground_truth(source: str | Path | None = None, *,
                 truth_rows: Sequence[Mapping[str, Any]] | None = None,
                 revision: str | None = None) -> dict[str, dict[str, Any]]:
    """Instance → ``{"crash", "diagnosis"}``: from the rows of the ground-truth file(s)
    written by ``junobench tasks`` (:func:`~junobench.detection.tasks.read_truth`), else
    from the ``notebooks`` records of ``source``."""
    rows = truth_rows
    if rows is None:
        from junobench.data.snapshot import DEFAULT_SOURCE
        from junobench.loader import load

        dataset = load(source if source is not None else DEFAULT_SOURCE, "notebooks",
                       revision=revision)
        rows = dataset.select_columns(["instance", "crash", "diagnosis"]).to_list()
    return {str(r["instance"]): {"crash": bool(r["crash"]), "diagnosis": r.get("diagnosis")}
            for r in rows}


@dataclass(frozen=True)
class Item:
    """A diagnosis to judge: a setting's answer on a crashing notebook it got right."""

    setting: str
    instance: str
    truth: str
    predicted: str


def answers_to_judge(settings: Mapping[str, Any], truth: Mapping[str, str], *,
                     truth_rows: Sequence[Mapping[str, Any]] | None = None
                     ) -> tuple[list[Item], dict[str, dict[str, str]]]:
    """The diagnoses that need a judgment, and the judgments the detections decide.

    ``settings``: name → predictions (a path in any layout, or read predictions);
    ``truth``: reproduced notebook → its ground-truth diagnosis (every notebook the sets
    answer must be a benchmark notebook; ``truth_rows``, the rows of a ground-truth file,
    map blind task ids back). Runs are majority-voted; the diagnosis shown is the
    reasoning of the first run that voted with the majority."""
    from junobench.detection.evaluate import resolve_ids
    from junobench.detection.layouts import read_predictions
    from junobench.detection.predictions import parse_run
    from junobench.detection.votes import vote

    items: list[Item] = []
    decided: dict[str, dict[str, str]] = {}
    for name, source in settings.items():
        preds = read_predictions(source)
        decided[name] = {}
        resolved, origin = resolve_ids(preds, truth_rows)
        for instance, runs in resolved.items():
            try:
                version = vocab.split_instance(instance)[1]
            except ValueError:
                raise JunoBenchError("not a notebook of the benchmark", case=instance,
                                     file=origin.get(instance, str(preds.path)),
                                     hint="blind task ids need the ground-truth file (--truth)"
                                     ) from None
            verdicts = [parse_run(run) for run in runs]
            votes = vote([v.detection for v in verdicts])
            if not votes:
                continue  # no parsable run: no answer to judge
            crash = version == "reproduced"
            if votes[0] != crash or not crash:
                decided[name][instance] = CORRECT if votes[0] == crash else WRONG
                continue
            if instance not in truth:
                raise JunoBenchError("no ground-truth diagnosis for this crashing notebook",
                                     file=origin.get(instance, str(preds.path)),
                                     case=instance, hint="label the benchmark's diagnoses first")
            reasoning = next((v.reasoning or "" for v in verdicts if v.detection), "")
            items.append(Item(name, instance, truth[instance], reasoning))
    return items, decided


def second_rater_sample(items: Sequence[Item], *, margin: float = DEFAULT_MARGIN,
                        seed: int = DEFAULT_SEED) -> list[Item]:
    """The second rater's stratified sample of ``items`` (see the module's notes), in the
    items' order."""
    strata: dict[str, list[Item]] = {}
    for item in items:
        strata.setdefault(item.setting, []).append(item)
    shares = allocate({k: len(v) for k, v in strata.items()}, sample_size(len(items), margin))
    rng = random.Random(seed)
    chosen: set[tuple[str, str]] = set()
    for setting, members in strata.items():
        chosen.update((i.setting, i.instance) for i in rng.sample(members, shares[setting]))
    return [i for i in items if (i.setting, i.instance) in chosen]


def export_sheet(items: Sequence[Item], sheet: str | Path, key: str | Path, *,
                 decided: Mapping[str, Mapping[str, str]] | None = None,
                 seed: int = DEFAULT_SEED) -> tuple[Path, Path]:
    """Write the blinded sheet (xlsx) and its key (JSON) for ``items``; ``decided`` are the
    judgments the detections settle, kept in the key."""
    sheet, key = Path(sheet), Path(key)
    if sheet.suffix.lower() != ".xlsx" or key.resolve() == sheet.resolve():
        raise JunoBenchError("the sheet is an .xlsx file and the key another file", file=sheet)
    for path in (sheet, key):
        if path.exists() or path.is_symlink():
            raise JunoBenchError("exists already: a filled sheet or the key that reads it back "
                                 "would be lost", file=path, hint="choose a new file name")
    rng = random.Random(seed)
    names = list(dict.fromkeys(i.setting for i in items))
    codes = {name: f"S{n}" for n, name in enumerate(rng.sample(names, len(names)), start=1)}
    shuffled = list(items)
    rng.shuffle(shuffled)
    workbook, ws = review_sheet(SHEET, COLUMNS)
    for number, item in enumerate(shuffled, start=1):
        ws.append([f"D{number:04d}", codes[item.setting], item.instance,
                   sheet_text(item.truth), sheet_text(item.predicted), None, None])
    drop_down(ws, "F", '"' + ",".join(OUTCOMES) + '"', showErrorMessage=True,
              errorTitle="judgment", error="one of: " + ", ".join(OUTCOMES))
    key_data = {
        "format": KEY_FORMAT,
        "codes": {code: name for name, code in codes.items()},
        "items": {f"D{n:04d}": {"setting": i.setting, "instance": i.instance}
                  for n, i in enumerate(shuffled, start=1)},
        "decided": {k: dict(v) for k, v in (decided or {}).items()},
    }
    write_text(key, json.dumps(key_data, indent=1, ensure_ascii=False) + "\n")
    save_review_sheet(workbook, ws, sheet, (8, 6, 28, 60, 60, 18, 30))
    return sheet, key


@dataclass
class Filled:
    """A filled sheet read back: the judgments (the raters' and, with ``decided``, those
    the key keeps) and the items still without one."""

    judgments: Judgments
    unjudged: list[str]


def read_filled(sheet: str | Path, key: str | Path, *, decided: bool = True) -> Filled:
    """The judgments of a filled sheet, through its key; with ``decided``, the judgments the
    detections settled are added (every notebook of every setting, for scoring)."""
    from junobench.safety.paths import MAX_TEXT_BYTES, read_regular

    sheet, key = Path(sheet), Path(key)
    try:
        data = json.loads(read_regular(key, limit=MAX_TEXT_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise JunoBenchError(f"cannot read the key ({error})", file=key) from None
    if not isinstance(data, dict) or data.get("format") != KEY_FORMAT:
        raise JunoBenchError("not an annotation key written by junobench", file=key)
    problem = _key_problem(data)
    if problem is not None:
        raise JunoBenchError(f"a damaged annotation key: {problem}", file=key,
                             hint="pass the key written with this sheet, unedited")
    items = data.get("items") or {}
    rows = review_rows(sheet, SHEET, COLUMNS, refusal="not an annotation sheet (its header changed)",
                       hint="fill in the judgment column of the exported sheet")
    out = Judgments(path=sheet)
    unjudged: list[str] = []
    seen: set[str] = set()
    for number, row in rows:
        code = row[0]
        if code in (None, ""):
            continue
        entry = items.get(code) if isinstance(code, str) else None
        if not isinstance(code, str) or not isinstance(entry, dict) or code in seen:
            raise JunoBenchError(f"row {number}: item {code!r} is not in the key (or twice)",
                                 file=sheet, hint="pass the key written with this sheet")
        seen.add(code)
        cell = row[5]
        if cell in (None, ""):
            unjudged.append(code)
            continue
        judged = outcome(cell)
        if judged is None:
            raise JunoBenchError(f"row {number}: {cell!r} is not a judgment", file=sheet,
                                 case=str(entry.get("instance")),
                                 hint="one of: " + ", ".join(OUTCOMES))
        out.add(str(entry["setting"]), str(entry["instance"]), judged, where=f"row {number}: ")
    missing = sorted(set(items) - seen)
    if missing:
        raise JunoBenchError(f"{len(missing)} items of the key are not in the sheet "
                             f"({', '.join(missing[:5])})", file=sheet,
                             hint="keep every row of the exported sheet")
    if decided:
        for setting, judged_rows in (data.get("decided") or {}).items():
            for instance, judged in judged_rows.items():
                try:
                    out.add(setting, instance, judged, where="key: ")
                except JunoBenchError as error:  # the key's fault, not the sheet's
                    raise JunoBenchError(error.problem_.problem, file=key,
                                         case=error.problem_.case,
                                         hint=error.problem_.hint) from None
    return Filled(out, unjudged)


def _key_problem(data: Mapping[str, Any]) -> str | None:
    """What is wrong with the shape of an annotation key (``items``: code → its
    ``setting`` and ``instance`` strings; ``decided``: setting → {instance: judgment}),
    or None."""
    items, decided = data.get("items") or {}, data.get("decided") or {}
    if not isinstance(items, dict):
        return "'items' is not an object"
    for code, entry in items.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("setting"), str)
                and isinstance(entry.get("instance"), str)):
            return f"item {code!r} has no 'setting' and 'instance' strings"
    if not isinstance(decided, dict):
        return "'decided' is not an object"
    for setting, rows in decided.items():
        if not isinstance(rows, dict):
            return f"'decided' of setting {setting!r} is not an object"
    return None
