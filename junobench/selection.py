"""Which cases an environment is made for: the requirement set of selected cases.

:func:`select` reads a snapshot's records (their ``requirements`` field) and its
environment, and gives the :class:`~junobench.envs.create.Selection` that
:func:`~junobench.envs.create.create_environment` installs and
:func:`~junobench.envs.dockerfile.write_context` writes a container for. It sits above
both ``data`` (records) and ``envs`` (environments), so neither imports the other's
upper half.

>>> chosen = select("sample", ["pandas_1"])
>>> chosen.cases, any(r.startswith("pandas==") for r in chosen.requirements)
(['pandas_1'], True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench.data.build import prepare
from junobench.data.snapshot import DEFAULT_SOURCE, resolve
from junobench.envs.create import Selection, kernel_requirements
from junobench.envs.environment import packaged, snapshot_environment
from junobench.envs.pins import parse_pins
from junobench.errors import JunoBenchError
from junobench.loader import load


def select(source: str | Path | None, case_ids: Sequence[str] | None = None, *,
           revision: str | None = None, whole: bool = False,
           filters: Mapping[str, str | Iterable[str]] | None = None) -> Selection:
    """The requirement set of ``case_ids`` (or the cases matching ``filters``, or every case)
    of ``source`` (None: the default source); with ``whole``, every pin of the snapshot's
    environment (of the packaged default environment when no source is given: nothing is
    read or fetched)."""
    if whole and (case_ids or filters):
        raise JunoBenchError("--all makes the whole environment: give no cases or filters with it")
    root = None if whole and source is None else resolve(source or DEFAULT_SOURCE, revision=revision)
    env = packaged() if root is None else snapshot_environment(root)
    kernel = kernel_requirements(env)
    if whole:
        pins = [f"{name}=={version}" for name, version in env.requirements.items()]
        return Selection(env, sorted({*pins, *kernel}), whole=True)
    assert root is not None
    cases = _cases(root, case_ids, revision, filters)
    _, report = prepare(root, ("cases",), skip_invalid=True)
    wanted = {c["case_id"] for c in cases}
    _check_requirements(root, cases)
    requirements = sorted({r for c in cases for r in c["requirements"]} | set(kernel))
    unpinned = {c: names for c, names in report.unpinned.items() if c in wanted}
    return Selection(env, requirements, [c["case_id"] for c in cases], unpinned)


def _cases(root: Path, case_ids: Sequence[str] | None, revision: str | None,
           filters: Mapping[str, str | Iterable[str]] | None) -> list[dict[str, Any]]:
    criteria: dict[str, Any] = dict(filters or {})
    records = load(root, "cases", revision=revision, skip_invalid=True, **criteria)
    rows: list[dict[str, Any]] = records.select_columns(["case_id", "requirements"]).to_list()
    if case_ids:
        by_id = {r["case_id"]: r for r in rows}
        unknown = [c for c in case_ids if c not in by_id]
        if unknown:
            import difflib

            close = difflib.get_close_matches(unknown[0], list(by_id), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else "list cases with `junobench ls`"
            raise JunoBenchError(f"no case {', '.join(map(repr, unknown))} in this snapshot"
                                 + (" matching the filters" if filters else ""), file=root,
                                 case=unknown[0], hint=hint)
        rows = [by_id[c] for c in dict.fromkeys(case_ids)]
    if not rows:
        raise JunoBenchError("no cases selected", file=root, hint="check the case ids and filters")
    return rows


def _check_requirements(root: Path, cases: Iterable[Mapping[str, Any]]) -> None:
    """Each case's ``requirements`` (data, when the source is an export) must be one
    ``name==version`` pin each: they reach the installer and the Dockerfile."""
    for case in cases:
        for line in case["requirements"] or []:
            try:
                ok = isinstance(line, str) and "\n" not in line and "\r" not in line \
                    and len(parse_pins(line)) == 1
            except JunoBenchError:
                ok = False
            if not ok:
                raise JunoBenchError(f"requirement {str(line)[:80]!r} is not a pin (name==version)",
                                     file=root, case=str(case["case_id"]),
                                     hint="a case's requirements are pins from its environment")
