"""A static crash detector that needs no model: flags only what the code alone makes certain.

It replays the executed cells symbolically, statement by statement, and then checks the
target cell's statements that surely run (top level, in order; not inside branches,
loop bodies, ``try`` blocks, function bodies or the short-circuited parts of an
expression). It reports a crash when such a statement

- reads a name that no executed cell (nor the target cell, earlier) defines — a
  ``NameError`` (also ``del`` of an undefined name);
- removes a label that is already gone from the same object: ``X.drop(<literal labels>)``
  (``inplace=True`` or ``X = X.drop(...)``), ``del X[<literal>]`` or ``X.pop(<literal>)``
  repeated, as when a cell that drops a column runs twice — a ``KeyError``;
- reads ``X[<literal>]`` after that key was removed from ``X`` — a ``KeyError``.

Whenever certainty is lost the detector says "no crash": a star import, ``%run``,
``exec``/``globals()`` and the like make every name possibly defined; an object passed
to a function, aliased or changed in a way the rules do not follow is no longer tracked;
a cell that does not parse (the reconstructed notebooks lost some indentation) defines
every identifier it contains; and missing execution counts mean cells ran that the task
does not show, so nothing is certain about names or labels then.

>>> task = {"executed_cells": [{"source": "import pandas as pd\\ndf = pd.read_csv('a.csv')"}],
...         "target_cell": {"source": "df.head()\\nmodel.fit(df)"}}
>>> static_detect(task)["detection"]
True
>>> print(static_detect(task)["reasoning"])
line 2: name 'model' is not defined (no executed cell defines it) → NameError
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from junobench.pysource import imported_names, python_source

NAME = "static"
#: Names that exist in every IPython kernel without being defined by a cell.
IPYTHON_NAMES = frozenset({"get_ipython", "display", "In", "Out", "exit", "quit", "_", "__",
                           "___", "_i", "_ii", "_iii", "_ih", "_oh", "_dh", "__name__",
                           "__doc__", "__builtins__", "__spec__", "__loader__", "__package__",
                           "__file__"})
_IPYTHON_NUMBERED = re.compile(r"^_i?\d+$")
_ALWAYS_DEFINED = frozenset(dir(builtins)) | IPYTHON_NAMES
#: Calls that can define any name: after them no name is certainly undefined.
_OPEN_WORLD_CALLS = frozenset({"exec", "eval", "globals", "locals", "vars", "__import__",
                               "get_ipython", "setattr"})
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
#: Methods that leave an object's labels as they are (unless called with inplace=True).
READONLY_METHODS = frozenset({
    "head", "tail", "info", "describe", "sample", "count", "sum", "mean", "median", "min",
    "max", "std", "var", "nunique", "unique", "value_counts", "isnull", "isna", "notnull",
    "notna", "corr", "cov", "copy", "to_csv", "to_numpy", "tolist", "to_list", "plot", "hist",
    "groupby", "agg", "aggregate", "keys", "items", "values", "get", "astype", "equals",
    "memory_usage", "select_dtypes", "boxplot", "round", "abs", "idxmax", "idxmin", "nlargest",
    "nsmallest", "sort_values", "sort_index", "query", "filter", "duplicated", "any", "all",
    "quantile", "cumsum", "shift", "diff", "pct_change", "rolling", "resample", "pivot_table",
    "melt", "merge", "join", "to_dict", "to_json", "to_excel", "to_parquet", "to_string",
    "dropna", "fillna", "replace", "drop_duplicates", "reset_index", "set_index", "rename",
    "transpose", "map", "apply", "applymap", "iterrows", "itertuples", "skew", "kurt",
    "mode", "clip", "between", "isin", "where", "mask", "explode", "stack", "unstack",
})
_TRY: tuple[type[ast.stmt], ...] = (ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))


@dataclass(frozen=True, slots=True)
class Finding:
    """A certain crash: where (1-based line in the target cell) and why."""

    line: int
    message: str
    exception: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message} → {self.exception}"


@dataclass
class _State:
    """What the replay knows about the notebook's namespace."""

    defined: set[str] = field(default_factory=set)
    open_world: bool = False
    #: Labels removed from an object since it was bound: name → {(axis, label)}.
    removed: dict[str, set[tuple[str, Any]]] = field(default_factory=dict)
    #: Names whose object may be changed where the rules cannot see (never tracked again).
    volatile: set[str] = field(default_factory=set)
    #: False when code we cannot see ran: no label is followed then.
    tracking: bool = True

    def is_defined(self, name: str) -> bool:
        return (self.open_world or name in self.defined or name in _ALWAYS_DEFINED
                or bool(_IPYTHON_NUMBERED.match(name)))

    def forget(self, name: str) -> None:
        self.removed.pop(name, None)

    def untrack(self, names: Iterable[str]) -> None:
        for name in names:
            self.volatile.add(name)
            self.removed.pop(name, None)

    def labels(self, name: str) -> set[tuple[str, Any]]:
        if not self.tracking or name in self.volatile:
            return set()
        return self.removed.get(name, set())


