"""Agreement between two raters' judgments: Cohen's κ and raw agreement.

Two raters (two people, or a person and the LLM judge) judge the same diagnoses with the
four outcomes of :mod:`.judgments`; their agreement is computed over the items both
judged. κ = (p_o − p_e) / (1 − p_e), with p_o the share of items on which they agree and
p_e the agreement expected by chance from each rater's own outcome shares (Cohen, 1960;
the same value as scikit-learn's ``cohen_kappa_score``).

CRANE-LLM's second-rater sheet (``evaluation_human_LLMjudge_validation.xlsx``, sheet
``Human_Validation``) lists, per setting, the diagnoses the second rater re-judged: the
first rater's judgment, the LLM judge's, and the second rater's (``validator``);
:func:`read_second_rater` reads the two raters' columns from it.

>>> round(cohen_kappa(["correct", "wrong", "correct", "wrong"], ["correct", "wrong", "wrong", "wrong"]), 3)
0.5
>>> cohen_kappa(["correct"] * 3, ["correct"] * 3)
1.0
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from junobench.diagnosis.judgments import Judgments, outcome
from junobench.errors import JunoBenchError

#: The sheet of CRANE-LLM's validation workbook with the second rater's judgments.
SECOND_RATER_SHEET = "Human_Validation"


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Cohen's κ of two raters' labels on the same items (1.0 when both give every item
    the same single label: they agree and chance cannot be told apart)."""
    if len(a) != len(b):
        raise ValueError("both raters must judge the same items")
    if not a:
        raise ValueError("no items to compare")
    n = len(a)
    observed: float = sum(map(operator.eq, a, b)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class Agreement:
    """Two raters on ``n`` shared items."""

    n: int
    agreed: int
    kappa: float

    @property
    def raw(self) -> float:
        return self.agreed / self.n

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "agreed": self.agreed, "agreement": self.raw, "kappa": self.kappa}


def agreement(a: Sequence[str], b: Sequence[str]) -> Agreement:
    """κ and raw agreement of two equally long label sequences."""
    kappa = cohen_kappa(a, b)  # (checks that both judge the same items)
    return Agreement(len(a), sum(map(operator.eq, a, b)), kappa)


def paired_labels(first: Judgments, second: Judgments, *,
                  settings: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """The two raters' labels on every (setting, notebook) both judged, pooled over
    ``settings`` (default: the settings both have)."""
    names = list(settings) if settings else [s for s in first.settings if s in second.settings]
    if not names:
        raise JunoBenchError("the two raters share no setting", file=second.path,
                             hint="settings of the first: " + ", ".join(first.settings))
    a: list[str] = []
    b: list[str] = []
    for name in names:
        one, two = first.settings.get(name, {}), second.settings.get(name, {})
        for instance in one:
            if instance in two:
                a.append(one[instance])
                b.append(two[instance])
    if not a:
        raise JunoBenchError("the two raters judged no diagnosis in common", file=second.path)
    return a, b


def rater_agreement(first: Judgments, second: Judgments, *,
                    settings: Sequence[str] | None = None) -> dict[str, Agreement]:
    """Agreement per setting both raters judged, and over all of them (key ``all``)."""
    names = list(settings) if settings else [s for s in first.settings if s in second.settings]
    out: dict[str, Agreement] = {}
    for name in names:
        try:
            out[name] = agreement(*paired_labels(first, second, settings=[name]))
        except JunoBenchError:
            continue
    out["all"] = agreement(*paired_labels(first, second, settings=names))
    return out


def read_second_rater(path: str | Path) -> tuple[Judgments, Judgments]:
    """The first and the second rater's judgments of the diagnoses in CRANE-LLM's
    ``Human_Validation`` sheet: blocks headed ``<setting>_human``, ``<setting>_pred``,
    ``<setting>_validator``, one row per notebook (the instance in the first column)."""
    from junobench.data.tables import named_sheet

    path = Path(path)
    values = named_sheet(path, SECOND_RATER_SHEET,
                         hint="pass CRANE-LLM's evaluation_human_LLMjudge_validation.xlsx")
    first, second = Judgments(path=path), Judgments(path=path)
    setting: str | None = None
    for number, row in enumerate(values, start=1):
        name, human, _, validator = (_text_cell(row, column) for column in range(4))
        if not name and human.strip().endswith("_human"):
            setting = human.strip().removesuffix("_human")
            continue
        if setting is None or not name:
            continue
        instance = name.strip()
        a, b = outcome(human), outcome(validator)
        if a is None or b is None:
            raise JunoBenchError(f"row {number}: {human!r} / {validator!r} is not a pair of "
                                 "judgments", file=path, case=instance)
        first.add(setting, instance, a, where=f"row {number}: ")
        second.add(setting, instance, b, where=f"row {number}: ")
    if not first.settings:
        raise JunoBenchError("no rater blocks (<setting>_human, …_pred, …_validator) found",
                             file=path)
    return first, second


def _text_cell(row: Sequence[Any], column: int) -> str:
    """A row's text in ``column`` ("" for a number, an empty cell or a short row)."""
    value = row[column] if column < len(row) else None
    return value if isinstance(value, str) else ""


def render_agreement(results: Mapping[str, Agreement], fmt: str = "table") -> str:
    """Per setting and overall: items, agreed, raw agreement and κ."""
    import json

    from junobench.render import render

    if fmt == "json":
        return json.dumps({k: v.to_dict() for k, v in results.items()}, indent=2) + "\n"
    rows = [{"setting": name, "n": r.n, "agreed": r.agreed, "agreement": r.raw, "kappa": r.kappa}
            for name, r in results.items()]
    return render(rows, fmt)
