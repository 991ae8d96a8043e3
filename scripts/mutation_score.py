"""Mutation score: how many small bugs planted in a module its tests catch.

Each mutant changes one thing in one module: an arithmetic operator (``+`` ↔ ``-``,
``*`` ↔ ``/``, ``//`` → ``/``, ``%`` → ``*``), a comparison (``<`` ↔ ``<=``, ``>`` ↔
``>=``, ``==`` ↔ ``!=``, ``in`` ↔ ``not in``, ``is`` ↔ ``is not``), a boolean operator
(``and`` ↔ ``or``), a ``not`` dropped, or a constant (a number n → n + 1, 0.5 → 1.0,
``True`` ↔ ``False``). Annotations, docstrings and other strings are left
alone, and so is a line marked ``# pragma: no mutate`` (a change no test can see, such as
a search bound that only saves time; the line says why). The mutated module is written
into a private copy of the project and the test files run against it in a subprocess,
one file after another (fast ones first, each with ``-x``, under a time limit): a mutant
is *killed* when a test fails (or the run exceeds the limit: counted as killed and
listed apart), else it *survives*. The tests must pass on the unchanged module first.

Targets (``--group``): ``estimator`` (the library-cause estimator), ``metrics`` (the
crash-detection metrics: ``metrics.py``, ``uncertainty.py``, ``compare.py``),
``diagnosis`` (the ``junobench.diagnosis`` modules), ``croissant`` (the Croissant
metadata of an export), ``sandbox`` (the sandbox's policy and command lines) and
``changes`` (the diff between two versions of the benchmark), or any
module with ``--target FILE --tests TEST...``. With ``--sample N`` a seeded random N of
each target's mutants run (all of them otherwise), so a long target can be scored in
minutes; the score is then that of the sample. Prints each group's score and lists
every surviving mutant (file, line, the change); exits 1 when a score is below
``--threshold`` (default 0.9).

    python scripts/mutation_score.py [--group estimator|metrics|diagnosis|croissant|sandbox|changes ...]
        [--sample N] [--seed S] [--timeout SECONDS] [--jobs N] [--lines FIRST-LAST]

Not part of the test suite (it runs the suite's files hundreds of times); one test runs
it on a tiny module.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from reference import reference_dir

REPO = Path(__file__).resolve().parent.parent

#: What each group mutates and the tests that should catch it (fastest first).
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "estimator": (
        ("junobench/construct/library_cause.py",),
        # (its unit tests, which run the CLI and subprocesses over the reference tables,
        # take minutes a mutant; the rules and the pinned answers are what catch bugs)
        ("tests/test_construct_library_cause_rules.py",
         "tests/test_construct_library_cause_answers.py"),
    ),
    "metrics": (
        ("junobench/detection/metrics.py", "junobench/detection/uncertainty.py",
         "junobench/detection/compare.py"),
        ("tests/test_detection_metrics.py", "tests/test_detection_compare.py",
         "tests/test_evaluate_scoring.py", "tests/test_evaluate_uncertainty.py"),
    ),
    "diagnosis": (
        ("junobench/diagnosis/judgments.py", "junobench/diagnosis/endtoend.py",
         "junobench/diagnosis/agreement.py", "junobench/diagnosis/annotation.py",
         "junobench/diagnosis/judge.py", "junobench/diagnosis/inspect_judge.py"),
        ("tests/test_jsonl.py", "tests/test_diagnosis_units.py", "tests/test_diagnosis_input.py",
         "tests/test_diagnosis_scoring.py", "tests/test_diagnosis_annotation.py", "tests/test_diagnosis_judge.py"),
    ),
    "croissant": (("junobench/hub/croissant.py",), ("tests/test_croissant_fields.py", "tests/test_croissant.py")),
    # (the sandbox's kernels are tested in tests/test_containment.py, minutes a mutant:
    # its policy, command lines and what a process run in it sees are what catch bugs)
    "sandbox": (("junobench/envs/sandbox.py",), ("tests/test_sandbox_policy.py", "tests/test_sandbox.py")),
    "changes": (("junobench/hub/changes.py",),
                ("tests/test_changes_units.py", "tests/test_identity.py", "tests/test_diff.py")),
}
#: Modules scored only above a line (the rest is another concern, tested elsewhere): the
#: library-cause module's table reading and scoring of labelled tables, below the
#: estimator, is tested by tests/test_construct_library_cause.py through the CLI.
ENDS: dict[str, str] = {
    "junobench/construct/library_cause.py": "# " + "-" * 75 + " tables",
}
#: A line carrying this comment is not mutated: for a change no test can see (a search
#: bound that only saves time), the comment saying why.
PRAGMA = "# pragma: no mutate"
#: What a private copy of this project holds (enough to run its tests).
PROJECT_FILES = ("junobench", "tests", "scripts", "data_cards", "docs", "conftest.py", "pyproject.toml")

_BINARY: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"), ast.Mod: ("%", "*"),
}
_COMPARE: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
}


@dataclass(frozen=True)
class Mutant:
    """One change: bytes ``start:end`` of ``path`` replaced by ``new``."""

    path: str
    line: int
    start: int
    end: int
    old: str
    new: str

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.old!r} -> {self.new!r}"

    def apply(self, source: bytes) -> bytes:
        return source[:self.start] + self.new.encode() + source[self.end:]


@dataclass
class Score:
    """Mutants of one group and what became of them."""

    name: str
    mutants: int = 0
    killed: int = 0
    timeouts: list[Mutant] = field(default_factory=list)
    survivors: list[Mutant] = field(default_factory=list)
    available: int = 0

    @property
    def ratio(self) -> float:
        return self.killed / self.mutants if self.mutants else 1.0


# --------------------------------------------------------------------------- mutants


def mutants(path: str, source: bytes) -> list[Mutant]:
    """Every mutant of one module's source (``path`` as it is named in the output)."""
    tree = ast.parse(source)
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:  # ast columns are UTF-8 byte offsets
        return starts[line - 1] + column

    skipped = _skipped_nodes(tree)
    found: list[Mutant] = []

    def between(node: ast.AST, left: ast.expr, right: ast.expr, old: str, new: str) -> None:
        low, high = offset(left.end_lineno or 0, left.end_col_offset or 0), offset(
            right.lineno, right.col_offset)
        gap = source[low:high]
        at = _token(gap, old)
        if at >= 0:
            found.append(Mutant(path, getattr(node, "lineno", 0), low + at, low + at + len(old),
                                old, new))

    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            old, new = _BINARY[type(node.op)]
            between(node, node.left, node.right, old, new)
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BINARY:
            old, new = _BINARY[type(node.op)]
            between(node, node.target, node.value, old + "=", new + "=")
        elif isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if type(op) in _COMPARE:
                    old, new = _COMPARE[type(op)]
                    between(node, left, right, old, new)
                left = right
        elif isinstance(node, ast.BoolOp):
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            between(node, node.values[0], node.values[1], old, new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start = offset(node.lineno, node.col_offset)  # the keyword, then a space or "("
            found.append(Mutant(path, node.lineno, start, start + 3, "not", ""))
        elif isinstance(node, ast.Constant):
            new = _constant(node.value)
            if new is not None:
                start = offset(node.lineno, node.col_offset)
                end = offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
                found.append(Mutant(path, node.lineno, start, end, source[start:end].decode(), new))
    lines = source.splitlines()
    exempt = {number for number, line in enumerate(lines, start=1) if PRAGMA.encode() in line}
    if path in ENDS:
        end = next((n for n, line in enumerate(lines, start=1)
                    if line.decode().startswith(ENDS[path])), len(lines) + 1)
        exempt.update(range(end, len(lines) + 1))
    return sorted((m for m in found if m.line not in exempt), key=lambda m: (m.start, m.new))


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes never mutated: annotations, docstrings, ``TYPE_CHECKING`` blocks."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip(node.returns)
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                        node.args.vararg, node.args.kwarg):
                if arg is not None:
                    skip(arg.annotation)
        elif isinstance(node, ast.AnnAssign):
            skip(node.annotation)
        elif isinstance(node, ast.Compare):  # "x is None": the is / is not swap covers it
            skipped.update(id(c) for op, c in zip(node.ops, node.comparators, strict=True)
                           if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(c, ast.Constant))
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            skip(node)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            skip(node.body[0])
    return skipped