# --------------------------------------------------------------------------- entry points


def static_detect(task: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline's answer for one task, in the papers' output format."""
    found = findings(task)
    if found:
        return {"reasoning": "; ".join(map(str, found)), "detection": True}
    return {"reasoning": "no crash is certain from the code alone", "detection": False}


def findings(task: Mapping[str, Any]) -> list[Finding]:
    """Certain crashes of the task's target cell (empty when none is certain)."""
    state = _State()
    if unseen_runs(task):
        state.open_world = True
        state.tracking = False
    for cell in task.get("executed_cells") or []:
        _replay(cell.get("source") or "", state, check=False)
    return _replay(task["target_cell"].get("source") or "", state, check=True)


def unseen_runs(task: Mapping[str, Any]) -> bool:
    """True when execution counts are missing: some code ran that the task does not show.

    The kernel numbers every run 1, 2, 3…; runs without a recorded count (a cell's first
    run before its ``[reexecute]``) account for one missing number each.
    """
    runs = [*(task.get("executed_cells") or []), task["target_cell"]]
    counts = {r.get("execution_count") for r in runs} - {None}
    unrecorded = sum(1 for r in runs[:-1] if r.get("execution_count") is None)
    if not counts:
        return False
    return bool(max(counts) - len(counts) > unrecorded)


# --------------------------------------------------------------------------- parsing


def _parse(text: str) -> tuple[list[ast.stmt], bool]:
    """Statements of ``text``; when it does not parse, those of its longest parsable prefix
    (and False)."""
    try:
        return _ast(text), True
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        lines = text.splitlines()
        end = min(getattr(error, "lineno", None) or len(lines), len(lines))
        for k in range(end - 1, max(end - 60, 0), -1):
            try:
                return _ast("\n".join(lines[:k])), False
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                continue
        return [], False


def _ast(text: str) -> list[ast.stmt]:
    with warnings.catch_warnings():  # notebook code is full of invalid escape sequences
        warnings.simplefilter("ignore")
        return ast.parse(text).body


# --------------------------------------------------------------------------- replay


def _replay(source: str, state: _State, *, check: bool) -> list[Finding]:
    text, assigned, open_world = python_source(source)
    state.defined |= assigned
    state.open_world |= open_world
    if text is None:
        return []
    body, complete = _parse(text)
    out: list[Finding] = []
    for statement in body:
        out += _statement(statement, state, check=check)
    if not complete and not check:
        _replay_rest(text, _end_line(body), state)
    return out


def _end_line(body: list[ast.stmt]) -> int:
    return max((getattr(s, "end_lineno", None) or s.lineno for s in body), default=0)


def _replay_rest(text: str, start: int, state: _State) -> None:
    """The lines of an executed cell after its parsable prefix (the reconstructed notebooks
    lost nested indentation): each line is a statement that may have run; a line that is
    not a statement on its own may define or change anything it names."""
    for line in text.splitlines()[start:]:
        code = line.strip()
        if not code:
            continue
        try:
            statements = _ast(code + (" pass" if code.endswith(":") else ""))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            names = set(_IDENTIFIER.findall(code))
            state.defined |= names
            state.untrack(names)
            state.open_world |= bool(names & _OPEN_WORLD_CALLS)
            continue
        for statement in statements:
            _maybe(statement, state)


def _maybe(node: ast.AST, state: _State) -> None:
    """A statement that may or may not have run: the names it binds may be defined; labels
    it could restore are forgotten; names it passes on, or uses in code that runs later
    (function bodies, lambdas), are no longer tracked; nothing counts as removed."""
    state.defined |= _module_stores(node)
    state.open_world |= _opens_world(node)
    for deferred in ast.walk(node):
        if isinstance(deferred, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 ast.Lambda)):
            state.untrack(_mentioned(deferred))
    _untrack_escapes(node, state)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            state.forget(n.id)
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            literal = _subscript_literal(n)
            if literal is not None:
                state.removed.get(literal[0], set()).discard(("columns", literal[1]))


