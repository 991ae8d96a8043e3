"""The plotting calls in a notebook's code, found by static analysis (``ast``; nothing runs).

A :class:`CodeReader` reads a notebook's code cells in order and keeps what earlier cells
said: the imports (``import matplotlib.pyplot as plt`` makes ``plt.hist`` matplotlib's
``hist``; ``from sklearn.tree import plot_tree as pt`` makes ``pt`` sklearn's
``plot_tree``), the types of the variables that plotting calls and pandas return
(``fig, ax = plt.subplots()`` makes ``ax.scatter`` matplotlib's; ``df = pd.read_csv(…)``
makes ``df.plot.scatter`` pandas'), and the functions a cell defines that draw (a later
``plot_hist(df)`` is the calls inside ``plot_hist``). For each cell it returns the
:class:`Call`\\ s that draw a chart, the calls of a plotting library the mapping does not
know (named, never guessed), where the cell shows a figure (``plt.show()``), and the names
the evidence rules of :mod:`.kinds` read. IPython magics and shell lines are blanked first
(:func:`junobench.pysource.python_source`); a cell that is not Python parses to nothing.

>>> reader = CodeReader()
>>> _ = reader.read("import matplotlib.pyplot as plt\\nimport seaborn as sns")
>>> found = reader.read("fig, ax = plt.subplots()\\nax.hist(x)\\nsns.heatmap(m)")
>>> [(c.library, c.function, c.text) for c in found.calls]
[('matplotlib', 'Axes.hist', 'ax.hist'), ('seaborn', 'heatmap', 'sns.heatmap')]
"""

from __future__ import annotations

import ast
import keyword
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from junobench.mining.kinds import CellEvidence, ChartKinds, chart_kinds
from junobench.pysource import python_source
from junobench.safety.text import shortened

#: Characters kept of a call as written (``df.groupby(…).mean().plot.bar``).
TEXT_LIMIT = 200
#: Array-like attributes and methods of an array of axes that give axes again.
_AXES_ARRAY = frozenset({"flat", "flatten", "ravel", "T", "reshape", "squeeze"})
#: Methods of a seaborn grid that take a plotting function to draw on every facet.
_GRID_MAPS = frozenset({"map", "map_diag", "map_offdiag", "map_lower", "map_upper", "map_dataframe",
                        "plot", "plot_joint", "plot_marginals"})
#: Calls that show a figure: the figures drawn before one are that figure's.
_SHOWS = frozenset({"show"})
#: Code that may bind a name a later cell reads (an import, a definition, a loop, an
#: assignment to names): a cell without figures and without any of these is not parsed.
_BINDS = re.compile(r"\b(?:import|def|class|for|with|global)\b"
                    r"|(?:^|;)[ \t]*\(?[A-Za-z_][\w \t,()]*(?::[^=\n]*)?(?<![=!<>+\-*/%&|^@])=(?!=)",
                    re.MULTILINE)


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_NAME}(?:\.{_NAME})*"
_AS = rf"(?:[ \t]+as[ \t]+{_NAME})?"
#: A line of a cell of imports as they are usually written: ``import a.b as c, d``, ``from
#: a.b import c as d, e``, ``from a import *``; a blank or comment line; ``pass`` (a magic).
_IMPORT_LINE = re.compile(rf"(?:import[ \t]+(?P<names>{_DOTTED}{_AS}(?:[ \t]*,[ \t]*{_DOTTED}{_AS})*)"
                          rf"|from[ \t]+(?P<module>{_DOTTED})[ \t]+import[ \t]+"
                          rf"(?P<imported>\*|{_NAME}{_AS}(?:[ \t]*,[ \t]*{_NAME}{_AS})*)|pass)?[ \t]*(?:#.*)?")


