"""Which ML library a crash belongs to, estimated from its traceback (and the cell's code).

A traceback says more than which library names it contains. In order of weight:

1. the crash line (the ``---->`` line of the notebook cell): the library whose API it
   calls, through a module alias (``pd.``, ``np.``, ``tf.``, ``sns.`` …, plus the aliases
   the code imports) or a name only one library defines (``train_test_split``,
   ``countplot``, ``SARIMAX`` …);
2. the first frame inside an installed package (``site-packages/<lib>/``): the library
   the user's code called into; deeper frames count less;
3. the exception's class and module (``InvalidArgumentError``,
   ``tensorflow.python.framework.errors_impl``, ``LinAlgError`` …);
4. what the message names (``'DataFrame' object``, ``numpy.ndarray``, ``torch.Size``,
   ``foo() got an unexpected keyword argument`` for a known ``foo`` …);
5. the rest of the cell's code, as a tie-breaker.

Any library can be the answer: the benchmark's ten (TensorFlow and Keras count as one,
``tensorflow/keras``), those the published heuristic names (:data:`PUBLISHED_LIBRARIES`:
xgboost, transformers, cv2, …) and any package the traceback's frames name; the notebook
machinery (IPython, ipykernel, …) never is. ``benchmark=True`` answers only the ten
benchmark labels. None when nothing points to a library (tables get ``None``, as the
published heuristic writes).

>>> estimate(["ValueError   Traceback (most recent call last)",
...           "Cell In[3], line 1\\n----> 1 df = pd.read_csv(path, sep=';')\\n",
...           "File /opt/conda/lib/python3.10/site-packages/pandas/io/parsers.py:912, in read_csv()",
...           "ValueError: bad separator"])
'pandas'
>>> estimate("NameError: name 'x' is not defined") is None
True

The work is a handful of compiled regular-expression scans over the raw text (the
traceback is never ``literal_eval``-ed), so scoring tens of thousands of tracebacks
takes seconds (``scripts/benchmark_library_cause.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from junobench.errors import JunoBenchError
from junobench.vocab import LIBRARY_LABELS, NOTEBOOK_SPECIFIC

#: The benchmark's library labels, in the order the vocabulary lists them.
LIBRARY_CAUSES: tuple[str, ...] = tuple(
    label for lib, label in LIBRARY_LABELS.items() if lib != NOTEBOOK_SPECIFIC
)
TF = "tensorflow/keras"
#: What the published heuristic writes when no library is involved.
NONE = "None"

#: The vocabulary tables (package data, read once at import): modules, aliases, names,
#: exception classes and message fragments, each → the library they point to.
VOCABULARY_FILE = Path(__file__).with_name("library_vocabulary.json")


def _by_name(table: Mapping[str, str]) -> dict[str, str]:
    """Name → library of a table of library → space-separated names."""
    return {name: label for label, names in table.items() for name in names.split()}


_TABLES: dict[str, Any] = json.loads(VOCABULARY_FILE.read_text(encoding="utf-8"))
#: Top-level module (as in ``site-packages/<module>/`` or ``import <module>``) → label.
MODULES: dict[str, str] = _TABLES["modules"]
#: Conventional aliases, used as ``alias.attr`` (``import numpy as np`` …).
ALIASES: dict[str, str] = {**MODULES, **_TABLES["aliases"]}
#: Functions and classes (called or referenced) that one library defines.
API_NAMES: dict[str, str] = _by_name(_TABLES["api_names"])
#: Methods and attributes typical of one library's objects (weaker evidence).
METHODS: dict[str, str] = _by_name(_TABLES["methods"])
#: Exception classes that one library defines.
EXCEPTIONS: dict[str, str] = _by_name(_TABLES["exceptions"])
#: Classes whose objects messages name (``'<class>' object has no attribute …``), besides
#: those of :data:`API_NAMES`.
TYPES: dict[str, str] = _by_name(_TABLES["types"])
#: Message fragments that only one library produces (matched case-sensitively).
MESSAGES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _TABLES["messages"].items()}

#: Weights of each kind of evidence (tuned on the empirical study's dev rows).
WEIGHTS: dict[str, float] = {
    "crash_alias": 6.0,     # pd.read_csv(...) on the crash line
    "crash_api": 5.0,       # train_test_split(...) on the crash line
    "crash_method": 1.5,    # df.groupby(...) on the crash line
    "call_alias": 3.0,      # the same, on the user line that called into the library
    "call_api": 2.5,
    "call_method": 0.75,
    "entry_frame": 5.0,     # the first frame inside an installed ML library
    "deep_frame": 1.0,      # each other library with frames
    "raise_frame": 1.0,     # the library of the innermost frame
    "exception": 4.0,       # the exception class or its module
    "message": 3.0,         # what the message names
    "message_type": 5.0,    # "'DataFrame' object has no attribute …": whose object it is
    "message_api": 4.0,     # "foo() got an unexpected keyword argument" for a known foo
    "code": 0.5,            # the library is used elsewhere in the cell
}

#: The libraries the published heuristic names (its 24 keys; ``keras`` and
#: ``tensorflow`` are one library here), answered besides whatever frames name.
PUBLISHED_LIBRARIES: tuple[str, ...] = tuple(_TABLES["published_libraries"].split())
#: Modules of libraries outside the benchmark → the library's name.
OTHER_MODULES: dict[str, str] = {
    **{lib: lib for lib in PUBLISHED_LIBRARIES if lib not in MODULES}, **_TABLES["other_modules"]}
#: Packages whose frames say nothing about the crash's library (the notebook machinery,
#: helpers every library uses); never an answer.
INFRASTRUCTURE: frozenset[str] = frozenset(_TABLES["infrastructure"].split())
#: Conventional aliases and names of the other libraries.
OTHER_ALIASES: dict[str, str] = _TABLES["other_aliases"]
OTHER_API_NAMES: dict[str, str] = _by_name(_TABLES["other_api_names"])
OTHER_EXCEPTIONS: dict[str, str] = _by_name(_TABLES["other_exceptions"])
OTHER_TYPES: dict[str, str] = _by_name(_TABLES["other_types"])
OTHER_MESSAGES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _TABLES["other_messages"].items()}

# --------------------------------------------------------------------------- patterns

_LABELS = frozenset(LIBRARY_CAUSES)
# Search patterns start with a literal so that the regex engine skips ahead fast.
_PACKAGE = re.compile(r"-packages[\\/]+(\w+)")
_HUB = re.compile(r"hub[\\/][^\\/\n']+[\\/](\w+)[\\/]")  # ~/.cache/torch/hub/<repo>/<lib>/…
_CYTHON = re.compile(r"_libs[\\/][\w\\/]*\.(?:pyx|pxi) in (\w+)\.")  # pandas/_libs/x.pyx in pandas.…
_ARRAY_FUNCTION = "<__array_function__ internals>"
_DISPATCH = re.compile(r"-packages[\\/]+torch[\\/]+nn[\\/]+modules[\\/]+module\.py")
#: "module 'cv2' has no attribute …", "cannot import name 'x' from 'scipy.stats'".
_MODULE_MESSAGE = re.compile(r"(?:module|from) '([A-Za-z_][\w.]*)'")
_ARROW = re.compile(r"-> *\d+ ?")  # the code follows, up to the end of the line
_WORD = re.compile(r"[A-Za-z_]\w*")
_IDENTIFIER_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_")
# Code and messages are split into identifiers as UTF-8 bytes (bytes.translate is several
# times faster than str.translate); every other byte, non-ASCII ones included, is a blank.
_WORDS = bytes(c if chr(c) in _IDENTIFIER_CHARACTERS else 32 for c in range(256))
#: ``from m import a, b as c`` (over several lines only inside brackets) or ``import m as
#: n, o``; one statement's names never run into the next line.
_IMPORT = re.compile(
    r"(?m)^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([\w\s,.]+)\)|([\w \t,.]+))"
    r"|import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*))"
)
_COMPLAINTS = ("got an unexpected", "got multiple", "missing ", "takes ")
_ANSI = re.compile(r"(?:\x1b|\\x1b|\\u001b)\[[0-9;]*[A-Za-z]")
#: A coloured traceback is coloured from its first line: looking there is enough.
_ANSI_HEAD = 400  # pragma: no mutate (how far to look: IPython colours the first line)
_HEADER = "Traceback (most recent call last)"
#: How a literal list of IPython's traceback lines starts (its first line is 75 dashes),
#: and where an arrow could start in it at the earliest (on the last dash).
_DASHED_HEAD = "['" + "-" * 75  # pragma: no mutate (only where the arrow search starts)
_DASHES_END = len(_DASHED_HEAD) - 1  # pragma: no mutate (a bound: no arrow is that early)
_QUOTES = frozenset("'\"")
#: Where an item that starts with a letter seems to start, by its look: ``', '`` or ``", "``.
_ITEM_START = re.compile(r"""['"], ['"](?=[A-Za-z])""")
_LAST_ITEM_ENDS = ("']", '"]')
#: An exception's name (dotted module prefixes allowed; a prefix's ``\w*+`` is
#: possessive where the ``re`` module knows it, Python 3.11 on: giving characters back
#: could never reach a dot, so the answers are the same, only found faster).
_POSSESSIVE = "+" if sys.version_info >= (3, 11) else ""  # pragma: no mutate (speed only)
_EXCEPTION_NAME = (rf"(?:[A-Za-z_]\w*{_POSSESSIVE}\.)*[A-Z]\w*"
                   r"(?:Error|Exception|Exit|Interrupt|Warning|Iteration)")