def _statement(node: ast.stmt, state: _State, *, check: bool) -> list[Finding]:
    """Check (when ``check``) and then apply one top-level statement that surely runs."""
    found: list[Finding] = []
    walrus = {n.target.id for n in ast.walk(node)
              if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)}
    state.defined |= walrus
    if _opens_world(node):
        state.open_world = True
    if check:
        for name, line in _sure_loads(node):
            if not state.is_defined(name):
                found.append(Finding(line, f"name {name!r} is not defined (no executed cell "
                                     "defines it)", "NameError"))
                break
        found += _label_findings(node, state)
    _apply(node, state)
    return found


def _apply(node: ast.stmt, state: _State) -> None:
    """Update the namespace after a top-level statement that surely ran."""
    compound = isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While, *_TRY, ast.With,
                                 ast.AsyncWith, ast.Match))
    if isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            state.defined |= _stored_names(item.optional_vars) if item.optional_vars else set()
        _untrack_escapes(node, state, skip_body=True)
        for child in node.body:
            _statement(child, state, check=False)
        return
    if compound:
        _maybe(node, state)  # branches, loop bodies and try blocks may or may not run
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        state.defined.add(node.name)
        state.defined |= _declared_globals(node)
        state.untrack(_mentioned(node) - {node.name})
        state.forget(node.name)
        return
    if isinstance(node, ast.Delete):
        for target in node.targets:
            if isinstance(target, ast.Name):
                state.defined.discard(target.id)
                state.forget(target.id)
            elif (literal := _subscript_literal(target)) is not None and isinstance(
                    literal[1], str):  # del items[0] succeeds again on a shorter list
                if literal[0] not in state.volatile:
                    state.removed.setdefault(literal[0], set()).add(("columns", literal[1]))
            else:
                state.untrack(_mentioned(target))
        return
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        if any(alias.name == "*" for alias in node.names):
            state.open_world = True
        for name in imported_names(node):
            state.defined.add(name)
            state.forget(name)
        return
    _track_labels(node, state)
    state.defined |= _module_stores(node)


# --------------------------------------------------------------------------- names


def _sure_loads(node: ast.AST) -> Iterator[tuple[str, int]]:
    """Names the statement surely reads before anything can stop it, in source order."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts: list[ast.AST] = [*node.decorator_list, *node.args.defaults,
                                *[d for d in node.args.kw_defaults if d is not None]]
    elif isinstance(node, ast.ClassDef):
        parts = [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]
    elif isinstance(node, (ast.If, ast.While)):
        parts = [node.test]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        parts = [node.iter]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        parts = [item.context_expr for item in node.items]
    elif isinstance(node, ast.Match):
        parts = [node.subject]
    elif isinstance(node, _TRY):
        parts = []
    elif isinstance(node, ast.AugAssign):
        parts = [node.value, node.target]
    elif isinstance(node, ast.Assign):
        parts = [node.value, *node.targets]
    elif isinstance(node, ast.AnnAssign):
        parts = [node.value] if node.value is not None else []
    elif isinstance(node, ast.Delete):
        parts = list(node.targets)
    elif isinstance(node, (ast.Expr, ast.Return, ast.Raise, ast.Assert)):
        parts = [node] if not isinstance(node, ast.Assert) else [node.test]
    else:
        parts = []
    augmented = isinstance(node, ast.AugAssign)  # ``x += 1`` reads x first
    for part in parts:
        yield from _expression_loads(part, augmented=augmented)


def _expression_loads(node: ast.AST, *, augmented: bool = False) -> Iterator[tuple[str, int]]:
    """Names an expression surely reads (see :func:`_sure_nodes`), with their lines; with
    ``augmented``, ``node`` is the target of ``x += …``, which reads ``x`` first."""
    for sub in _sure_nodes(node):
        if isinstance(sub, ast.Name) and (isinstance(sub.ctx, (ast.Load, ast.Del)) or (
                augmented and sub is node)):
            yield sub.id, sub.lineno


def _stored_names(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _module_stores(node: ast.AST) -> set[str]:
    """Names a statement may bind at module level (not inside functions, classes,
    comprehensions or lambdas), including imports and definitions in its blocks."""
    out: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            out.update(_declared_globals(n))
            return
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            out.update(t.target.id for t in ast.walk(n)
                       if isinstance(t, ast.NamedExpr) and isinstance(t.target, ast.Name))
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update(imported_names(n))
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return out


def _declared_globals(node: ast.AST) -> set[str]:
    """Names a function or class body declares ``global`` (it may bind them when called)."""
    return {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}


def _mentioned(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _opens_world(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and (
                n.func.id in _OPEN_WORLD_CALLS):
            return True
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
            return True
        if isinstance(n, ast.Name) and n.id == "__builtins__":
            return True
    return False


# --------------------------------------------------------------------------- labels


def _literal(node: ast.AST | None) -> list[Any] | None:
    """Labels written as a constant or a list of constants; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) and not (
            isinstance(node.value, bool)):
        return [node.value]
    if isinstance(node, ast.List) and node.elts and all(
            isinstance(e, ast.Constant) and isinstance(e.value, (str, int, float))
            and not isinstance(e.value, bool) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _subscript_literal(node: ast.AST) -> tuple[str, Any] | None:
    """``X['key']`` → ``("X", "key")`` (string or number key)."""
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, (str, int)) and not isinstance(node.slice.value, bool)):
        return node.value.id, node.slice.value
    return None


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


