"""Where each case was verified: ``benchmark/<case>/provenance.json``.

A case's provenance says whether its pair (the reproduced notebook crashes at its target
with the recorded exception, the fixed one runs) was verified, when, and where: the
Python and the versions of the libraries the case needs that the kernels ran with, the
sandbox and the environment. ``construct add-case`` and ``construct edit`` write it (a
pair added or edited with ``--no-verify`` is *not verified*), and so does a passing
``junobench verify --record`` (a failing one records the failure). A case without the
file has no recorded provenance. The records carry it in the field ``provenance``; the
card and ``croissant.json`` describe the cases from it, never claiming a verification
that is not recorded::

    {"format": "junobench-provenance/1",
     "added": {"when": "2026-01-02T10:00:00+00:00", "tool": "junobench 0.1.0 construct add-case"},
     "verification": {"status": "verified", "when": "…", "tool": "junobench 0.1.0 verify --record",
                      "python": "3.12.3", "libraries": {"pandas": "2.2.3"},
                      "sandbox": "bwrap, network off", "environment": "junobench's own environment",
                      "detail": "reproduced: crashed at …; fixed: all 5 runs succeeded"},
     "similar": [{"case": "pandas_1", "similarity": 0.93, "when": "…"}]}

>>> record_field(None)["status"]
'not recorded'
"""

from __future__ import annotations

import datetime
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench.data import layout
from junobench.errors import JunoBenchError
from junobench.render import first_names
from junobench.safety.paths import check_not_linked_out, read_regular

FORMAT = "junobench-provenance/1"
FILE = layout.PROVENANCE_FILE
VERIFIED, NOT_VERIFIED, FAILED, NOT_RECORDED = "verified", "not verified", "failed", "not recorded"
_MAX_BYTES = 1 << 20
_HINT = "see docs/construction.md (provenance); `junobench verify --record` writes it anew"


def now() -> str:
    """The current UTC time, as provenance records it."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def path_of(root: str | Path, case_id: str) -> Path:
    return layout.case_dir(root, case_id) / FILE


def read(root: str | Path, case_id: str) -> dict[str, Any] | None:
    """The case's provenance (None without the file); a link out of the snapshot, a file
    that is not a regular file, too large or not this format is a :class:`JunoBenchError`."""
    path = path_of(root, case_id)
    if not os.path.lexists(path):
        return None
    check_not_linked_out(path, root, case=case_id)
    try:
        data = json.loads(read_regular(path, limit=_MAX_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise JunoBenchError(f"the provenance cannot be read ({str(error)[:120]})", file=path,
                             case=case_id, hint=_HINT) from None
    problem = _problem(data)
    if problem:
        raise JunoBenchError(f"the provenance is malformed: {problem}", file=path, case=case_id, hint=_HINT)
    return dict(data)


def _problem(data: Any) -> str | None:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"not a {FORMAT} object"
    check = data.get("verification")
    if check is not None:
        if not isinstance(check, dict) or check.get("status") not in (VERIFIED, NOT_VERIFIED, FAILED):
            return f"'verification.status' must be one of {VERIFIED}, {NOT_VERIFIED}, {FAILED}"
        for key in ("when", "tool", "python", "sandbox", "environment", "detail"):
            if check.get(key) is not None and not isinstance(check[key], str):
                return f"'verification.{key}' must be text"
        libraries = check.get("libraries", {})
        if not (isinstance(libraries, dict) and all(isinstance(k, str) and isinstance(v, (str, type(None)))
                                                    for k, v in libraries.items())):
            return "'verification.libraries' must map names to versions"
    similar = data.get("similar", [])
    if not (isinstance(similar, list) and all(isinstance(s, dict) and isinstance(s.get("case"), str)
                                              and isinstance(s.get("similarity"), (int, float))
                                              for s in similar)):
        return "'similar' must be a list of {case, similarity}"
    added = data.get("added")
    if added is not None and not (isinstance(added, dict) and all(isinstance(v, str) for v in added.values())):
        return "'added' must be {when, tool}"
    return None


def write(folder: Path, data: Mapping[str, Any]) -> None:
    """Write provenance ``data`` into the case folder ``folder`` (atomically)."""
    from junobench.safety.atomic import write_text

    problem = _problem({"format": FORMAT, **data})
    if problem:
        raise JunoBenchError(f"the provenance is malformed: {problem}", file=folder / FILE)
    write_text(folder / FILE, json.dumps({"format": FORMAT, **data}, indent=1, ensure_ascii=False,
                                         sort_keys=True) + "\n")


def verification(status: str, *, tool: str, environment: Mapping[str, Any] | None = None,
                 requirements: Sequence[str] = (), sandbox: str | None = None, where: str | None = None,
                 detail: str | None = None, when: str | None = None) -> dict[str, Any]:
    """A ``verification`` entry: ``environment`` is what a verify report records (its
    ``python`` and ``packages``), ``requirements`` the case's pins (the libraries named)."""
    packages = (environment or {}).get("packages") or {}
    libraries = {}
    for requirement in requirements:
        name = requirement.partition("==")[0]
        found = packages.get(name) or {}
        libraries[name] = found.get("installed") if isinstance(found, dict) else None
    entry: dict[str, Any] = {"status": status, "when": when or now(), "tool": tool,
                             "python": (environment or {}).get("python"), "libraries": libraries,
                             "sandbox": sandbox, "environment": where, "detail": detail}
    if status == NOT_VERIFIED:
        for key in ("python", "sandbox", "environment"):
            entry[key] = None
        entry["libraries"] = {}
    return entry


