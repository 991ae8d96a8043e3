"""The names a target cell reads from the kernel: pure, from the cell's text (no kernel).

A name is *read from the kernel* when the cell loads it at a point where the cell itself
has not yet surely bound it: ``df.groupby('a')`` reads ``df``; ``model = Ridge()`` followed
by ``model.fit(X, y)`` reads ``Ridge``, ``X`` and ``y`` but not ``model``. Attribute bases
and call receivers are names like any other (``df`` in ``df.head()``); the attributes
accessed directly on each name are kept too (``head``). The analysis errs on the side of
reading: a binding inside a branch, a loop body or a ``try`` block does not hide a later
use, and free names inside functions, lambdas and comprehensions are reads. Summarising
a name that turns out not to be read costs little; missing one loses information.

IPython syntax (magics, shell lines) is turned into Python first. A cell that still does
not parse is read token by token: every identifier not after a dot is a possible read.

>>> found = target_names("model = Ridge(alpha=1.0)\\nmodel.fit(X_train, y_train)\\nprint(df.shape)")
>>> found.names
('Ridge', 'X_train', 'y_train', 'print', 'df')
>>> found.attributes['df']
('shape',)
>>> sorted(found.bound)
['model']
"""

from __future__ import annotations

import ast
import io
import keyword
import tokenize
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from junobench.pysource import imported_names, python_source

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRY = tuple(t for t in (getattr(ast, "Try", None), getattr(ast, "TryStar", None)) if t)


@dataclass(frozen=True)
class TargetNames:
    """What a cell reads: ``names`` in order of first read, ``attributes`` accessed directly
    on each of them (in order, without repeats), ``bound`` every name the cell may bind
    anywhere (so a name it reads and also binds is not necessarily undefined when absent),
    and whether the cell ``parsed`` (False: names come from its tokens)."""

    names: tuple[str, ...]
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    bound: frozenset[str] = frozenset()
    parsed: bool = True


def target_names(source: str) -> TargetNames:
    """The names ``source`` (a code cell, IPython syntax allowed) reads from the kernel."""
    python, assigned, _ = python_source(source)
    if python is None:  # a cell magic such as %%bash: no Python names
        return TargetNames((), {}, frozenset(assigned))
    try:
        with warnings.catch_warnings():  # notebook code is full of invalid escape sequences
            warnings.simplefilter("ignore")
            tree = ast.parse(python)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _from_tokens(python, assigned)
    reader = _Reader()
    reader.block(tree.body, set())
    bound = frozenset(_all_bindings(tree)) | frozenset(assigned)
    names = tuple(n for n in reader.reads if n not in assigned)
    attributes = {n: tuple(a) for n, a in reader.attributes.items() if n in names and a}
    return TargetNames(names, attributes, bound)