def _imports_only(text: str) -> list[ast.stmt] | None:
    """The statements of a cell whose every line is a plain import (or blank, a comment, a
    magic's ``pass``): what ``ast.parse`` gives for it, without parsing; None for any other
    cell (it is parsed)."""
    if "import" not in text or not text.isascii() or "\0" in text:
        return None  # nothing imported; or text the parser may refuse (a null byte, a lone surrogate)
    body: list[ast.stmt] = []
    for line in text.split("\n"):
        match = _IMPORT_LINE.fullmatch(line)
        if match is None:
            return None
        names, module, imported = match.group("names", "module", "imported")
        if names is None and module is None:
            if line.lstrip().startswith("pass"):
                body.append(ast.Pass())
            continue
        aliases = [part.split() for part in (names or imported).split(",")]
        words = [word for alias in aliases for word in alias[::2]] + ([module] if module else [])
        if any(keyword.iskeyword(part) for word in words for part in word.split(".")):
            return None  # ``import class``: a syntax error, which ast.parse reports
        found = [ast.alias(name=alias[0], asname=alias[2] if len(alias) == 3 else None) for alias in aliases]
        body.append(ast.Import(names=found) if names is not None
                    else ast.ImportFrom(module=module, names=found, level=0))
    return body


def _may_bind(source: str) -> bool:
    """Whether :data:`_BINDS` finds anything in ``source``; the text any match holds is
    looked for first (a search for plain text is cheap, the pattern's is not)."""
    return ("=" in source or "import" in source or "def" in source or "class" in source or "for" in source
            or "with" in source or "global" in source) and _BINDS.search(source) is not None


@dataclass(frozen=True)
class Call:
    """A call that draws a chart (``kind``/``purpose`` from the mapping; both None for a
    plotting library's call the mapping does not know)."""

    library: str
    function: str
    text: str
    line: int
    kind: str | None = None
    purpose: str | None = None
    via: str | None = None  # the notebook's own function whose body made the call

    def to_row(self) -> dict[str, object]:
        return {"library": self.library, "function": self.function, "text": self.text, "line": self.line,
                "via": self.via}


@dataclass
class CellCalls:
    """What one code cell's code says: its chart calls and unknown plotting calls in source
    order, the lines of its ``show()`` calls, the evidence names, whether it parsed."""

    calls: list[Call] = field(default_factory=list)
    unknown: list[Call] = field(default_factory=list)
    shows: list[int] = field(default_factory=list)
    evidence: CellEvidence = field(default_factory=CellEvidence)
    parsed: bool = True
    imports: list[str] = field(default_factory=list)

    def segments(self) -> list[list[Call]]:
        """The chart calls split at each ``show()`` (a figure per segment, in order), empty
        segments dropped."""
        out: list[list[Call]] = [[]]
        shows = sorted(self.shows)
        for call in self.calls:
            while shows and shows[0] < call.line:
                shows.pop(0)
                out.append([])
            out[-1].append(call)
        return [segment for segment in out if segment]


#: Nodes the walk of :meth:`_Visitor.expressions` records nothing of and need not enter
#: (no call, attribute or subscript below them).
_LEAVES = frozenset({ast.Name, ast.Constant, *(kind for base in (ast.expr_context, ast.operator, ast.unaryop,
                                                                   ast.cmpop, ast.boolop)
                                                 for kind in base.__subclasses__())})
#: Fields of ``ast`` nodes that hold names, numbers or flags, never a node the walk enters
#: (an expression's ``ctx``, an import's or a ``global``'s names, a class pattern's attributes).
_PLAIN_FIELDS = frozenset({"ctx", "id", "attr", "arg", "asname", "conversion", "is_async", "kind", "level",
                           "lineno", "module", "n", "s", "simple", "tag", "type_comment", "name", "names",
                           "kwd_attrs"})
