"""Run a new case's pair before it joins a snapshot: the reproduced notebook must crash at
its target with the recorded exception, the fixed one must run.

The staged case folder is verified as ``junobench verify`` verifies a case: its spec
(:func:`junobench.verify.spec.case_spec`), each notebook replayed in a fresh kernel in a
temporary copy of the folder (the kernel start path of verify, with its sandbox), kernels
in the interpreter of ``env`` (a folder made by ``junobench env create``) or in
junobench's own, and judged by :func:`junobench.verify.judge.judge`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data import layout
from junobench.data.tables import DescRow
from junobench.errors import JunoBenchError

#: Hint of a refusal.
_HINT = ("nothing was added; fix the notebooks (or run it in the case's pinned environment, "
         "--env DIR), or add it unverified with --no-verify (recorded in its provenance)")


def check_pair(root: Path, case_id: str, fields: Mapping[str, Any],
               datasets: Sequence[Mapping[str, Any]] = (), *, env: str | Path | None = None,
               timeout: float | None = None, snapshot: Path | None = None,
               tool: str = "construct add-case") -> tuple[str, dict[str, Any]]:
    """Replay the case ``case_id`` staged under ``root`` (``fields``: its table row, record
    field names) and judge it; a one-line account when both notebooks behave, with the
    case's provenance ``verification`` entry (:mod:`junobench.data.provenance`: the Python,
    the libraries it needs as installed, the sandbox), else a :class:`JunoBenchError`
    naming what went wrong, and the pins of ``snapshot``'s environment the kernels'
    interpreter does not meet."""
    from junobench.verify import DEFAULT_TIMEOUT, runner_for, verify_specs
    from junobench.verify.report import PASSED
    from junobench.verify.runner import require_run_extra
    from junobench.verify.spec import case_spec

    require_run_extra()
    spec = case_spec(root, DescRow(case_id, 0, dict(fields), [dict(d) for d in datasets]))
    if spec.problem is not None:
        raise JunoBenchError(f"the pair cannot be run: {spec.problem}", case=case_id, hint=_HINT)
    if spec.data_absent:
        raise JunoBenchError("the pair cannot be run: files its dataset metadata lists are "
                             "not in data/", case=case_id,
                             hint="attach them with --data NAME=PATH, or --no-verify")
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    runner = runner_for("local", jobs=2, timeout=limit, env=env)
    result = verify_specs([spec], timeout=limit, progress=False, executor=runner)[case_id]
    if result.status != PASSED:
        wrong = [f"{version}: {verdict.reason}" for version, verdict in
                 (("reproduced", result.reproduced), ("fixed", result.fixed)) if not verdict.ok]
        if result.infrastructure or not wrong:
            wrong = [f"{result.status}: {result.reproduced.reason}; {result.fixed.reason}"]
        unmet = _unmet_pins(runner.target, snapshot or root, spec)
        raise JunoBenchError("the pair does not behave as a case must: " + "; ".join(wrong)
                             + (f" (the kernels' environment has {'; '.join(unmet[:4])})"
                                if unmet else ""), case=case_id, hint=_HINT)
    from junobench.construct.provenance import tool as tool_name
    from junobench.data import provenance
    from junobench.envs.check import kernel_environment
    from junobench.envs.environment import snapshot_environment
    from junobench.envs.kernel import own_kernel

    where = "its pinned environment" if env is not None else "junobench's own environment"
    detail = f"reproduced: {result.reproduced.reason}; fixed: {result.fixed.reason}"
    found = kernel_environment(runner.target or own_kernel(), snapshot_environment(snapshot or root))
    entry = provenance.verification(provenance.VERIFIED, tool=tool_name(tool.removeprefix("construct ")),
                                    environment=found.to_json(spec.requirements), requirements=spec.requirements,
                                    sandbox=result.sandbox or runner.sandbox.describe(),
                                    where=found.describe() if env is not None else where, detail=detail)
    return f"verified in {where}: {detail}", entry


def pair_verification(staging: Path, case_id: str, row: Mapping[str, Any], datasets: Sequence[Mapping[str, Any]],
                      *, step: str, verify: bool, env: str | Path | None, timeout: float | None, snapshot: Path,
                      progress: Callable[[str], None]) -> tuple[str, dict[str, Any]]:
    """How the editing ``step`` (``add-case``, ``edit``) checked the pair of the case staged
    under ``staging`` (``row``: its table row; ``datasets``: its metadata), with the case's
    provenance ``verification`` entry: :func:`check_pair` with ``verify``, else recorded as
    not verified (``--no-verify``)."""
    from junobench.construct.provenance import tool
    from junobench.data import provenance
    from junobench.data.tables import DESC_COLUMNS

    done, again = ("edited", " again") if step == "edit" else ("added", "")
    if not verify:
        return "not verified (--no-verify)", provenance.verification(
            provenance.NOT_VERIFIED, tool=tool(step), detail=f"{done} with --no-verify")
    progress(f"running the pair of {case_id}{again} (reproduced, then fixed)")
    fields = {DESC_COLUMNS.get(k, k): v for k, v in row.items()}
    return check_pair(staging, case_id, fields,
                      [{"title": d["title"], "url": d["url"], "license": d["license"]} for d in datasets],
                      env=env, timeout=timeout, snapshot=snapshot, tool=f"construct {step}")


def _unmet_pins(target: Any, snapshot: Path, spec: Any) -> list[str]:
    """The pins of the case's imports in the snapshot's environment that ``target``'s
    interpreter (None: junobench's) does not meet; empty when that cannot be told."""
    from junobench.data.notebook import read_notebook
    from junobench.envs.check import kernel_environment
    from junobench.envs.environment import snapshot_environment
    from junobench.envs.kernel import own_kernel
    from junobench.envs.requirements import local_modules, requirements_of

    try:
        environment = snapshot_environment(snapshot)
        sources = [cell.source for version in vocab.EVALUATED_VERSIONS for cell in
                   read_notebook(spec.folder / layout.notebook_name(spec.case_id, version))[0].code_cells]
        needs = requirements_of(sources, environment, local=local_modules(spec.folder))
        return kernel_environment(target or own_kernel(), environment).mismatches(needs.requirements)
    except JunoBenchError:
        return []