@dataclass(frozen=True)
class _Removal:
    """A call that removes labels from the object named ``target``."""

    target: str
    labels: frozenset[tuple[str, Any]]
    strict: bool  # raises when a label is missing
    line: int


def _removal(node: ast.AST) -> _Removal | None:
    """``X.drop(<literal>, ...)`` or ``X.pop(<literal>)`` (no default)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)):
        return None
    target, method = node.func.value.id, node.func.attr
    if method == "pop" and len(node.args) == 1 and not node.keywords:
        # Only string keys: list.pop(0) succeeds again on a shorter list.
        key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return _Removal(target, frozenset({("columns", key.value)}), True, node.lineno)
        return None
    if method != "drop" or any(k.arg is None for k in node.keywords):
        return None
    axis = _keyword(node, "axis")
    axis_name = "index"
    if isinstance(axis, ast.Constant) and axis.value in (1, "columns"):
        axis_name = "columns"
    elif axis is not None and not (isinstance(axis, ast.Constant) and axis.value in (0, "index")):
        return None
    labels: set[tuple[str, Any]] = set()
    if node.args:
        found = _literal(node.args[0])
        if found is None or len(node.args) > 1:
            return None
        labels |= {(axis_name, v) for v in found}
    for keyword, axis_of in (("labels", axis_name), ("columns", "columns"), ("index", "index")):
        value = _keyword(node, keyword)
        if value is not None:
            found = _literal(value)
            if found is None:
                return None
            labels |= {(axis_of, v) for v in found}
    if not labels:
        return None
    errors = _keyword(node, "errors")
    strict = errors is None or (isinstance(errors, ast.Constant) and errors.value == "raise")
    return _Removal(target, frozenset(labels), strict, node.lineno)


def _label_findings(node: ast.stmt, state: _State) -> list[Finding]:
    """KeyErrors of a top-level statement: a repeated removal, or a read of a removed key."""
    out: list[Finding] = []
    if isinstance(node, ast.Delete):
        for target in node.targets:
            literal = _subscript_literal(target)
            if literal and ("columns", literal[1]) in state.labels(literal[0]):
                out.append(Finding(target.lineno, f"del {literal[0]}[{literal[1]!r}] removes a "
                                   "key that is already removed", "KeyError"))
        return out
    roots: list[ast.AST] = []
    if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
        roots = [node.value] if node.value is not None else []
    for root in roots:
        for sub in _sure_nodes(root):
            removal = _removal(sub)
            if removal and removal.strict:
                gone = removal.labels & state.labels(removal.target)
                if gone:
                    shown = ", ".join(repr(label) for _, label in sorted(gone, key=repr))
                    out.append(Finding(removal.line, f"{removal.target} no longer has "
                                       f"{shown}: it was removed before", "KeyError"))
                    return out
            literal = _subscript_literal(sub)
            if (literal and isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Load)
                    and ("columns", literal[1]) in state.labels(literal[0])):
                out.append(Finding(sub.lineno, f"{literal[0]}[{literal[1]!r}] reads a key that "
                                   "was removed before", "KeyError"))
                return out
    return out


def _sure_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Sub-expressions that surely evaluate (skips lambdas, comprehension bodies, and the
    parts of ``and``/``or``/``x if c else y`` that may be skipped)."""
    yield node
    if isinstance(node, (ast.Lambda,)):
        return
    if isinstance(node, ast.BoolOp):
        yield from _sure_nodes(node.values[0])
        return
    if isinstance(node, ast.IfExp):
        yield from _sure_nodes(node.test)
        return
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        yield from _sure_nodes(node.generators[0].iter)
        return
    for child in ast.iter_child_nodes(node):
        yield from _sure_nodes(child)