# --------------------------------------------------------------------------- records


def record_field(data: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``provenance`` field of a case's record."""
    check = (data or {}).get("verification") or {}
    libraries = check.get("libraries") or {}
    return {
        "status": check.get("status") or NOT_RECORDED,
        "verified_at": check.get("when"),
        "python": check.get("python"),
        "libraries": [f"{name}=={version}" if version else f"{name} (not installed)"
                      for name, version in sorted(libraries.items())],
        "sandbox": check.get("sandbox"),
        "environment": check.get("environment"),
        "tool": check.get("tool"),
        "detail": check.get("detail"),
        "similar_to": [f"{s['case']} ({int(float(s['similarity']) * 100)}%)"
                       for s in (data or {}).get("similar") or []],
    }


def status_of(case: Mapping[str, Any]) -> str:
    """The provenance status of a ``cases`` record (``not recorded`` when it has none)."""
    return str(((case.get("provenance") or {}).get("status")) or NOT_RECORDED)


def summary(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the card and ``croissant.json`` say of the cases' provenance: counts by status,
    the places verified cases were verified in (Python, sandbox, environment → count), the
    cases not verified."""
    statuses = Counter(status_of(c) for c in cases)
    places: Counter[str] = Counter()
    for case in cases:
        found = case.get("provenance") or {}
        if status_of(case) == VERIFIED:
            places[f"Python {found.get('python') or '?'}, {found.get('environment') or 'environment not recorded'}"
                   f", sandbox {found.get('sandbox') or 'not recorded'}"] += 1
    unverified = sorted((c["case_id"] for c in cases if status_of(c) != VERIFIED), key=layout_order)
    return {"n": len(cases), "verified": statuses.get(VERIFIED, 0), "statuses": dict(statuses),
            "places": sorted(places.items(), key=lambda kv: (-kv[1], kv[0])), "unverified": unverified,
            "all_verified": bool(cases) and statuses.get(VERIFIED, 0) == len(cases)}


def sentence(cases: Sequence[Mapping[str, Any]]) -> str:
    """One sentence of what the provenance of ``cases`` says (for the card and Croissant)."""
    found = summary(cases)
    if not found["n"]:
        return "No case."
    parts = []
    if found["verified"]:
        where = "; ".join(f"{place} ({count})" for place, count in found["places"])
        parts.append(f"{found['verified']} of {found['n']} cases were verified by running them "
                     f"(junobench: the reproduced notebook crashes as recorded, the fixed one runs), in: {where}")
    counts = found["statuses"]
    if counts.get(NOT_VERIFIED):
        parts.append(f"{counts[NOT_VERIFIED]} case(s) were added or edited without being verified")
    if counts.get(FAILED):
        parts.append(f"{counts[FAILED]} case(s) failed their last recorded verification")
    if counts.get(NOT_RECORDED):
        parts.append(f"{counts[NOT_RECORDED]} case(s) carry no record of where they were reproduced")
    text = "; ".join(parts) + "."
    if found["unverified"]:
        text += f" Not verified: {first_names(found['unverified'], 12)}."
    return text


def layout_order(case_id: str) -> tuple[str, int, str]:
    """Sort key of case ids as listed to people: by library ignoring case, then by number."""
    library, _, number = case_id.rpartition("_")
    return (library.casefold(), int(number), case_id) if number.isdigit() else (case_id.casefold(), 0, case_id)