#: ``Name: message`` or a bare ``Name``.
_EXCEPTION_LINE = re.compile(
    rf"\s*({_EXCEPTION_NAME})(?:: (.{{0,240}})|:?(?:\s|\\n|['\"\]])*$)", re.DOTALL)
#: Libraries whose errors often come from compiled code, with no Python frame of their own.
_COMPILED = frozenset({"numpy", "torch"})
_NO_LIBRARIES: frozenset[str] = frozenset()
#: Ties go to the library built on the others (seaborn draws with matplotlib, statsmodels
#: fits pandas and numpy data, …): the one the user's code called.
_PREFERENCE: dict[str, int] = {lib: rank for rank, lib in enumerate((
    "seaborn", "torchvision", "statsmodels", "lightgbm", "sklearn", TF, "torch", "pandas",
    "matplotlib", "numpy"))}
#: The rank of the libraries outside :data:`_PREFERENCE` (they come first, by name).
_UNRANKED = -1  # pragma: no mutate (any negative rank orders the same)
_METHOD, _API, _ALIAS = range(3)  # strength of a clue on a line of code, weakest first


def _fragment_index() -> dict[bytes, list[tuple[str, str]]]:
    """Message fragments keyed by their longest word, so a message is matched word by word."""
    index: dict[bytes, list[tuple[str, str]]] = {}
    for lib, fragments in [*MESSAGES.items(), *OTHER_MESSAGES.items()]:
        for fragment in fragments:
            key = max(_WORD.findall(fragment), key=len).encode()
            index.setdefault(key, []).append((fragment, lib))
    return index