def _token(gap: bytes, token: str) -> int:
    """Where operator ``token`` is in the text between two operands (brackets, line breaks
    and comments may surround it), as a byte offset into ``gap``, or -1."""
    position = 0
    for line in gap.splitlines(keepends=True):
        code = line.split(b"#", 1)[0].decode()
        index = _word(code, token) if token[0].isalpha() else code.find(token)
        if index >= 0:
            return position + len(code[:index].encode())
        position += len(line)
    return -1


def _word(code: str, word: str) -> int:
    """Where ``word`` (possibly two words) stands alone in ``code``, or -1."""
    start = 0
    while (index := code.find(word, start)) >= 0:
        before = code[index - 1] if index else " "
        after = code[index + len(word):index + len(word) + 1] or " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return index
        start = index + 1
    return -1


def _constant(value: object) -> str | None:
    if isinstance(value, bool):
        return "False" if value else "True"
    if isinstance(value, int):
        return str(value + 1)
    if isinstance(value, float):
        return repr(value + 1.0) if value != 0.5 else "1.0"
    return None  # (None is left alone: None -> 0 swaps one falsy default for another)


# --------------------------------------------------------------------------- running


class Sandbox:
    """A private copy of a project in which one module at a time is replaced."""

    def __init__(self, root: Path, files: Sequence[str]) -> None:
        self.root = root
        self.dir = Path(tempfile.mkdtemp(prefix="mutation-"))
        self.output = ""  # the last run's pytest output
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
        for name in files:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, self.dir / name, ignore=ignore)
            elif source.exists():
                shutil.copy2(source, self.dir / name)

    def run(self, tests: Sequence[str], timeout: float, env: dict[str, str]) -> str:
        """``passed``, ``failed`` or ``timeout``: each test file in turn, stopping at the
        first that fails."""
        for test in tests:
            command = [sys.executable, "-m", "pytest", "-x", "-q", "--no-header", "-p",
                       "no:cacheprovider", "-o", "addopts=", test]
            try:
                result = subprocess.run(command, cwd=self.dir, env=env, timeout=timeout,
                                        capture_output=True, text=True, check=False)
            except subprocess.TimeoutExpired:
                return "timeout"
            self.output = result.stdout + result.stderr
            if result.returncode != 0:
                return "failed"
        return "passed"

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def score(name: str, targets: Sequence[str], tests: Sequence[str], *, root: Path = REPO,
          files: Sequence[str] = PROJECT_FILES, sample: int | None = None, seed: int = 0,
          timeout: float = 600.0, jobs: int = 1, lines: tuple[int, int] | None = None,
          log: bool = True) -> Score:
    """Run the mutants of ``targets`` (paths under ``root``) against ``tests`` (only those
    on ``lines``, first to last, when given)."""
    result = Score(name)
    boxes = [Sandbox(root, files) for _ in range(max(1, jobs))]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    env.pop("PYTHONPATH", None)  # the copy is imported from its own folder, nothing else
    env.pop("PYTEST_ADDOPTS", None)  # the caller's options (plugins, -n) are not the copy's
    # The copy is elsewhere: its tests read the reference data where this checkout's do,
    # and fail without it (a test skipped for want of it would let every mutant survive).
    env.setdefault("JUNOBENCH_REFERENCE", str(reference_dir()))
    env["JUNOBENCH_REQUIRE_REFERENCE"] = "1"
    try:
        baseline = boxes[0].run(tests, timeout, env)
        if baseline != "passed":
            tail = "\n".join(boxes[0].output.splitlines()[-20:])
            raise SystemExit(f"{name}: the tests do not pass on the unchanged code ({baseline})\n{tail}")
        chosen: list[Mutant] = []
        for target in targets:
            every = mutants(target, (root / target).read_bytes())
            if lines is not None:
                every = [m for m in every if lines[0] <= m.line <= lines[1]]
            result.available += len(every)
            if sample is not None and sample < len(every):
                every = sorted(random.Random(f"{seed}:{target}").sample(every, sample),
                               key=lambda m: m.start)
            chosen += every
        result.mutants = len(chosen)
        free = list(boxes)

        def one(mutant: Mutant) -> tuple[Mutant, str]:
            box = free.pop()
            try:
                path = box.dir / mutant.path
                original = path.read_bytes()
                path.write_bytes(mutant.apply(original))
                try:
                    return mutant, box.run(tests, timeout, env)
                finally:
                    path.write_bytes(original)
            finally:
                free.append(box)

        started = time.monotonic()
        with ThreadPoolExecutor(len(boxes)) as pool:
            for done, (mutant, outcome) in enumerate(pool.map(one, chosen), start=1):
                if outcome == "passed":
                    result.survivors.append(mutant)
                else:
                    result.killed += 1
                    if outcome == "timeout":
                        result.timeouts.append(mutant)
                if log:
                    print(f"  [{name} {done}/{len(chosen)} {time.monotonic() - started:.0f}s] "
                          f"{'survived' if outcome == 'passed' else outcome}: {mutant.describe()}",
                          file=sys.stderr, flush=True)
    finally:
        for box in boxes:
            box.close()
    return result