class _Reader:
    """Walks statements in order, keeping what is surely bound so far in each scope."""

    def __init__(self) -> None:
        self.reads: dict[str, None] = {}
        self.attributes: dict[str, dict[str, None]] = {}

    # -- statements -------------------------------------------------------------------

    def block(self, body: Iterable[ast.stmt], bound: set[str]) -> None:
        """Statements run in order: later ones see what earlier ones surely bound."""
        for statement in body:
            self.statement(statement, bound)

    def statement(self, node: ast.stmt, bound: set[str]) -> None:
        """What one statement reads, and what it binds for those after it."""
        _STATEMENTS.get(type(node), _Reader.expressions)(self, node, bound)

    def definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef, bound: set[str]) -> None:
        for expr in (*node.decorator_list, *_defaults(node.args), *_annotations(node)):
            self.expr(expr, bound)
        self.function(node.args, node.body, bound)
        bound.add(node.name)

    def class_definition(self, node: ast.ClassDef, bound: set[str]) -> None:
        for expr in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.expr(expr, bound)
        self.block(node.body, set(bound))
        bound.add(node.name)

    def assignment(self, node: ast.Assign, bound: set[str]) -> None:
        self.expr(node.value, bound)
        for target in node.targets:
            self.target(target, bound)

    def augmented_assignment(self, node: ast.AugAssign, bound: set[str]) -> None:
        self.expr(node.value, bound)
        if isinstance(node.target, ast.Name):  # ``x += 1`` reads x
            self.read(node.target.id, bound)
        else:
            self.target(node.target, bound)

    def annotated_assignment(self, node: ast.AnnAssign, bound: set[str]) -> None:
        if node.value is not None:
            self.expr(node.value, bound)
            self.target(node.target, bound)
        elif not isinstance(node.target, ast.Name):
            self.target(node.target, bound)

    def import_(self, node: ast.Import | ast.ImportFrom, bound: set[str]) -> None:
        bound.update(imported_names(node))

    def loop(self, node: ast.For | ast.AsyncFor, bound: set[str]) -> None:
        self.expr(node.iter, bound)
        inner = set(bound)
        self.target(node.target, inner)
        self.block(node.body, inner)
        self.block(node.orelse, set(bound))

    def branch(self, node: ast.While | ast.If, bound: set[str]) -> None:
        self.expr(node.test, bound)
        self.block(node.body, set(bound))
        self.block(node.orelse, set(bound))

    def with_(self, node: ast.With | ast.AsyncWith, bound: set[str]) -> None:
        for item in node.items:
            self.expr(item.context_expr, bound)
            if item.optional_vars is not None:
                self.target(item.optional_vars, bound)
        self.block(node.body, bound)

    def try_(self, node: Any, bound: set[str]) -> None:
        self.block(node.body, set(bound))
        for handler in node.handlers:
            if handler.type is not None:
                self.expr(handler.type, bound)
            inner = set(bound)
            if handler.name:
                inner.add(handler.name)
            self.block(handler.body, inner)
        self.block(node.orelse, set(bound))
        self.block(node.finalbody, set(bound))

    def match(self, node: ast.Match, bound: set[str]) -> None:
        self.expr(node.subject, bound)
        for case in node.cases:
            inner = set(bound) | _pattern_names(case.pattern)
            for expr in _pattern_values(case.pattern):
                self.expr(expr, bound)
            if case.guard is not None:
                self.expr(case.guard, inner)
            self.block(case.body, inner)

    def delete(self, node: ast.Delete, bound: set[str]) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):  # ``del x`` needs x
                self.read(target.id, bound)
                bound.discard(target.id)
            else:
                self.target(target, bound)

    def expressions(self, node: ast.stmt, bound: set[str]) -> None:
        """Expr, Return, Raise, Assert, Global, Pass, …: their expressions, in order."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, bound)

    def target(self, node: ast.expr, bound: set[str]) -> None:
        """An assignment target: names are bound; ``a[i]`` and ``a.b`` read ``a`` (and ``i``)."""
        if isinstance(node, ast.Name):
            bound.add(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                self.target(element, bound)
        elif isinstance(node, ast.Starred):
            self.target(node.value, bound)
        else:
            self.expr(node, bound)

    def function(self, args: ast.arguments, body: list[ast.stmt] | ast.expr, bound: set[str]) -> None:
        """A function or lambda body: its parameters and locals hide outer names; its
        other names are read (from the kernel, when the function is called)."""
        statements: list[ast.stmt] = body if isinstance(body, list) else [ast.Expr(body)]
        local = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        declared = {n for s in statements for node in ast.walk(s)
                    if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
        local |= _local_bindings(statements) - declared
        self.block(statements, set(bound) | local)

    # -- expressions ------------------------------------------------------------------

    def expr(self, node: ast.AST, bound: set[str]) -> None:
        """Loads of an expression in evaluation order (near enough)."""
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self.read(node.id, bound)
            return
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            name = node.value.id
            self.read(name, bound)
            if name not in bound:
                self.attributes.setdefault(name, {})[node.attr] = None
            return
        if isinstance(node, ast.NamedExpr):
            self.expr(node.value, bound)
            bound.add(node.target.id)
            return
        if isinstance(node, ast.Lambda):
            for default in _defaults(node.args):
                self.expr(default, bound)
            self.function(node.args, node.body, bound)
            return
        if isinstance(node, _COMPREHENSIONS):
            self.comprehension(node, bound)
            return
        for child in ast.iter_child_nodes(node):
            self.expr(child, bound)

    def comprehension(self, node: ast.AST, bound: set[str]) -> None:
        generators = node.generators  # type: ignore[attr-defined]
        self.expr(generators[0].iter, bound)  # evaluated in the enclosing scope
        inner = set(bound)
        for number, generator in enumerate(generators):
            if number:
                self.expr(generator.iter, inner)
            self.target(generator.target, inner)
            for condition in generator.ifs:
                self.expr(condition, inner)
        if isinstance(node, ast.DictComp):
            self.expr(node.key, inner)
            self.expr(node.value, inner)
        else:
            self.expr(node.elt, inner)  # type: ignore[attr-defined]
        # a walrus inside a comprehension binds in the enclosing scope
        bound.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))

    def read(self, name: str, bound: set[str]) -> None:
        if name not in bound:
            self.reads.setdefault(name, None)



#: Statement type → how :class:`_Reader` reads it (anything else: its expressions).
_STATEMENTS: dict[type[ast.stmt], Callable[[_Reader, Any, set[str]], None]] = {
    **dict.fromkeys(_FUNCTIONS, _Reader.definition),
    ast.ClassDef: _Reader.class_definition,
    ast.Assign: _Reader.assignment,
    ast.AugAssign: _Reader.augmented_assignment,
    ast.AnnAssign: _Reader.annotated_assignment,
    ast.Import: _Reader.import_, ast.ImportFrom: _Reader.import_,
    ast.For: _Reader.loop, ast.AsyncFor: _Reader.loop,
    ast.While: _Reader.branch, ast.If: _Reader.branch,
    ast.With: _Reader.with_, ast.AsyncWith: _Reader.with_,
    **dict.fromkeys(_TRY, _Reader.try_),
    ast.Match: _Reader.match,
    ast.Delete: _Reader.delete,
}


def _defaults(args: ast.arguments) -> list[ast.expr]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def _annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs,
             *(a for a in (args.vararg, args.kwarg) if a is not None)]
    out = [a.annotation for a in every if a.annotation is not None]
    return [*out, node.returns] if node.returns is not None else out


def _local_bindings(statements: list[ast.stmt]) -> set[str]:
    """Names a function body binds in its own scope (not in nested functions' scopes)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            out.add(node.name)
            return
        if isinstance(node, (ast.Lambda, *_COMPREHENSIONS)):
            out.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(imported_names(node))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.NamedExpr):
            out.add(node.target.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in statements:
        visit(statement)
    out |= {n for s in statements for n in _pattern_names_in(s)}
    return out


def _all_bindings(tree: ast.AST) -> set[str]:
    """Every name bound anywhere in the cell, in any scope."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(imported_names(node))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
    return out | _pattern_names_in(tree)


def _pattern_names(pattern: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
    return out


def _pattern_names_in(tree: ast.AST) -> set[str]:
    return {n for node in ast.walk(tree) if isinstance(node, ast.match_case)
            for n in _pattern_names(node.pattern)}


def _pattern_values(pattern: ast.AST) -> list[ast.expr]:
    """Expressions a pattern evaluates: value patterns (``case Color.RED``) and class names."""
    out: list[ast.expr] = []
    for node in ast.walk(pattern):
        if isinstance(node, ast.MatchValue):
            out.append(node.value)
        elif isinstance(node, ast.MatchClass):
            out.append(node.cls)
    return out


def _from_tokens(python: str, assigned: set[str]) -> TargetNames:
    """Identifiers of a cell that does not parse: each one not after a dot may be read."""
    names: dict[str, None] = {}
    attributes: dict[str, dict[str, None]] = {}
    previous: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(python).readline):
            if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                              tokenize.DEDENT):
                continue
            if (token.type == tokenize.NAME and token.string.isidentifier()
                    and not keyword.iskeyword(token.string)):
                after_dot = previous and previous[-1].string == "."
                if after_dot and len(previous) >= 2 and previous[-2].string in names:
                    attributes.setdefault(previous[-2].string, {})[token.string] = None
                elif not after_dot and token.string not in assigned:
                    names.setdefault(token.string, None)
            previous = [*previous[-1:], token]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return TargetNames(tuple(names), {n: tuple(a) for n, a in attributes.items()},
                       frozenset(assigned), parsed=False)