_FRAGMENTS = _fragment_index()


class _Vocabulary(NamedTuple):
    """Module aliases and API names keyed by bytes (code tokens), the set of every known
    word (intersected with a line's words at C speed), and the API names as text."""

    aliases: Mapping[bytes, str]
    names: Mapping[bytes, str]
    known: frozenset[bytes]
    api: Mapping[str, str]

    @classmethod
    def of(cls, aliases: Mapping[str, str], api: Mapping[str, str]) -> _Vocabulary:
        by_alias = {k.encode(): v for k, v in aliases.items()}
        by_name = {k.encode(): v for k, v in api.items()}
        return cls(by_alias, by_name, frozenset([*by_alias, *by_name, *_METHODS]), api)


_METHODS = {k.encode(): v for k, v in METHODS.items()}
_KNOWN_MODULES: dict[str, str] = {**OTHER_MODULES, **MODULES}
_ALL_ALIASES: dict[str, str] = {**OTHER_MODULES, **OTHER_ALIASES, **ALIASES}
_ALL_API_NAMES: dict[str, str] = {**OTHER_API_NAMES, **API_NAMES}
_ALL_EXCEPTIONS: dict[str, str] = {**OTHER_EXCEPTIONS, **EXCEPTIONS}
_ALL_TYPES: dict[str, str] = {**OTHER_TYPES, **TYPES}
_VOCABULARY = _Vocabulary.of(_ALL_ALIASES, _ALL_API_NAMES)
_FRAGMENT_WORDS = frozenset(_FRAGMENTS)
_ALIAS_WORDS = frozenset(_VOCABULARY.aliases)


@dataclass(frozen=True)
class Evidence:
    """One clue: which library, how much it weighs, what kind of clue, and what it was."""

    library: str
    weight: float
    kind: str
    text: str


# --------------------------------------------------------------------------- estimate


def library_of_module(module: str) -> str | None:
    """The library of a top-level module (``keras`` → ``tensorflow/keras``, ``xgboost`` →
    ``xgboost``, an unknown package → its own name); None for the notebook machinery and
    helper packages (:data:`INFRASTRUCTURE`), Python's standard library (``import os as
    o`` names no library) and private modules."""
    lib = MODULES.get(module) or OTHER_MODULES.get(module)
    if lib is not None:
        return lib
    if module in INFRASTRUCTURE or module in sys.stdlib_module_names or not module \
            or module[0] == "_" or module[0].isdigit():
        return None
    return module


class _ModuleLibraries(dict[str, "str | None"]):
    """:func:`library_of_module`, remembered (a dict lookup per frame; bounded)."""

    def __missing__(self, module: str) -> str | None:
        lib = library_of_module(module)
        if len(self) < 100_000:  # pragma: no mutate (a memory bound of a cache)
            self[module] = lib
        return lib


_MODULE_LIBRARIES = _ModuleLibraries()


#: The library of a frame's module (:func:`library_of_module`, remembered), and with
#: ``benchmark`` the benchmark's library only.
_LIBRARY_OF_MODULE: Callable[[str], str | None] = _MODULE_LIBRARIES.__getitem__
_BENCHMARK_MODULE: Callable[[str], str | None] = MODULES.get


def _known_module(module: str, benchmark: bool) -> str | None:
    """The library of a module a message or an exception names: a known library's (with
    ``benchmark``, a benchmark library's), else None."""
    return (MODULES if benchmark else _KNOWN_MODULES).get(module)


_NUMPY_FRAME: tuple[str, ...] = ("numpy",)  # an array-dispatch frame, as either lookup names it


def estimate(traceback: Any, code: str | None = None, *, benchmark: bool = False
             ) -> str | None:
    """The library a crash belongs to, or None when no library is involved.

    Any library: the benchmark's (``tensorflow/keras`` for both), those the published
    heuristic names (:data:`PUBLISHED_LIBRARIES`) and whatever package the traceback's
    frames name. With ``benchmark``, only the benchmark's ten labels are answered.
    ``traceback`` as the tables store it (a Python-literal list string, one string, or a
    list of strings; ANSI codes allowed); ``code`` the crashing cell's source, when known
    (its imports name aliases such as ``import seaborn as sb``).
    """
    totals, context = _clues(traceback, code, None, benchmark)
    if benchmark:
        totals = {lib: weight for lib, weight in totals.items() if lib in _LABELS}
    if len(totals) == 1:  # one library with clues (every clue weighs more than nothing)
        (only,) = totals
        return only
    # The libraries the cell uses break ties and close calls (a lead above _W_CODE stands).
    for lib in _cell_libraries(context, code):
        if not benchmark or lib in _LABELS:
            totals[lib] = totals.get(lib, 0.0) + _W_CODE
    return min(totals, key=lambda lib: (-totals[lib], _PREFERENCE.get(lib, _UNRANKED), lib)
               ) if totals else None