#: A node type's fields that hold nodes, lists of nodes (or None): a function giving their
#: values, made once per type.
_FIELDS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _node_fields(kind: type[ast.AST]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving the values of the fields of a node of ``kind`` that may hold nodes."""
    names = [name for name in kind._fields if name not in _PLAIN_FIELDS]
    if len(names) > 1:
        return operator.attrgetter(*names)
    one = operator.attrgetter(*names) if names else None
    return lambda node: () if one is None else (one(node),)

# A resolved expression: (dotted name, typed) where typed says the name starts with an
# object type of the mapping (``matplotlib.Axes``) rather than a module path.
Resolved = tuple[str, bool]


class CodeReader:
    """Reads a notebook's code cells in order (see the module's notes)."""

    def __init__(self, kinds: ChartKinds | None = None) -> None:
        self.kinds = kinds or chart_kinds()
        self.aliases: dict[str, str] = {}
        self.star: list[str] = []  # modules imported with ``*``
        self.types: dict[str, str] = {}
        self.functions: dict[str, list[Call]] = {}
        self.modules: dict[str, None] = {}  # top-level modules imported, in order

    def read(self, source: str, *, calls: bool = True) -> CellCalls:
        """The calls of one code cell (its imports, types and functions are kept for the next);
        with ``calls`` False, only what later cells need is read (imports, the types of the
        names it binds, the functions it defines), not its own calls: for a cell without
        figures, at a fraction of the cost."""
        result = CellCalls()
        if not calls and not _may_bind(source):
            return result  # nothing a later cell needs: not parsed
        text, _, _ = python_source(source)
        if text is None:
            result.parsed = False
            return result
        body = _imports_only(text)
        if body is None:
            try:
                body = ast.parse(text).body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                result.parsed = False
                return result
        _Visitor(self, result, calls).visit_body(body)
        return result

    # ------------------------------------------------------------------ resolving

    def resolve(self, node: ast.expr) -> Resolved | None:
        """The dotted name ``node`` stands for, through the imports and known types."""
        if isinstance(node, ast.Name):
            if node.id in self.types:
                return self.types[node.id], True
            if node.id in self.aliases:
                return self.aliases[node.id], False
            for module in self.star:
                name = f"{module}.{node.id}"
                found = self.kinds.library_of(name)
                if found is not None and (self.kinds.chart(*found) or self.kinds.decoration(*found)):
                    return name, False
            return None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            name, typed = base
            if typed and name == "matplotlib.Axes" and node.attr in _AXES_ARRAY:
                return name, True
            return f"{name}.{node.attr}", typed
        if isinstance(node, ast.Subscript):
            base = self.resolve(node.value)
            return base if base is not None and base[1] else None
        if isinstance(node, ast.Call):
            return self.returned(node)
        return None

    def returned(self, call: ast.Call) -> Resolved | None:
        """The type a call returns, when the mapping knows it (one type)."""
        found = self.resolve(call.func)
        if found is None:
            return None
        name, typed = found
        if typed and name.startswith("matplotlib.Axes.") and name.rsplit(".", 1)[1] in _AXES_ARRAY:
            return "matplotlib.Axes", True
        types = self.kinds.returned(name)
        return (types[0], True) if len(types) == 1 else None

    def bind(self, target: ast.expr, types: tuple[str, ...] | str | None) -> None:
        """Record (or forget) the type of the names ``target`` binds."""
        if isinstance(target, ast.Name):
            if isinstance(types, str):
                self.types[target.id] = types
            elif types is not None and len(types) == 1:
                self.types[target.id] = types[0]
            else:
                self.types.pop(target.id, None)
            self.aliases.pop(target.id, None)
            self.functions.pop(target.id, None)
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(types, tuple) and len(types) == len(target.elts):
                for element, kind in zip(target.elts, types, strict=True):
                    self.bind(element, kind)
            else:
                for element in target.elts:
                    self.bind(element, types if isinstance(types, str) else None)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None)


class _Visitor:
    """One pass over a cell's statements, in order: calls recorded with the types known
    at that point, then the statement's bindings applied."""

    def __init__(self, reader: CodeReader, result: CellCalls, calls: bool = True) -> None:
        self.reader = reader
        self.kinds = reader.kinds
        self.result = result
        self.calls = calls

    def visit_body(self, body: Iterable[ast.stmt]) -> None:
        for statement in body:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        reader = self.reader
        kind = type(node)
        if kind is ast.Expr:  # the most frequent statements first
            self.expressions([node])
            return
        if kind is ast.Assign:
            assign = cast(ast.Assign, node)
            self.expressions([assign])
            types = self.value_types(assign.value)
            for target in assign.targets:
                reader.bind(target, types)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            self.imports(node)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = CellCalls()
            saved = dict(reader.types)
            _Visitor(reader, inner).visit_body(node.body)
            reader.types = saved
            self.result.evidence.calls.extend(inner.evidence.calls)
            if inner.calls:
                reader.functions[node.name] = inner.calls
            else:
                reader.functions.pop(node.name, None)
            return
        if isinstance(node, ast.ClassDef):
            return
        if isinstance(node, ast.For | ast.AsyncFor):
            self.expressions([node.iter])
            self.bind_loop(node.target, node.iter)
            self.visit_body(node.body)
            self.visit_body(node.orelse)
            return
        if isinstance(node, ast.With | ast.AsyncWith):
            self.expressions([item.context_expr for item in node.items])
            self.visit_body(node.body)
            return
        if isinstance(node, ast.If | ast.While):
            self.expressions([node.test])
            self.visit_body(node.body)
            self.visit_body(node.orelse)
            return
        if isinstance(node, ast.Try):
            for part in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                self.visit_body(part)
            return
        self.expressions([node])
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            reader.bind(node.target, self.value_types(node.value))

    def value_types(self, value: ast.expr) -> tuple[str, ...] | None:
        if isinstance(value, ast.Call):
            found = self.reader.resolve(value.func)
            if found is not None:
                types = self.kinds.returned(found[0])
                if types:
                    return types
        resolved = self.reader.resolve(value)
        return (resolved[0],) if resolved is not None and resolved[1] else None

    def bind_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        """``for ax in axes.flat`` / ``zip(axes, cols)`` / ``enumerate(axes)`` give axes."""
        reader = self.reader
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
            if iterable.func.id == "enumerate" and iterable.args and isinstance(target, ast.Tuple) \
                    and len(target.elts) == 2:
                reader.bind(target.elts[0], None)
                self.bind_loop(target.elts[1], iterable.args[0])
                return
            if iterable.func.id == "zip" and isinstance(target, ast.Tuple) \
                    and len(target.elts) == len(iterable.args):
                for element, source in zip(target.elts, iterable.args, strict=True):
                    self.bind_loop(element, source)
                return
        found = reader.resolve(iterable)
        reader.bind(target, found[0] if found is not None and found[1] else None)

    def imports(self, node: ast.Import | ast.ImportFrom) -> None:
        reader = self.reader
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                reader.modules.setdefault(top, None)
                self.result.imports.append(top)
                if alias.asname:
                    reader.aliases[alias.asname] = alias.name
                else:
                    reader.aliases[top] = top
                reader.types.pop(alias.asname or top, None)
            return
        if node.level or not node.module:
            return  # a relative import: the notebook's own modules
        top = node.module.split(".")[0]
        reader.modules.setdefault(top, None)
        self.result.imports.append(top)
        for alias in node.names:
            if alias.name == "*":
                reader.star.append(node.module)
                continue
            reader.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            reader.types.pop(alias.asname or alias.name, None)

    # ------------------------------------------------------------------ calls

    def expressions(self, nodes: Iterable[ast.AST]) -> None:
        """Record every call in ``nodes`` (and the evidence names), in source order."""
        if not self.calls:
            return
        found: list[ast.Call] = []
        evidence = self.result.evidence
        leaves = _LEAVES
        stack: list[Any] = [n for n in nodes if type(n) not in leaves]
        pop, push, extend = stack.pop, stack.append, stack.extend
        # ast.walk, without its generators: this loop is most of the analysis' time. Calls,
        # attributes and subscripts (most of the nodes) are taken apart here, their children
        # pushed in the order of their fields (a keyword argument's value in its place).
        while stack:
            node = pop()
            kind = type(node)
            if kind is ast.Call:
                found.append(node)
                if type(node.func) not in leaves:
                    push(node.func)
                if node.args:
                    extend([v for v in node.args if type(v) not in leaves])
                for keyword in node.keywords:
                    if type(keyword.value) not in leaves:
                        push(keyword.value)
                continue
            if kind is ast.Attribute:
                evidence.attributes.append(node.attr)
                if type(node.value) not in leaves:
                    push(node.value)
                continue
            if kind is ast.Subscript:
                key = node.slice
                if type(key) is ast.Constant and isinstance(key.value, str):
                    evidence.keys.append(key.value)
                if type(node.value) not in leaves:
                    push(node.value)
                if type(key) not in leaves:
                    push(key)
                continue
            fields = _FIELDS.get(kind)
            if fields is None:
                fields = _FIELDS[kind] = _node_fields(kind)
            for value in fields(node):
                if type(value) is list:
                    extend([v for v in value if v is not None and type(v) not in leaves])
                elif value is not None and type(value) not in leaves:
                    push(value)
        found.sort(key=lambda c: (c.lineno, c.col_offset))
        for call in found:
            self.call(call)

    def call(self, node: ast.Call) -> None:
        reader, result = self.reader, self.result
        func = node.func
        if isinstance(func, ast.Attribute):
            result.evidence.methods.append(func.attr)
            if func.attr in _SHOWS:
                result.shows.append(node.lineno)
        if isinstance(func, ast.Name) and func.id in reader.functions and func.id not in reader.aliases:
            for inner in reader.functions[func.id]:
                result.calls.append(Call(inner.library, inner.function, inner.text, node.lineno, inner.kind,
                                         inner.purpose, via=func.id))
            return
        found = reader.resolve(func)
        if found is None:
            self.untyped_method(node)
            return
        name, typed = found
        result.evidence.calls.append(name)
        where = self.kinds.library_of(name)
        if where is None:
            return
        library, function = where
        if function == "show" or function.endswith(".show"):
            result.shows.append(node.lineno)
        chart = self.kinds.chart(library, function, _keywords(node))
        if chart is not None:
            result.calls.append(Call(library, function, _text(func), node.lineno, *chart))
        elif typed and function.rsplit(".", 1)[-1] in _GRID_MAPS:
            self.mapped(node, _text(func))
        elif not typed and self.kinds.plotting(library) and function and not self.kinds.decoration(library, function):
            result.unknown.append(Call(library, function, _text(func), node.lineno))

    def mapped(self, node: ast.Call, text: str) -> None:
        """``g.map(plt.scatter, …)``: the function a grid draws on every facet."""
        if not node.args:
            return
        found = self.reader.resolve(node.args[0])
        where = self.kinds.library_of(found[0]) if found is not None else None
        if where is None:
            return
        chart = self.kinds.chart(*where)
        if chart is not None:
            self.result.calls.append(Call(*where, f"{text}({_text(node.args[0])})", node.lineno, *chart))

    def untyped_method(self, node: ast.Call) -> None:
        """A method of an object whose type is not known: only pandas' own spellings count
        (``x.plot.scatter(…)``, the ``.plot`` accessor; ``x.plot(kind="bar")``, a keyword
        only pandas' ``plot`` takes)."""
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        if isinstance(func.value, ast.Attribute) and func.value.attr == "plot":
            function = f"DataFrame.plot.{func.attr}"
        elif func.attr == "plot" and "kind" in _keywords(node):
            function = "DataFrame.plot"
        else:
            return
        chart = self.kinds.chart("pandas", function, _keywords(node))
        if chart is not None:
            self.result.calls.append(Call("pandas", function, _text(func), node.lineno, *chart))


def _keywords(node: ast.Call) -> dict[str, str]:
    """The call's keyword arguments whose values are string constants."""
    return {k.arg: k.value.value for k in node.keywords
            if k.arg and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}


def _text(node: ast.expr) -> str:
    """An expression as written (normalised by ``ast.unparse``), at most :data:`TEXT_LIMIT` characters."""
    text = _dotted(node)
    if text is None:
        try:
            text = ast.unparse(node)
        except (ValueError, RecursionError):
            return "?"
    return shortened(text, TEXT_LIMIT)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a name and its attributes (what ``ast.unparse`` gives), None for any other."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
