"""Near-duplicate notebooks: a similarity of normalised code.

Two notebooks are compared on their code cells after a normalisation that erases what a
copy changes without changing the program:

- comments, blank lines, spacing and line breaks, and where cells begin and end (the code
  is parsed with :mod:`ast` and written back by :func:`ast.unparse`; a cell that does not
  parse, such as Python 2 code, is parsed statement by statement from its unindented
  lines, and a statement that does not parse is split into words and symbols, its
  comments cut, so that merging a cell that does not parse with one that does changes
  nothing);
- string literals (each becomes ``''``), the way a string is formatted (an f-string,
  ``"…".format(…)`` and ``"…" % …`` all read as ``''.format(…)`` of the same values) and
  IPython's ``%magic`` / ``!shell`` lines;
- identifiers renamed consistently: every name the notebook binds (variables, functions,
  classes, parameters) becomes ``v0``, ``v1``, … in the order it first appears; a name
  bound by an import becomes what it imports (``pd`` → ``pandas``), so that
  ``import pandas as pd`` and ``import pandas as pandas`` read alike; built-in names,
  attribute names (``.fit``) and keyword-argument names (``axis=``) are kept;
- the order of imports: the import statements leave the code and are listed, sorted, at
  its start.

The similarity of two notebooks is the Jaccard index of the sets of their
:data:`SHINGLE`-token runs (1.0: the same normalised code). Two cases are as similar as
their most similar pair of same-version notebooks (original, reproduced, fixed).
:data:`THRESHOLD` is where a case counts as a near-duplicate: ``construct add-case``
refuses it, ``validate`` reports the pair. Across the 111 published cases the highest
similarity of two distinct cases is 0.29 (the fixed notebooks of ``pandas_6`` and
``pandas_9``), far below it; a copy edited as above scores 1.0, one with its attributes
renamed too 0.86 at least (``scripts/benchmark_similarity.py`` prints both, and the
time taken).

>>> a = fingerprint(["import pandas as pd\\ndf = pd.read_csv('a.csv')  # load\\ndf.head()"])
>>> b = fingerprint(["import pandas as pd\\n\\ndata = pd.read_csv(\\"b.csv\\")\\ndata.head()"])
>>> similarity(a, b)
1.0
"""

from __future__ import annotations

import ast
import builtins
import codeop
import keyword
import re
import warnings
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Tokens per shingle (a run of consecutive normalised tokens).
SHINGLE = 5
#: Similarity from which two cases are near-duplicates (see the module docstring).
THRESHOLD = 0.7
#: Notebook versions compared, in the order a tie is named.
VERSIONS: tuple[str, ...] = ("reproduced", "fixed", "original")

_BUILTINS = frozenset(dir(builtins))
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\S")
_SHELL = re.compile(r"^\s*[%!]")


@dataclass(frozen=True)
class Similar:
    """Two cases whose notebooks of ``version`` are ``similarity`` alike (0 to 1)."""

    case: str
    other: str
    similarity: float
    version: str

    def describe(self) -> str:
        return f"{self.other} ({self.version} notebooks {percent(self.similarity)} similar)"


def percent(value: float) -> str:
    """``0.934`` → ``'93%'`` (rounded down, so that 99.6% is not shown as 100%)."""
    return f"{int(value * 100)}%"


# --------------------------------------------------------------------------- normalising


class _Renamer(ast.NodeTransformer):
    """Names to canonical ones (see the module docstring); strings to ``''``."""

    def __init__(self, names: dict[str, str], imports: list[str]) -> None:
        self.names = names
        self.imports = imports
        self.count = 0

    def name(self, name: str) -> str:
        if name in self.names:
            return self.names[name]
        if name in _BUILTINS:
            return name
        new = self.names[name] = f"v{self.count}"
        self.count += 1
        return new

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = alias.asname or alias.name.partition(".")[0]
            self.names[bound] = alias.name if alias.asname else bound
            self.imports.append(f"import {alias.name}")
        return None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                self.names[alias.asname or alias.name] = alias.name
            self.imports.append(f"from {module} import {alias.name}")
        return None

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.name(node.arg)
        node.annotation = None
        return node

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        node.name = self.name(node.name)
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_Global(self, node: ast.Global) -> ast.AST:
        node.names = [self.name(n) for n in node.names]
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        node.names = [self.name(n) for n in node.names]
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, (str, bytes)):
            node.value = ""
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        values = [part.value for part in node.values if isinstance(part, ast.FormattedValue)]
        formatted: ast.AST = self.visit(_format_call(values, []))
        return formatted

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(
                node.left.value, str):  # "…" % (a, b): printf-style formatting
            values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            formatted: ast.AST = self.visit(_format_call(values, []))
            return formatted
        self.generic_visit(node)
        return node