def estimate_many(tracebacks: Iterable[Any], codes: Iterable[str | None] | None = None, *,
                  benchmark: bool = False) -> list[str | None]:
    """:func:`estimate` for many crashes (``codes`` aligned with ``tracebacks``, or None)."""
    if codes is None:
        return [estimate(tb, benchmark=benchmark) for tb in tracebacks]
    return [estimate(tb, code, benchmark=benchmark)
            for tb, code in zip(tracebacks, codes, strict=True)]


def score(traceback: Any, code: str | None = None, *, benchmark: bool = False
          ) -> dict[str, float]:
    """Total evidence weight per library (libraries without evidence are left out)."""
    totals: dict[str, float] = {}
    for clue in explain(traceback, code, benchmark=benchmark):
        totals[clue.library] = totals.get(clue.library, 0.0) + clue.weight
    return totals


def explain(traceback: Any, code: str | None = None, *, benchmark: bool = False
            ) -> list[Evidence]:
    """Every clue about a crash, strongest first (for reviewing a decision)."""
    clues: list[tuple[str, float, str, str]] = []
    _, context = _clues(traceback, code, clues.append, benchmark)
    _tiebreak_clues(context, code, clues.append)
    if benchmark:
        clues = [clue for clue in clues if clue[0] in _LABELS]
    return sorted((Evidence(*clue) for clue in clues), key=lambda e: (-e.weight, e.library, e.kind))


#: Receives each clue as ``(library, weight, kind, text)`` (None: clues are only summed).
_Record = Callable[[tuple[str, float, str, str]], Any] | None


def _clues(traceback: Any, code: str | None, record: _Record, benchmark: bool
           ) -> tuple[dict[str, float], tuple[str, int, int]]:
    """The total clue weight per library (see the module docstring for the clues), and
    where the cell's lines above the crash line are (``text, start, end``, for
    :func:`_tiebreak_clues`). ``record`` is called with each clue as ``(library, weight,
    kind, text)``.

    The phases, in the order the module docstring weighs them: the frames
    (:func:`_frame_clues`), the exception (:func:`_exception_of`, :func:`_exception_clues`),
    its message (:func:`_message_clues`) and the code lines the traceback shows
    (:func:`_code_clues`). Each adds to ``totals`` in place.
    """
    text, newline = _normalise(traceback)
    vocabulary = _vocabulary(code)
    totals: dict[str, float] = {}
    libraries, first_frame = _frame_clues(text, benchmark, totals, record)
    name, message, complete = _exception_of(text, newline)
    if name:
        _exception_clues(name, benchmark, totals, record)
    if message:
        _message_clues(message, vocabulary, benchmark, totals, record)
    context = _code_clues(text, newline, first_frame, libraries if complete else None,
                          vocabulary, totals, record)
    return totals, context


def _vocabulary(code: str | None) -> _Vocabulary:
    """The aliases and API names known, with those the cell's imports add."""
    if code and "import" in code:
        imported_aliases, imported_names = _imports(code)
        return _Vocabulary.of({**_ALL_ALIASES, **imported_aliases},
                              {**_ALL_API_NAMES, **imported_names})
    return _VOCABULARY


def _frame_clues(text: str, benchmark: bool, totals: dict[str, float], record: _Record
                 ) -> tuple[set[str] | frozenset[str], int]:
    """Frames inside installed libraries, in call order: the first is the library the
    user's code called (entry), the last the one that raised, the others count less.
    Cython, array-dispatch and torch-hub frames are looked for only when there is no
    site-packages frame. Returns the libraries framed and where the first frame is (the
    text's end when there is none)."""
    named: Sequence[str]
    first = _PACKAGE.search(text)
    if first:
        first_frame = first.start()
        named = list(filter(None, map(_BENCHMARK_MODULE if benchmark else _LIBRARY_OF_MODULE,
                                      _PACKAGE.findall(text, first_frame))))
    elif "_libs" in text or "hub" in text:
        modules, first_frame = _other_frames(text)
        named = list(filter(None, map(_BENCHMARK_MODULE if benchmark else _LIBRARY_OF_MODULE,
                                      modules)))
    else:  # the usual case: no library frame at all (as _other_frames, inlined)
        first_frame = text.find(_ARRAY_FUNCTION)
        if first_frame < 0:
            first_frame, named = len(text), ()
        else:
            named = _NUMPY_FRAME
    if not named:
        return _NO_LIBRARIES, first_frame
    libraries = set(named)
    entry, last = named[0], named[-1]
    if entry == "torch" and len(libraries) > 1 and _torch_dispatches(text, first_frame):
        # torch's Module.__call__ only dispatches to the model's forward(): the next
        # library frame is the model's (torchvision, …).
        entry = named[1]
    totals.update(dict.fromkeys(libraries, _W_DEEP))
    totals[entry] = _W_ENTRY
    totals[last] += _W_RAISE
    if record:
        record((entry, _W_ENTRY, "entry_frame", "first library frame"))
        for lib in libraries:
            if lib != entry:
                record((lib, _W_DEEP, "deep_frame", "library frame"))
        record((last, _W_RAISE, "raise_frame", "innermost library frame"))
    return libraries, first_frame