def _track_labels(node: ast.stmt, state: _State) -> None:
    """Follow removed labels through a simple top-level statement; stop following any
    object the statement may change, or make reachable, in another way."""
    value = getattr(node, "value", None)
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    _untrack_escapes(node, state)
    removal = _removal(value) if value is not None else None
    in_place = (removal is not None and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and (value.func.attr == "pop" or _is_true(_keyword(value, "inplace"))))
    if removal is not None and in_place and removal.target not in state.volatile:
        state.removed.setdefault(removal.target, set()).update(removal.labels)
    for target in targets:
        if isinstance(target, ast.Name):
            name = target.id
            state.forget(name)
            if isinstance(node, ast.AugAssign) or isinstance(value, (ast.Name, ast.Attribute,
                                                                     ast.Subscript)):
                state.untrack([name])  # may be another name for an existing object
                continue
            state.volatile.discard(name)  # bound to a new object
            if removal is not None and not in_place and removal.target not in state.volatile:
                state.removed[name] = state.labels(removal.target) | set(removal.labels)
        elif (literal := _subscript_literal(target)) is not None:
            state.removed.get(literal[0], set()).discard(("columns", literal[1]))
        else:
            state.untrack(_mentioned(target))


#: Calls that read an object without changing it or keeping a reference to it.
_HARMLESS_CALLS = frozenset({"print", "len", "display", "type", "repr", "str", "isinstance", "id"})


def _untrack_escapes(node: ast.AST, state: _State, *, skip_body: bool = False) -> None:
    """Forget the removed labels of objects a statement may change (non-literal item
    assignment, attribute assignment, a method call that is not known to be read-only or is
    ``inplace=True``), and stop following names it passes on (call arguments, aliases,
    containers), since their object can then change unseen."""
    roots = [i.context_expr for i in node.items] if skip_body and isinstance(
        node, (ast.With, ast.AsyncWith)) else [node]
    for root in roots:
        parents = {child: parent for parent in ast.walk(root)
                   for child in ast.iter_child_nodes(parent)}
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
                _use(n, parents, state)


def _use(n: ast.Name, parents: Mapping[ast.AST, ast.AST], state: _State) -> None:
    parent = parents.get(n)
    if isinstance(parent, ast.Subscript) and parent.value is n:
        if isinstance(parent.ctx, ast.Store) and _subscript_literal(parent) is None:
            state.forget(n.id)
        return
    if isinstance(parent, ast.Attribute) and parent.value is n:
        call = parents.get(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            if parent.attr in ("drop", "pop") and _removal(call) is not None:
                return
            if parent.attr not in READONLY_METHODS or _is_true(_keyword(call, "inplace")):
                state.forget(n.id)
        elif _stores_through(parent, parents):
            state.forget(n.id)
        return
    if isinstance(parent, (ast.Delete, ast.Expr)):
        return  # ``del X`` is handled by the caller; a bare name only shows the object
    if (isinstance(parent, ast.Call) and n in parent.args and isinstance(parent.func, ast.Name)
            and parent.func.id in _HARMLESS_CALLS):
        return
    state.untrack([n.id])


def _stores_through(node: ast.AST, parents: Mapping[ast.AST, ast.AST]) -> bool:
    """True when an assignment goes through ``node`` (``X.a = v``, ``X.loc[...] = v``)."""
    current: ast.AST | None = node
    while isinstance(current, (ast.Subscript, ast.Attribute)):
        if isinstance(current.ctx, ast.Store):
            return True
        current = parents.get(current)
    return False