def _format_call(args: list[ast.expr], keywords: list[ast.keyword]) -> ast.Call:
    """``''.format(*args, **keywords)``: how every formatted string reads."""
    return ast.Call(ast.Attribute(ast.Constant(""), "format", ast.Load()), args, keywords)


def normalised_tokens(sources: Iterable[str]) -> list[str]:
    """The tokens of a notebook's code cells (``sources``, in order), normalised as the
    module docstring says: the sorted imports first, then the code."""
    names: dict[str, str] = {}
    imports: list[str] = []
    renamer = _Renamer(names, imports)
    body: list[str] = []
    with warnings.catch_warnings():  # invalid escapes and such in the notebook's code
        warnings.simplefilter("ignore")
        for source in sources:
            lines = [line for line in str(source).splitlines() if not _SHELL.match(line)]
            text = "\n".join(lines)
            tokens = _parsed_tokens(text, renamer)
            if tokens is None:  # statement by statement
                for chunk in _statements(lines):
                    found = _parsed_tokens(chunk, renamer)
                    body += found if found is not None else _fallback_tokens(chunk, renamer)
            else:
                body += tokens
    head = [token for statement in sorted(set(imports)) for token in _TOKEN.findall(statement)]
    return head + body


def _parsed_tokens(text: str, renamer: _Renamer) -> list[str] | None:
    """The normalised tokens of ``text`` when it parses, else None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    try:
        # (a docstring is written back as """""": it reads as the empty string anywhere else)
        return _TOKEN.findall(ast.unparse(renamer.visit(tree)).replace('""""""', "''"))
    except (RecursionError, ValueError):
        return None


#: Unindented lines that continue the statement before them.
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b|[)\]}]")


def _statements(lines: Sequence[str]) -> list[str]:
    """Code that does not parse as a whole, cut before each unindented line that starts a
    statement (the statement before it complete or invalid: an open bracket or string
    carries on)."""
    chunks: list[str] = []
    current: list[str] = []
    for line in lines:
        starts = line[:1] not in ("", " ", "\t", "#") and not _CONTINUES.match(line)
        if starts and current and _ended("\n".join(current)):
            chunks.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        chunks.append("\n".join(current))
    return chunks


def _ended(code: str) -> bool:
    """Whether ``code`` is a complete statement or an invalid one, rather than one that
    goes on (an open bracket, string or block header): compiled, never run."""
    try:
        return codeop.compile_command(code, symbol="exec") is not None
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return True


#: A string literal with its prefix (``f``, ``rb``, …), in code that does not parse.
_STRING = re.compile(r"(?<!\w)(?P<prefix>(?i:[rbuf]{0,2}))"
                     r"(?P<literal>\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')")
#: A replacement field of an f-string (``{{`` is a brace), and what follows its expression.
_FIELD = re.compile(r"(?<!\{)\{(?!\{)([^{}]*)\}")
_FIELD_END = re.compile(r"![rsa]\s*(?::.*)?$|:[^\]\)]*$")


def _cut_string(match: re.Match[str]) -> str:
    """A string literal as parsed code reads: ``''``; an f-string ``''.format(…)`` of its
    fields' expressions."""
    if "f" not in match["prefix"].lower():
        return "''"
    fields = [_FIELD_END.sub("", field).strip() for field in _FIELD.findall(match["literal"])]
    return "''.format(" + ", ".join(field for field in fields if field) + ")"