def _exception_of(text: str, newline: str) -> tuple[str | None, str | None, bool]:
    """The exception's name and message, and whether the traceback is complete (ends with
    its exception line). In a literal list, the last item that is an exception line (TF
    messages run over several items), within the last 4000 characters: items are walked
    from the end, an item's opening quote being the previous unescaped occurrence of its
    closing quote, so commas and quotes inside messages cost nothing. Otherwise the last
    line (:func:`_unlisted_exception`), else the header's name (``ValueError Traceback
    (most recent call last)``), the traceback then being incomplete."""
    # Without such an item: whether the items are then told apart by their look (the text
    # is no well-formed literal), not by their quotes (no item is an exception line).
    by_look = True
    if newline != "\n" and text.endswith(_LAST_ITEM_ENDS):
        close = len(text) - 2  # the last item's closing quote, before "]"
        low = max(0, close - 3998)
        while True:
            quote = text[close]
            start = _unescaped(text, quote, low, text.rfind(quote, low, close))
            # (text[0] is "[", never a quote: "< 0", "<= 0" and "< 1" alike)
            if start < 0:  # pragma: no mutate (no opening quote: beyond the window, or not a literal)
                by_look = not low
                break
            if text[start + 1].isalpha() and (matched := _EXCEPTION_LINE.match(text, start + 1)):
                return matched.group(1), matched.group(2), True
            if text[start - 1] == "[":
                by_look = False
                break
            if text[start - 2:start] != ", " or text[start - 3] not in _QUOTES:
                break
            close = start - 3
    found, message = _unlisted_exception(text, newline, by_look)
    if found is not None:
        return found, message, True
    return _header_exception(text), message, False


def _exception_clues(name: str, benchmark: bool, totals: dict[str, float], record: _Record
                     ) -> None:
    """The library of the exception's class (``InvalidArgumentError``) or of its module
    (``tensorflow.python.framework.errors_impl.…``)."""
    lib: str | None
    if "." in name:  # module.Class
        module, _, cls = name.rpartition(".")
        lib = _ALL_EXCEPTIONS.get(cls) or _known_module(module.partition(".")[0], benchmark)
    else:
        lib = _ALL_EXCEPTIONS.get(name)
    if lib:
        _credit(totals, record, lib, _W_EXCEPTION, "exception", name)


def _credit(totals: dict[str, float], record: _Record, lib: str, weight: float, kind: str, text: str) -> None:
    """Add a clue's ``weight`` to ``lib``'s total, and ``record`` it."""
    totals[lib] = totals.get(lib, 0.0) + weight
    if record:
        record((lib, weight, kind, text))


def _message_clues(message: str, vocabulary: _Vocabulary, benchmark: bool,
                   totals: dict[str, float], record: _Record) -> None:
    """What the message names: a library's own phrases (once per library), whose object it
    is (``'DataFrame' object``), whose function was called wrongly (``foo() got an
    unexpected …``) and whose module it is (``module 'numpy' has no …``)."""
    lib: str | None
    words: Collection[bytes] = _FRAGMENT_WORDS.intersection(message.encode().translate(_WORDS).split())
    if words:
        if record:  # the same clue texts in every process (set order varies)
            words = sorted(words)
        seen: set[str] = set()
        for word in words:
            for fragment, lib in _FRAGMENTS[word]:
                if lib not in seen and fragment in message:
                    seen.add(lib)
                    _credit(totals, record, lib, _W_MESSAGE, "message", fragment)
    # "'DataFrame' object has no attribute …": whose object it is ("in" is the
    # cheaper test; find only when it is there)
    if "' object " in message and (i := message.find("' object ")) > 0:
        kind = message[:i].split()[-1].lstrip("'\"(<[")
        lib = (_ALL_TYPES.get(kind) or _ALL_TYPES.get(kind.rpartition(".")[2])
               or vocabulary.api.get(kind)
               or _known_module(kind.partition(".")[0], benchmark))
        if lib:
            _credit(totals, record, lib, _W_TYPE, "message_type", f"'{kind}' object")
    if "() " in message and (i := message.find("() ")) > 0 \
            and message.startswith(_COMPLAINTS, i + 3):  # "foo() got an unexpected …"
        called = message[:i].split()[-1].rpartition(".")[2]
        lib = vocabulary.api.get(called) or METHODS.get(called)
        if lib:
            _credit(totals, record, lib, _W_CALLED, "message_api", f"{called}()")
    if "module '" in message or "from '" in message:  # whose module it is
        module_named = _MODULE_MESSAGE.search(message)
        if module_named and (lib := _known_module(module_named.group(1).partition(".")[0], benchmark)):
            _credit(totals, record, lib, _W_TYPE, "message_module", module_named.group(0))


