"""A case is the same case across versions by its eid, or by its code when it has none: the
diff of any sequence of removals, additions, renumberings and edits names exactly the cases
added, removed, renamed and changed."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from junobench.hub.changes import compare, match_cases

WORDS = [f"{a}{b}" for a in ("read", "fit", "plot", "merge", "drop", "scale", "split", "train", "load", "sum")
         for b in ("_csv", "_rows", "_cols", "_model", "_data", "_axis", "_table", "_grid", "_mean", "_all")]


def program(rng: random.Random, lines: int = 12) -> list[str]:
    """A notebook's code cells: lines no other case is likely to share."""
    cells = []
    for _ in range(3):
        body = [f"x{k} = pd.{rng.choice(WORDS)}(x{k - 1}, {rng.randrange(1000)})" for k in range(1, lines // 3)]
        cells.append("import pandas as pd\n" + "\n".join(body))
    return cells


def notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": c, "outputs": [], "metadata": {}} for c in cells]})


@dataclass
class Case:
    key: int                      # the truth: which case this is
    case_id: str
    eid: str | None
    code: dict[str, list[str]]
    root_cause: str = "API misuse"
    diagnosis: str = "The call gets an argument it does not take."
    edited: bool = False

    def record(self) -> dict[str, object]:
        return {"case_id": self.case_id, "eid": self.eid, "root_cause": self.root_cause,
                "diagnosis": self.diagnosis, **{v: notebook(c) for v, c in self.code.items()}}


@dataclass
class Snapshot:
    cases: list[Case] = field(default_factory=list)
    next_key: int = 0

    def add(self, rng: random.Random, library: str, with_eid: bool) -> None:
        numbers = [int(c.case_id.rpartition("_")[2]) for c in self.cases if c.case_id.startswith(library + "_")]
        code = {v: program(rng) for v in ("original", "reproduced", "fixed")}
        self.cases.append(Case(self.next_key, f"{library}_{max(numbers, default=0) + 1}",
                               f"eid-{self.next_key}" if with_eid else None, code))
        self.next_key += 1

    def renumber(self) -> None:
        for library in ("pandas", "torch"):
            mine = sorted((c for c in self.cases if c.case_id.startswith(library + "_")),
                          key=lambda c: int(c.case_id.rpartition("_")[2]))
            for number, case in enumerate(mine, start=1):
                case.case_id = f"{library}_{number}"


def operate(snapshot: Snapshot, rng: random.Random, op: str) -> None:
    if op == "remove" and snapshot.cases:
        snapshot.cases.remove(rng.choice(snapshot.cases))
    elif op in ("add", "add-eid"):
        snapshot.add(rng, rng.choice(["pandas", "torch"]), op == "add-eid")
    elif op == "renumber":
        snapshot.renumber()
    elif op.startswith("edit") and snapshot.cases:
        case = rng.choice(snapshot.cases)
        case.edited = True
        if op == "edit-label":
            case.root_cause += " (relabelled)"
        elif op == "edit-diagnosis":
            case.diagnosis += " It is read again later."
        else:  # one line of one notebook
            version = rng.choice(["original", "reproduced", "fixed"])
            cells = list(case.code[version])
            cells[1] = cells[1] + "\nextra = pd.concat_rows(x1, 7)"
            case.code = {**case.code, version: cells}


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6), st.lists(st.sampled_from(
    ["remove", "add", "add-eid", "renumber", "edit-label", "edit-diagnosis", "edit-code"]), min_size=1, max_size=6),
    st.booleans())
def test_the_diff_of_any_sequence_of_edits_names_exactly_what_happened(seed: int, size: int, ops: list[str],
                                                                        eids: bool) -> None:
    rng = random.Random(seed)
    before = Snapshot()
    for _ in range(size):
        before.add(rng, rng.choice(["pandas", "torch"]), eids and rng.random() < 0.7)
    after = Snapshot([replace(c, code=dict(c.code)) for c in before.cases], before.next_key)
    for op in ops:
        operate(after, rng, op)

    d = compare([c.record() for c in before.cases], [c.record() for c in after.cases])
    old = {c.key: c for c in before.cases}
    new = {c.key: c for c in after.cases}
    assert sorted(c["case_id"] for c in d.added) == sorted(new[k].case_id for k in new.keys() - old.keys())
    assert sorted(c["case_id"] for c in d.removed) == sorted(old[k].case_id for k in old.keys() - new.keys())
    assert sorted((c.old_id, c.case_id) for c in d.renamed) == sorted(
        (old[k].case_id, new[k].case_id) for k in old.keys() & new.keys() if old[k].case_id != new[k].case_id)
    assert sorted(c.case_id for c in d.changed) == sorted(
        new[k].case_id for k in old.keys() & new.keys() if new[k].edited)


def test_the_reported_scenarios() -> None:
    """remove pandas_2 then add a case without an eid: it takes the id pandas_2 but is another
    case; remove pandas_2 then renumber: pandas_3 is renamed, not changed."""
    rng = random.Random(7)
    snapshot = Snapshot()
    for _ in range(3):
        snapshot.add(rng, "pandas", True)
    records = [c.record() for c in snapshot.cases]
    removed = [r for r in records if r["case_id"] != "pandas_2"]
    fresh = Snapshot([], 10)
    fresh.add(rng, "pandas", False)
    reused = [*removed, {**fresh.cases[0].record(), "case_id": "pandas_2"}]
    d = compare(records, reused)
    assert [c["case_id"] for c in d.added] == ["pandas_2"] and d.added[0]["eid"] is None
    assert [(c["case_id"], c["eid"]) for c in d.removed] == [("pandas_2", "eid-1")]
    assert d.changes == [] and d.summary().startswith("1 added, 1 removed, 0 renamed, 0 changed")

    renumbered = [records[0], {**records[2], "case_id": "pandas_2"}]
    d = compare(records, renumbered)
    assert [c["case_id"] for c in d.removed] == ["pandas_2"]
    assert [(c.old_id, c.case_id) for c in d.renamed] == [("pandas_3", "pandas_2")] and d.changed == []
    # without eids, the same holds by the code
    plain = [{**r, "eid": None} for r in records]
    d = compare(plain, [plain[0], {**plain[2], "case_id": "pandas_2"}])
    assert [c["case_id"] for c in d.removed] == ["pandas_2"]
    assert [(c.old_id, c.case_id) for c in d.renamed] == [("pandas_3", "pandas_2")]


def test_two_different_eids_are_two_cases_whatever_the_code() -> None:
    rng = random.Random(3)
    code = notebook(program(rng))
    a = {"case_id": "torch_1", "eid": "one", "reproduced": code}
    b = {"case_id": "torch_1", "eid": "two", "reproduced": code}
    assert match_cases([a], [b]) == []
    assert match_cases([a], [{**b, "eid": None}]) == [(0, 0)]