def _fallback_tokens(text: str, renamer: _Renamer) -> list[str]:
    """Words and symbols of code that does not parse: comments cut, strings as
    :func:`_cut_string` reads them, names renamed."""
    text = _STRING.sub(_cut_string, text)
    text = re.sub(r"#[^\n]*", "", text)
    out: list[str] = []
    for token in _TOKEN.findall(text):
        is_name = token[0].isalpha() or token[0] == "_"
        if is_name and not keyword.iskeyword(token) and not (out and out[-1] == "."):
            token = renamer.name(token)
        out.append(token)
    return out


def shingles(tokens: Sequence[str], size: int = SHINGLE) -> frozenset[int]:
    """The set of ``size``-token runs of ``tokens`` (as 32-bit hashes, stable across runs);
    a shorter sequence is one run."""
    if not tokens:
        return frozenset()
    if len(tokens) <= size:
        return frozenset({zlib.crc32("\x00".join(tokens).encode("utf-8"))})
    return frozenset(zlib.crc32("\x00".join(tokens[i:i + size]).encode("utf-8"))
                     for i in range(len(tokens) - size + 1))


def fingerprint(sources: Iterable[str]) -> frozenset[int]:
    """What a notebook is compared by: the shingles of its normalised code."""
    return shingles(normalised_tokens(sources))


def similarity(a: frozenset[int], b: frozenset[int]) -> float:
    """The Jaccard index of two fingerprints (0.0 when either is empty)."""
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


# --------------------------------------------------------------------------- cases

#: A case's fingerprints: version → fingerprint (versions without code left out).
CasePrints = Mapping[str, frozenset[int]]


def case_prints(notebooks: Mapping[str, Sequence[str] | None]) -> dict[str, frozenset[int]]:
    """Fingerprints of a case's notebooks (version → code cells' sources, None: absent)."""
    out = {}
    for version, sources in notebooks.items():
        if sources is not None:
            found = fingerprint(sources)
            if found:
                out[version] = found
    return out


def case_similarity(a: CasePrints, b: CasePrints) -> tuple[float, str | None]:
    """The similarity of two cases (their most similar same-version notebooks) and that version."""
    best, which = 0.0, None
    for version in VERSIONS:
        if version in a and version in b:
            value = similarity(a[version], b[version])
            if value > best:
                best, which = value, version
    return best, which


def most_similar(new: CasePrints, cases: Mapping[str, CasePrints], *,
                 threshold: float = THRESHOLD) -> list[Similar]:
    """The cases of ``cases`` at least ``threshold`` similar to ``new``, most similar first."""
    found = []
    for case_id, prints in cases.items():
        value, version = case_similarity(new, prints)
        if version is not None and value >= threshold:
            found.append(Similar("", case_id, value, version))
    return sorted(found, key=lambda s: (-s.similarity, s.other))


def similar_pairs(cases: Mapping[str, CasePrints], *, threshold: float = THRESHOLD) -> list[Similar]:
    """Every pair of ``cases`` at least ``threshold`` similar (``case`` the later in the
    mapping's order), most similar first."""
    ids = list(cases)
    found = []
    for j, case_id in enumerate(ids):
        for earlier in ids[:j]:
            value, version = case_similarity(cases[case_id], cases[earlier])
            if version is not None and value >= threshold:
                found.append(Similar(case_id, earlier, value, version))
    return sorted(found, key=lambda s: (-s.similarity, s.case, s.other))


def highest(cases: Mapping[str, CasePrints]) -> Similar | None:
    """The most similar pair of distinct cases (None with fewer than two)."""
    pairs = similar_pairs(cases, threshold=0.0)
    return pairs[0] if pairs else None


def folder_prints(root: str | Path, case_id: str) -> dict[str, frozenset[int]]:
    """Fingerprints of a case folder's notebooks (unreadable ones, and links out of the
    snapshot, left out)."""
    from junobench.data import layout
    from junobench.data.notebook import read_notebook
    from junobench.errors import JunoBenchError

    sources: dict[str, Sequence[str] | None] = {}
    for version, path in layout.notebooks_inside(root, case_id, VERSIONS).items():
        try:
            notebook, _ = read_notebook(path, case=case_id)
        except (JunoBenchError, OSError):
            continue
        sources[version] = [cell.source for cell in notebook.code_cells]
    return case_prints(sources)