def _code_clues(text: str, newline: str, first_frame: int,
                framed: set[str] | frozenset[str] | None, vocabulary: _Vocabulary,
                totals: dict[str, float], record: _Record) -> tuple[str, int, int]:
    """The libraries the code lines call: the crash line (the first ``---->`` line: the
    notebook cell's, which IPython shows first) and the user line that called into the
    first library frame. ``framed``: the libraries of a complete traceback's frames (a
    library called on the crash line but not framed weighs half). Returns where the
    cell's lines above the crash line are, for the tie-breakers."""
    # (The dashed line that heads a traceback holds no arrow: skipping it is worth it.)
    arrow = _ARROW.search(text, _DASHES_END if text.startswith(_DASHED_HEAD) else 0, first_frame)
    if arrow is None:
        return text, 0, min(first_frame, 600)
    crash_start, crash_end = arrow.span()
    lines = [(crash_end, "crash", framed)]
    # The innermost user line: the last arrow before the first library frame (or in the
    # user's own function frames when no library frame follows); arrows cannot overlap.
    # (Its ">" is looked for, then the arrow: a one-character rfind is a fast memrchr, a
    # two-character one crawls, and without library frames it crawls the whole text.)
    end = first_frame
    while (i := text.rfind(">", crash_end, end)) >= 0:  # pragma: no mutate (i >= crash_end > 1)
        if call := _ARROW.match(text, i - 1, first_frame):
            lines.append((call.end(), "call", None))
            break
        end = i
    for start, where, line_framed in lines:
        _line_clues(text, newline, start, where, line_framed, vocabulary, totals, record)
    return text, max(0, crash_start - 240), crash_start


def _line_clues(text: str, newline: str, start: int, where: str,
                framed: set[str] | frozenset[str] | None, vocabulary: _Vocabulary,
                totals: dict[str, float], record: _Record) -> None:
    """The strongest clue per library on the code line at ``start``: ``alias.attr``, then
    a name only that library defines, then a method only it has."""
    line = text[start:start + 300].partition(newline)[0]  # up to the end of the line
    if newline != "\n":
        line = line.partition("', ")[0]  # the item ends on this line
    data = line.encode()
    words: Collection[bytes] = vocabulary.known.intersection(data.translate(_WORDS).split())
    if not words:
        return
    aliases, names = vocabulary.aliases, vocabulary.names
    what: dict[str, bytes] = {}
    if record:
        words = sorted(words)
    found: dict[str, int] = {}
    for word in words:
        lib = aliases.get(word)
        # (bytes.find, not "in": "in" first tries the needle as an int, raising inside)
        if lib and data.find(word + b".") >= 0:
            found[lib] = _ALIAS
        elif lib := names.get(word):
            if found.get(lib, _METHOD) < _API:  # (not found yet: as weak as a method)
                found[lib] = _API
            else:
                continue
        elif (lib := _METHODS.get(word)) and lib not in found and data.find(b"." + word) >= 0:
            found[lib] = _METHOD
        else:
            continue
        if record:
            what[lib] = word
    weights = _LINE_WEIGHTS[where]
    add = totals.get
    for lib, strength in found.items():
        weight = weights[strength]
        # A library called on the crash line but absent from the frames of a complete
        # traceback weighs half: the error arose elsewhere on the line. Compiled
        # libraries (numpy, torch) often raise without a Python frame of their own,
        # so they are discounted only when another library's frames show where.
        if framed is not None and lib not in framed and (framed or lib not in _COMPILED):
            weight *= 0.5
        totals[lib] = add(lib, 0.0) + weight
        if record:
            record((lib, weight, _KINDS[where][strength], what[lib].decode()))


def _torch_dispatches(text: str, start: int) -> bool:
    """The first torch frame (from ``start``) is ``torch/nn/modules/module.py``."""
    torch = next((frame for frame in _PACKAGE.finditer(text, start)
                  if MODULES.get(frame.group(1)) == "torch"), None)
    return torch is not None and _DISPATCH.match(text, torch.start()) is not None


def _other_frames(text: str) -> tuple[list[str], int]:
    """Library modules of Cython, array-dispatch and torch-hub frames in ``text``, and
    where the first is (the text's end when there is none)."""
    end = len(text)
    position = text.find(_ARRAY_FUNCTION)
    frames = [(m.start(), m.group(1)) for m in _CYTHON.finditer(text)] if "_libs" in text else []
    if "hub" in text:
        frames += [(m.start(), m.group(1)) for m in _HUB.finditer(text)]
    if position >= 0:
        frames.append((position, "numpy"))
    frames.sort()
    return [module for _, module in frames], frames[0][0] if frames else end


_KINDS = {where: {_ALIAS: f"{where}_alias", _API: f"{where}_api", _METHOD: f"{where}_method"}
          for where in ("crash", "call")}
#: The weight of a clue on a line of code, by where and strength .
_LINE_WEIGHTS = {where: {strength: WEIGHTS[kind] for strength, kind in kinds.items()}
                 for where, kinds in _KINDS.items()}
_W_ENTRY, _W_DEEP, _W_RAISE = WEIGHTS["entry_frame"], WEIGHTS["deep_frame"], WEIGHTS["raise_frame"]
_W_EXCEPTION, _W_MESSAGE = WEIGHTS["exception"], WEIGHTS["message"]
_W_TYPE, _W_CALLED = WEIGHTS["message_type"], WEIGHTS["message_api"]
_W_CODE = WEIGHTS["code"]


def _tiebreak_clues(where: tuple[str, int, int], code: str | None, add: Any) -> None:
    """The tie-breaker clues of :func:`_cell_libraries`, in a fixed order."""
    for lib in sorted(_cell_libraries(where, code)):
        add((lib, _W_CODE, "code", "used in the cell"))