def report(result: Score) -> str:
    lines = [f"{result.name}: {result.killed}/{result.mutants} mutants killed "
             f"({100 * result.ratio:.1f}%)"
             + (f", a sample of {result.available}" if result.available > result.mutants else "")]
    if result.timeouts:
        lines.append(f"  killed by the time limit: {len(result.timeouts)}")
        lines += [f"    {m.describe()}" for m in result.timeouts]
    lines.append(f"  survivors: {len(result.survivors)}")
    lines += [f"    {m.describe()}" for m in result.survivors]
    return "\n".join(lines)


def _line_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        return int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a line range: {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group", action="append", choices=sorted(GROUPS),
                        help="a group to score (repeatable; default: all)")
    parser.add_argument("--target", action="append", default=[], metavar="FILE",
                        help="a module to mutate instead of a group (path under the project)")
    parser.add_argument("--tests", nargs="+", default=[], metavar="TEST",
                        help="test files for --target, fastest first")
    parser.add_argument("--sample", type=int, help="mutants per module, drawn at random")
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    parser.add_argument("--lines", type=_line_range, metavar="FIRST-LAST",
                        help="only the mutants on these lines (to recheck survivors)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one test file may take on a mutant (default 600)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--threshold", type=float, default=0.9,
                        help="the least score that passes (default 0.9)")
    parser.add_argument("--root", type=Path, default=REPO, help=argparse.SUPPRESS)
    parser.add_argument("--copy", nargs="+", default=list(PROJECT_FILES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.target:
        if not args.tests:
            parser.error("--target needs --tests")
        runs = {"target": (tuple(args.target), tuple(args.tests))}
    else:
        runs = {name: GROUPS[name] for name in (args.group or sorted(GROUPS))}
    results = [score(name, targets, tests, root=args.root, files=args.copy, sample=args.sample,
                     seed=args.seed, timeout=args.timeout, jobs=args.jobs, lines=args.lines)
               for name, (targets, tests) in runs.items()]
    print("\n".join(report(r) for r in results))
    return 0 if all(r.ratio >= args.threshold for r in results) else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the private copies are removed
    sys.exit(main())