def _cell_libraries(where: tuple[str, int, int], code: str | None) -> set[str] | frozenset[str]:
    """The libraries the cell uses through an alias (``sns.…``), as tie-breakers: in the
    lines the traceback shows above the crash line, and in ``code`` when given."""
    text, start, end = where
    aliases, words = _VOCABULARY.aliases, _ALIAS_WORDS
    if code:
        context = f"{text[start:end]}\n{code}"
        if "import" in code:
            aliases = {**aliases, **_Vocabulary.of(_imports(code)[0], {}).aliases}
            words = frozenset(aliases)
        if "." not in context:  # no alias.attr
            return _NO_LIBRARIES
    elif text.find(".", start, end) < 0:  # (looked for in place: no copy)
        return _NO_LIBRARIES
    else:
        context = text[start:end]
    data = context.encode()
    words = words.intersection(data.translate(_WORDS).split())
    return {aliases[word] for word in words if data.find(word + b".") >= 0} if words else _NO_LIBRARIES


def _unlisted_exception(text: str, newline: str, by_look: bool
                        ) -> tuple[str | None, str | None]:
    """The exception name (None when the traceback does not end with one) and its message,
    where no item of a literal list is an exception line (``by_look`` is False), the text
    is no well-formed literal (``by_look``: items are told apart by their look) or the
    text is not a literal list (its last line)."""
    if newline != "\n":
        if by_look:  # not a well-formed literal: item boundaries by their look
            low = len(text) - 4000
            low = max(0, low)  # pragma: no mutate (text[0] is "[": starting at 0 or 1 alike)
            for item in reversed(list(_ITEM_START.finditer(text, low))):
                found = _EXCEPTION_LINE.match(text, item.end())
                if found:
                    return found.group(1), found.group(2)
        found = _EXCEPTION_LINE.match(text, 2)  # a single item
        if found:
            return found.group(1), found.group(2)
        text = text[-600:].rstrip("]'\" ")
        while text.endswith(newline):  # a single item ending with its exception line
            text = text[: -len(newline)]
    text = text.rstrip()
    last = text.rpartition(newline)[2].strip()
    found = _EXCEPTION_LINE.match(last)
    if found:
        return found.group(1), found.group(2)
    return None, last or None


def _unescaped(text: str, quote: str, low: int, start: int) -> int:
    """The last occurrence of ``quote`` in ``text[low:]`` at or before ``start`` that no odd
    run of backslashes escapes (-1 when there is none). ``text`` is a literal list: it
    starts with ``[`` and ends with a quote and ``]``, so a run of backslashes never reaches
    its start, and at -1 (none found) ``text[-2]`` is that quote."""
    while text[start - 1] == "\\":
        before = start - 1
        while text[before - 1] == "\\":
            before -= 1
        run = start - before  # pragma: no mutate (start + before: of the same parity)
        if run % 2 == 0:  # the backslashes escape each other
            break
        start = text.rfind(quote, low, start)
    return start


def _header_exception(text: str) -> str | None:
    """``ValueError   Traceback (most recent call last)`` → ``ValueError``."""
    before, header, _ = text[:600].partition(_HEADER)
    if not header:
        return None
    words = before[-120:].split()
    name = words[-1].lstrip("'\"[") if words else ""  # (a literal list's quote, bracket)
    return name if _is_exception_name(name) else None


def _is_exception_name(text: str) -> bool:
    return _EXCEPTION_LINE.fullmatch(text) is not None


def _normalise(traceback: Any) -> tuple[str, str]:
    """The traceback as one text and its line separator (``\\n`` in a literal list)."""
    if isinstance(traceback, str):
        if traceback.startswith(("['", '["')):  # a literal: ANSI codes are escaped in it
            if "x1b[" in traceback[:_ANSI_HEAD]:
                traceback = _ANSI.sub("", traceback)
            return traceback, "\\n"
        text = traceback
    elif traceback is None:
        return "", "\n"
    elif isinstance(traceback, (list, tuple)):  # items stay apart as in a literal list
        text = "['" + "', '".join(str(t) for t in traceback) + "']"
    else:
        text = str(traceback)
    if "\x1b" in text[:_ANSI_HEAD]:
        text = _ANSI.sub("", text)
    return text, "\n"


def _imports(code: str) -> tuple[dict[str, str], dict[str, str]]:
    """Aliases (``import seaborn as sb``) and names (``from sklearn.svm import SVC``) a cell imports."""
    aliases: dict[str, str] = {}
    names: dict[str, str] = {}
    for match in _IMPORT.finditer(code):
        source, bracketed, imported, modules = match.groups()
        if source:
            lib = library_of_module(source.partition(".")[0])
            if lib:
                for item in (bracketed or imported).split(","):
                    parts = item.split()
                    if parts:
                        names[parts[-1]] = lib
        elif modules:
            for item in modules.split(","):
                parts = item.split()
                lib = library_of_module(parts[0].partition(".")[0]) if parts else None
                if lib:
                    aliases[parts[-1] if len(parts) == 3 else parts[0].partition(".")[0]] = lib
    return aliases, names


# --------------------------------------------------------------------------- tables


#: Spellings of the empirical study's ``Libs-cause`` cells → the library's name here.
LABEL_SPELLINGS: dict[str, str] = {
    "keras": TF, "tensorflow": TF, "tensorflow/keras": TF, "tf": TF, "tf.keras": TF,
    "fbprophet": "prophet", "transformer": "transformers", "scikit-learn": "sklearn",
    "pil": "PIL", "opencv": "cv2",
}


def labelled_libraries(value: Any) -> frozenset[str]:
    """The libraries a ``Libs-cause`` cell names (``transformer, datasets`` names two;
    ``keras`` is ``tensorflow/keras``); empty for an empty cell or ``None``."""
    if value is None:
        return frozenset()
    names = set()
    for part in str(value).split(","):
        text = part.strip()
        if not text or text.lower() in ("none", "nan"):
            continue
        names.add(LABEL_SPELLINGS.get(text.lower(), MODULES.get(text.lower(), text)))
    return frozenset(names)


def held_out(row: Mapping[str, Any]) -> bool:
    """Whether a labelled crash is in the held-out third that the estimator is never tuned
    on: the first byte of the sha256 of its ``eid`` (else of its traceback) is a multiple
    of 3."""
    key = row.get("eid") or row.get("traceback") or ""
    return hashlib.sha256(str(key).encode("utf-8")).digest()[0] % 3 == 0


def score_table(table: str | Path, out: str | Path, *, traceback_column: str = "traceback",
                code_column: str | None = None, result_column: str = "Libs-cause-estimated",
                benchmark: bool = False) -> list[dict[str, Any]]:
    """Add an estimated library column to an xlsx table of crashes and write it to ``out``
    (``None`` where no library is involved, as the published heuristic writes)."""
    from junobench.data.tables import read_table, write_table

    data = read_table(table)
    needed = [traceback_column] + ([code_column] if code_column else [])
    data.require(needed, hint="name the column with --traceback-column / --code-column")
    rows = data.records()
    codes = [r.get(code_column) for r in rows] if code_column else None
    for row, label in zip(rows, estimate_many([r[traceback_column] for r in rows], codes,
                                              benchmark=benchmark), strict=True):
        row[result_column] = label or NONE
    columns = [c for c in data.columns if c != result_column] + [result_column]
    write_table(out, rows, columns)
    return rows


@dataclass
class Evaluation:
    """Accuracy of :func:`estimate` against labelled rows, with its confusion table."""

    total: int
    correct: int
    confusion: Counter[tuple[str, str]]  # (labelled, estimated or "None") → count
    misses: list[dict[str, Any]]
    name: str = "rows"

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def table(self) -> str:
        """The confusion table as aligned text (rows: labelled; columns: estimated)."""
        order = {lib: i for i, lib in enumerate([*LIBRARY_CAUSES, NONE])}
        truth = sorted({t for t, _ in self.confusion}, key=lambda x: (order.get(x, 99), x))
        guessed = sorted({g for _, g in self.confusion}, key=lambda x: (order.get(x, 99), x))
        short = {lib: lib.replace("tensorflow/keras", "tf/keras") for lib in guessed}
        width = max([len("labelled \\ estimated"), *map(len, truth)])
        cells = [max(4, len(short[g])) for g in guessed]
        lines = [f"{self.name}:", "labelled \\ estimated".ljust(width) + "  "
                 + "  ".join(short[g].rjust(w) for g, w in zip(guessed, cells, strict=True))]
        for t in truth:
            counts = [str(self.confusion.get((t, g), 0) or ".") for g in guessed]
            lines.append(t.ljust(width) + "  " + "  ".join(
                c.rjust(w) for c, w in zip(counts, cells, strict=True)))
        lines.append(f"accuracy: {self.correct}/{self.total} = {self.accuracy:.1%}")
        return "\n".join(lines) + "\n"


Rows = Literal["target", "other"]
Split = Literal["all", "tune", "held-out"]


def evaluate(table: str | Path, *, traceback_column: str = "traceback",
             label_column: str = "Libs-cause", code_column: str | None = None,
             rows: Rows = "target", split: Split = "all", benchmark: bool = False
             ) -> Evaluation:
    """Score :func:`estimate` on the rows of ``table`` labelled with one of the benchmark's
    libraries (``rows="target"``) or with another library (``"other"``); an answer is right
    when it is one of the libraries the label names. ``split`` keeps the tuning rows, the
    held-out ones (:func:`held_out`) or all."""
    from junobench.data.tables import read_table

    data = read_table(table)
    needed = [traceback_column, label_column] + ([code_column] if code_column else [])
    data.require(needed, hint="an evaluation table has a traceback and a library-label column")
    confusion: Counter[tuple[str, str]] = Counter()
    misses = []
    correct = 0
    chosen = []
    for row in data.records():
        truth = labelled_libraries(row[label_column])
        if not truth or (split != "all" and held_out(row) != (split == "held-out")):
            continue
        if (rows == "target") == bool(truth & _LABELS):
            chosen.append((row, truth))
    if not chosen:
        what = "a benchmark library" if rows == "target" else "another library"
        raise JunoBenchError(f"no row is labelled with {what} ({split} rows)", file=table,
                             hint=f"check the {label_column!r} column")
    for row, truth in chosen:
        guess = estimate(row[traceback_column], row.get(code_column) if code_column else None,
                         benchmark=benchmark)
        label = sorted(truth & _LABELS)[0] if rows == "target" else ", ".join(sorted(truth))
        confusion[(label, guess or NONE)] += 1
        if guess in truth:
            correct += 1
        else:
            misses.append({**row, "estimated": guess})
    name = {"target": "rows labelled with a benchmark library",
            "other": "rows labelled with another library"}[rows]
    return Evaluation(len(chosen), correct, confusion, misses, f"{name} ({split} split)")

