"""Summaries of live Python objects for crash detection, each field tagged S, R or V.

- **S** (structure): shape, length, number of columns, column names, sample count, number
  of features an estimator was fitted on.
- **R** (representation): type, dtype, per-column dtypes, schema, element spec,
  signature, hyperparameters, which attributes the target cell uses exist.
- **V** (values): value ranges, NaN presence, number of unique values / classes, example
  values, fitted or not.

A summary is ``{"S": {...}, "R": {...}, "V": {...}}`` (categories without fields left
out), plus ``errors`` (fields that could not be computed) and ``truncated`` (the size cap
was hit). Dropping a category drops its key, nothing else; fields of excluded categories
are not even computed.

This module runs **inside the notebook's kernel** (:mod:`junobench.runtime.extract` sends
its source there), so it imports only the standard library. A library's summariser is
active only when the notebook already imported that library: its classes are looked up
in ``sys.modules``, never imported. Nothing here advances an iterator or a generator,
iterates a data loader, or reads a file: such objects are described from their
attributes. The same functions work in-process:

>>> summarise([3, 1, 2])["S"]
{'length': 3}
>>> summarise((i for i in range(3)), categories="RV")["V"]
{'state': 'created', 'advanced': False}
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import functools
import importlib.metadata
import inspect
import json
import math
import operator
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from junobench.runtime.probes import any_loaded, is_a, loaded, mro, top_modules

CATEGORIES = ("S", "R", "V")

#: Default limits (every one can be overridden per call).
DEFAULT_OPTIONS: dict[str, int] = {
    "max_columns": 20,         # columns of a DataFrame described one by one
    "max_items": 5,            # example values, probed items, container elements shown
    "max_keys": 20,            # dict keys, classes, layers, parameters listed
    "max_repr": 200,           # characters of one value's text
    "max_unique_size": 5_000_000,  # elements above which unique values are not counted
    "max_object_chars": 6000,  # JSON characters of one object's summary
    "max_notebook_chars": 30000,  # JSON characters of all summaries of one notebook
}

#: Libraries whose version is reported when the notebook imported them.
LIBRARIES = ("numpy", "pandas", "sklearn", "scipy", "statsmodels", "matplotlib", "seaborn",
             "torch", "torchvision", "tensorflow", "keras", "tf_keras", "lightgbm", "xgboost",
             "catboost", "transformers", "plotly", "PIL", "cv2", "nltk")

_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")


# --------------------------------------------------------------------------- entry points


def summarise(obj: Any, *, categories: Iterable[str] = CATEGORIES,
              options: Mapping[str, int] | None = None,
              attributes: Iterable[str] = ()) -> dict[str, Any]:
    """The tagged summary of ``obj`` (see the module docstring), within the per-object cap.

    ``attributes``: names the target cell accesses on ``obj``; R reports whether each
    exists (``method``, ``attribute``, ``property``, ``column``, ``dynamic``, ``missing``),
    looked up without running properties or ``__getattr__``.
    """
    ctx = _Context(categories, options)
    fields = _Fields(ctx)
    _describe(obj, fields, ctx)
    attributes = list(dict.fromkeys(attributes))
    if attributes and ctx.wants("R"):
        fields.lazy("R", "attributes", lambda: {a: attribute_kind(obj, a) for a in attributes})
    return fit(fields.result(), ctx.options["max_object_chars"])


def inspect_namespace(namespace: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """Summaries of the names a target cell reads, from a kernel's user namespace.

    ``request``: ``names`` (read by the target cell, in order), ``attributes`` (name → the
    attributes accessed on it), ``bound`` (names the cell binds itself), ``hidden`` (names
    the kernel provides, such as ``get_ipython``), ``categories`` and ``options``.
    Returns ``objects`` (name → summary), ``undefined`` (read, not in the namespace, not a
    builtin, not bound by the cell), ``environment`` (R: Python and library versions),
    ``capped`` (the per-notebook cap's report, or None) and ``imported_by_inspection``
    (top-level modules that appeared in ``sys.modules`` meanwhile; expected empty).
    """
    before = top_modules()
    categories = request.get("categories", CATEGORIES)
    ctx = _Context(categories, request.get("options"))
    builtin_names = set(dir(builtins))
    hidden = set(request.get("hidden", ()))
    bound = set(request.get("bound", ()))
    attributes = request.get("attributes", {})
    objects: dict[str, Any] = {}
    undefined: list[str] = []
    for name in request.get("names", ()):
        if name in namespace and name not in hidden:
            try:
                objects[name] = summarise(namespace[name], categories=categories,
                                          options=ctx.options, attributes=attributes.get(name, ()))
            except Exception as error:  # a summary never stops the others
                objects[name] = {"errors": {"summary": _error_text(error)}}
        elif name not in namespace and name not in builtin_names and name not in bound:
            undefined.append(name)
    objects, capped = fit_notebook(objects, ctx.options["max_notebook_chars"],
                                   ctx.options["max_object_chars"])
    environment = _Fields(ctx)
    environment.put("R", "python", sys.version.split()[0])
    environment.lazy("R", "libraries", _library_versions)
    return {"objects": objects, "undefined": undefined, "environment": environment.result(),
            "capped": capped, "imported_by_inspection": sorted(top_modules() - before)}


def attribute_kind(obj: Any, name: str) -> str:
    """How ``obj.name`` would resolve, found without running any code of ``obj``:
    ``method``, ``function`` (of a module), ``class``, ``module``, ``property``,
    ``attribute``, ``column`` (of a DataFrame), ``dynamic`` (left to the object's own
    ``__getattr__``/``__getattribute__``: unknown) or ``missing``."""
    target = obj
    inner = vars(obj).get("_results") if hasattr(obj, "__dict__") else None
    if inner is not None and type(obj).__name__.endswith("ResultsWrapper"):  # statsmodels
        target = inner
    try:
        found = inspect.getattr_static(target, name)
    except AttributeError:
        if is_a(obj, "pandas", "DataFrame"):
            return "column" if name in obj.columns else "missing"
        if isinstance(obj, types.ModuleType):  # a module-level __getattr__ (lazy submodules)
            return "dynamic" if "__getattr__" in vars(obj) else "missing"
        return "dynamic" if _resolves_dynamically(type(target)) else "missing"
    if isinstance(found, types.ModuleType):
        return "module"
    if isinstance(found, type):
        return "class"
    if isinstance(found, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return "property"
    if isinstance(found, (staticmethod, classmethod)) or callable(found):
        return "function" if isinstance(obj, types.ModuleType) else "method"
    return "attribute"


def _resolves_dynamically(cls: type) -> bool:
    try:
        inspect.getattr_static(cls, "__getattr__")
        return True
    except AttributeError:
        # a __getattribute__ written in Python (C types keep the generic lookup)
        return isinstance(inspect.getattr_static(cls, "__getattribute__"), types.FunctionType)


# --------------------------------------------------------------------------- plumbing


class _Context:
    def __init__(self, categories: Iterable[str], options: Mapping[str, int] | None) -> None:
        self.categories = frozenset(categories)
        unknown = self.categories - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown categories {sorted(unknown)}; use S, R, V")
        self.options = {**DEFAULT_OPTIONS, **(options or {})}
        self.depth = 0

    def wants(self, category: str) -> bool:
        return category in self.categories


class _Fields:
    """The fields of one summary, by category; excluded categories are never computed."""

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self.data: dict[str, dict[str, Any]] = {c: {} for c in CATEGORIES}
        self.errors: dict[str, str] = {}

    def put(self, category: str, key: str, value: Any) -> None:
        if self.ctx.wants(category) and value is not None:
            self.data[category][key] = _plain(value, self.ctx)

    def lazy(self, category: str, key: str, compute: Callable[[], Any]) -> None:
        """Compute a field only if its category is wanted; an exception is noted, not raised."""
        if not self.ctx.wants(category):
            return
        try:
            value = compute()
        except Exception as error:
            self.errors[key] = _error_text(error)
            return
        self.put(category, key, value)

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {c: d for c, d in self.data.items() if d}
        if self.errors:
            out["errors"] = self.errors
        return out


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]


def _plain(value: Any, ctx: _Context, depth: int = 0) -> Any:
    """A JSON-safe copy of ``value`` (numbers, text, lists, dicts), bounded in size."""
    limit = ctx.options["max_repr"]
    if value is None or isinstance(value, (bool, str)):
        return value if not isinstance(value, str) else _cut(value, limit)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _float(value)
    module = type(value).__module__ or ""
    if module.startswith("numpy") and hasattr(value, "item"):
        try:
            return _plain(value.item(), ctx, depth)
        except (TypeError, ValueError):
            pass
    if depth > 4:
        return _short_repr(value, limit)
    if isinstance(value, Mapping):
        return {_cut(str(_plain(k, ctx, 9)), 80): _plain(v, ctx, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, ctx, depth + 1) for v in value]
    return _short_repr(value, limit)


def _float(value: float) -> float | str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(f"{value:.6g}")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _short_repr(value: Any, limit: int) -> str:
    try:
        text = repr(value)
    except Exception as error:
        text = f"<{type(value).__name__}: repr failed: {_error_text(error)}>"
    return _cut(_ADDRESS.sub("", text), limit)


def type_name(obj_or_type: Any) -> str:
    """``module.QualName`` of a type (``list`` for builtins)."""
    cls = obj_or_type if isinstance(obj_or_type, type) else type(obj_or_type)
    module = getattr(cls, "__module__", None) or ""
    name = getattr(cls, "__qualname__", None) or cls.__name__
    return name if module == "builtins" else f"{module}.{name}"


def _library_versions() -> dict[str, str]:
    """Versions of the :data:`LIBRARIES` the notebook imported: ``__version__`` when the
    module has it in its namespace, else the installed distribution's metadata."""
    out = {}
    distributions: Mapping[str, list[str]] | None = None
    for name, module in zip(LIBRARIES, loaded(*LIBRARIES), strict=True):
        if module is None:
            continue
        version = vars(module).get("__version__")
        if not isinstance(version, str):
            if distributions is None:
                distributions = importlib.metadata.packages_distributions()
            version = "unknown"
            for distribution in distributions.get(name, ()):
                try:
                    version = importlib.metadata.version(distribution)
                    break
                except importlib.metadata.PackageNotFoundError:
                    continue
        out[name] = version
    return out


# --------------------------------------------------------------------------- size caps


def fit(summary: dict[str, Any], limit: int) -> dict[str, Any]:
    """``summary`` within ``limit`` JSON characters: the largest field is cut in half (its
    list, dict or text), again and again, and dropped when it cannot shrink; categories
    and small fields stay as they are. ``truncated`` says what happened."""
    size = _size(summary)
    if size <= limit:
        return summary
    out: dict[str, Any] = json.loads(json.dumps(summary))
    out["truncated"] = {"chars": size, "limit": limit}
    while _size(out) > limit:
        fields = [(_size(v), c, k) for c in CATEGORIES if c in out for k, v in out[c].items()
                  if (c, k) != ("R", "type")] or [  # the type goes last
            (_size(v), c, k) for c in CATEGORIES if c in out for k, v in out[c].items()]
        if not fields:
            out.pop("errors", None)
            break
        field_size, category, key = max(fields)
        smaller = _halve(out[category][key])
        if smaller is None or _size(smaller) >= field_size:
            del out[category][key]
            if not out[category]:
                del out[category]
        else:
            out[category][key] = smaller
    return out


def fit_notebook(objects: dict[str, Any], limit: int,
                 object_limit: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """All summaries within ``limit`` JSON characters: the limit is shared out (small
    summaries keep their size, the larger ones share the rest and are cut to it), and
    if that is not enough, summaries are left out from the last read. Returns the
    summaries and the report (None when the cap was not hit)."""
    size = _size(objects)
    if size <= limit or not objects:
        return objects, None
    overhead = {name: len(json.dumps(name, ensure_ascii=False)) + 2 for name in objects}
    budget = limit - 2
    shares: dict[str, int] = {}
    pending = sorted(objects, key=lambda n: _size(objects[n]))
    while pending:
        fair = budget // len(pending)
        name = pending.pop(0)
        need = _size(objects[name]) + overhead[name]
        shares[name] = min(need, max(fair, 0))
        budget -= shares[name]
    out, shrunk = {}, []
    for name, summary in objects.items():
        smaller = fit(summary, max(min(shares[name] - overhead[name], object_limit), 1))
        if smaller is not summary:
            shrunk.append(name)
        out[name] = smaller
    omitted: list[str] = []
    while out and _size(out) > limit:
        name = list(out)[-1]
        omitted.insert(0, name)
        del out[name]
    return out, {"chars": size, "limit": limit, "shrunk": [n for n in shrunk if n in out],
                 "omitted": omitted}


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def _halve(value: Any) -> Any:
    """A smaller version of a field's value (half its entries or text), or None."""
    if isinstance(value, str):
        return _cut(value, len(value) // 2) if len(value) > 24 else None
    if isinstance(value, list):
        items, more = _split_marker(value)
        if len(items) <= 1:
            inner = _halve(items[0]) if items else None
            return None if inner is None else [inner, *_marker(more)]
        kept = items[: len(items) // 2]
        return [*kept, *_marker(more + len(items) - len(kept))]
    if isinstance(value, dict):
        more_text = value.get("…")
        more = int(more_text.split()[0]) if isinstance(more_text, str) and more_text.split()[0].isdigit() else 0
        keys = [k for k in value if k != "…"]
        if len(keys) <= 1:
            inner = _halve(value[keys[0]]) if keys else None
            return None if inner is None else {keys[0]: inner, **({"…": f"{more} more"} if more else {})}
        kept = keys[: len(keys) // 2]
        return {**{k: value[k] for k in kept}, "…": f"{more + len(keys) - len(kept)} more"}
    return None


def _split_marker(values: list[Any]) -> tuple[list[Any], int]:
    if values and isinstance(values[-1], str) and values[-1].startswith("… ") and values[-1].endswith(" more"):
        number = values[-1][2:-5]
        if number.isdigit():
            return values[:-1], int(number)
    return values, 0


def _marker(more: int) -> list[str]:
    return [f"… {more} more"] if more else []


# --------------------------------------------------------------------------- dispatch


def _describe(obj: Any, f: _Fields, ctx: _Context) -> None:
    for describe in _DESCRIBERS:
        if describe(obj, f, ctx):
            return


def _scalar(obj: Any, f: _Fields, ctx: _Context) -> bool:
    module = type(obj).__module__ or ""
    numpy_scalar = module.startswith("numpy") and hasattr(obj, "dtype") and getattr(obj, "shape", None) == ()
    if not (obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)) or numpy_scalar):
        return False
    f.put("R", "type", type_name(obj))
    if numpy_scalar:
        f.put("R", "dtype", str(obj.dtype))
    if isinstance(obj, (str, bytes)):
        f.put("S", "length", len(obj))
    if isinstance(obj, complex):
        f.put("V", "value", repr(obj))
    else:
        f.put("V", "value", obj)
    return True


def _module(obj: Any, f: _Fields, ctx: _Context) -> bool:
    if not isinstance(obj, types.ModuleType):
        return False
    f.put("R", "type", "module")
    f.put("R", "name", obj.__name__)
    f.put("R", "version", vars(obj).get("__version__"))
    return True


def _generator(obj: Any, f: _Fields, ctx: _Context) -> bool:
    state: str
    if inspect.isgenerator(obj):
        state = inspect.getgeneratorstate(obj)
    elif inspect.iscoroutine(obj):
        state = inspect.getcoroutinestate(obj)
    elif inspect.isasyncgen(obj):
        state = "running" if obj.ag_running else ("closed" if obj.ag_frame is None else "suspended")
    else:
        return False
    f.put("R", "type", type_name(obj))
    f.put("R", "function", getattr(obj, "__qualname__", None))
    state = state.split("_", 1)[-1].lower()  # GEN_CREATED → created
    f.put("V", "state", state)
    f.put("V", "advanced", state != "created")
    return True


def _iterator(obj: Any, f: _Fields, ctx: _Context) -> bool:
    """Any other iterator (its type has ``__next__``): described, never advanced."""
    if not hasattr(type(obj), "__next__"):
        return False
    f.put("R", "type", type_name(obj))
    f.put("R", "iterator", True)
    if type(obj).__module__ == "builtins":  # a C iterator's length hint reads, never advances
        f.lazy("S", "remaining", lambda: _hint(obj))
    for attribute in ("name", "mode"):  # open files
        value = vars(obj).get(attribute) if hasattr(obj, "__dict__") else None
        f.put("R", attribute, value if isinstance(value, str) else None)
    return True


def _hint(obj: Any) -> int | None:
    hint = operator.length_hint(obj, -1)
    return hint if hint >= 0 else None


def _class_or_callable(obj: Any, f: _Fields, ctx: _Context) -> bool:
    if not (isinstance(obj, type) or inspect.isroutine(obj)
            or isinstance(obj, (types.MethodType, functools.partial))):
        return False
    if isinstance(obj, type):
        f.put("R", "type", "class")
        f.put("R", "name", type_name(obj))
    else:
        f.put("R", "type", type_name(obj))
        f.put("R", "name", getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None))
        f.put("R", "module", getattr(obj, "__module__", None))
    f.lazy("R", "signature", lambda: _cut(str(inspect.signature(obj)), ctx.options["max_repr"] * 2))
    return True


# -- Python containers ---------------------------------------------------------------


def _container(obj: Any, f: _Fields, ctx: _Context) -> bool:
    k = ctx.options["max_items"]
    if isinstance(obj, range):
        f.put("R", "type", "range")
        f.put("S", "length", len(obj))
        f.put("V", "start", obj.start)
        f.put("V", "stop", obj.stop)
        f.put("V", "step", obj.step)
        return True
    if isinstance(obj, Mapping) and isinstance(obj, (dict, types.MappingProxyType)):
        f.put("R", "type", type_name(obj))
        f.put("S", "length", len(obj))
        keys = list(_first(obj.keys(), ctx.options["max_keys"]))
        f.put("S", "keys", keys + ([f"… {len(obj) - len(keys)} more"] if len(obj) > len(keys) else []))
        f.lazy("R", "key_types", lambda: _type_counts(_first(obj.keys(), 100)))
        f.lazy("R", "value_types", lambda: _type_counts(_first(obj.values(), 100)))
        f.lazy("V", "values", lambda: {str(_plain(key, ctx, 9)): brief(value, ctx)
                                       for key, value in _first(obj.items(), k)})
        return True
    if isinstance(obj, (list, tuple, set, frozenset, collections.deque)):
        f.put("R", "type", type_name(obj))
        f.put("S", "length", len(obj))
        f.lazy("R", "element_types", lambda: _type_counts(_first(obj, 100)))
        f.lazy("V", "examples", lambda: [brief(item, ctx) for item in _first(obj, k)])
        return True
    return False


def _first(values: Iterable[Any], n: int) -> list[Any]:
    """The first ``n`` of a container's values (containers only: never an iterator)."""
    out: list[Any] = []
    for value in values:
        if len(out) >= n:
            break
        out.append(value)
    return out


def _type_counts(values: Iterable[Any]) -> dict[str, int]:
    return dict(collections.Counter(type_name(v) for v in values).most_common())


def brief(obj: Any, ctx: _Context | None = None) -> str:
    """One line about a value: its type and shape or length, or its text for scalars."""
    ctx = ctx or _Context(CATEGORIES, None)
    limit = min(ctx.options["max_repr"], 80)
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return _short_repr(obj, limit)
    name = type(obj).__name__
    np, pd = loaded("numpy", "pandas")
    (torch,) = loaded("torch")
    if np is not None and isinstance(obj, np.generic):
        return f"{name} {_short_repr(obj, limit)}"
    if np is not None and isinstance(obj, np.ndarray):
        return f"ndarray {obj.dtype} {tuple(obj.shape)}"
    if pd is not None and isinstance(obj, pd.DataFrame):
        return f"DataFrame {tuple(obj.shape)}"
    if pd is not None and isinstance(obj, pd.Series):
        return f"Series {obj.dtype} ({len(obj)},)"
    if torch is not None and isinstance(obj, torch.Tensor):
        return f"Tensor {obj.dtype} {list(obj.shape)}"
    if _tf_kind(obj) in ("tensor", "variable"):
        return f"{name} {obj.dtype.name} {_tf_shape(obj)}"
    if isinstance(obj, (list, tuple, set, frozenset, dict, collections.deque)):
        return f"{type_name(obj)} of {len(obj)}"
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    if isinstance(obj, type):
        return f"class {type_name(obj)}"
    return _short_repr(obj, limit) if type(obj).__module__ == "builtins" else type_name(obj)


# -- NumPy -----------------------------------------------------------------------------


def _numpy(obj: Any, f: _Fields, ctx: _Context) -> bool:
    (np,) = loaded("numpy")
    if np is None or not isinstance(obj, np.ndarray):
        return False
    f.put("R", "type", type_name(obj))
    f.put("R", "dtype", str(obj.dtype))
    f.put("S", "shape", list(obj.shape))
    f.put("S", "size", int(obj.size))
    if ctx.wants("V"):
        _array_values(np, obj, f, ctx)
    return True


def _array_values(np: Any, array: Any, f: _Fields, ctx: _Context) -> None:
    kind = array.dtype.kind
    k = ctx.options["max_items"]
    if array.size == 0:
        f.put("V", "empty", True)
        return
    if kind in "iufb":
        if kind == "f":
            f.lazy("V", "has_nan", lambda: bool(np.isnan(array).any()))
        if kind != "b":
            f.lazy("V", "range", lambda: _finite_range(np, array))
    elif kind in "mM":
        f.lazy("V", "range", lambda: [str(array.min()), str(array.max())])
    if array.size <= ctx.options["max_unique_size"] and kind not in "cVO":
        f.lazy("V", "n_unique", lambda: len(np.unique(array if kind != "f" else array[~np.isnan(array)])))
    f.lazy("V", "examples", lambda: [brief(v, ctx) if kind == "O" else v
                                     for v in array.reshape(-1)[:k].tolist()])


def _finite_range(np: Any, array: Any) -> list[Any] | None:
    if array.dtype.kind == "f":
        finite = array[np.isfinite(array)]
        if finite.size == 0:
            return None
        return [finite.min().item(), finite.max().item()]
    return [array.min().item(), array.max().item()]


# -- pandas ----------------------------------------------------------------------------


def _pandas(obj: Any, f: _Fields, ctx: _Context) -> bool:
    (pd,) = loaded("pandas")
    if pd is None:
        return False
    if isinstance(obj, pd.DataFrame):
        _dataframe(pd, obj, f, ctx)
        return True
    if isinstance(obj, pd.Series):
        f.put("R", "type", type_name(obj))
        f.put("R", "dtype", str(obj.dtype))
        f.put("S", "length", len(obj))
        f.put("S", "name", obj.name)
        f.lazy("R", "index", lambda: _index_text(obj.index))
        if ctx.wants("V"):
            f.lazy("V", "values", lambda: _column_values(pd, obj, ctx))
        return True
    if isinstance(obj, pd.Index):
        f.put("R", "type", type_name(obj))
        f.put("R", "dtype", str(obj.dtype))
        f.put("S", "length", len(obj))
        f.lazy("V", "examples", lambda: [_plain(v, ctx) for v in obj[: ctx.options["max_items"]]])
        return True
    return False


def _dataframe(pd: Any, df: Any, f: _Fields, ctx: _Context) -> None:
    limit = ctx.options["max_columns"]
    n_columns = df.shape[1]
    shown = list(range(min(limit, n_columns)))
    labels = [_plain(df.columns[i], ctx, 9) for i in shown]
    more = [f"… {n_columns - len(shown)} more"] if n_columns > len(shown) else []
    f.put("R", "type", type_name(df))
    f.put("S", "shape", list(df.shape))
    f.put("S", "n_columns", n_columns)
    f.put("S", "columns", labels + more)
    f.lazy("R", "index", lambda: _index_text(df.index))
    f.lazy("R", "dtypes", lambda: {str(labels[i]): str(df.dtypes.iloc[i]) for i in shown})
    if not ctx.wants("V"):
        return
    missing = df.isna().any()
    f.put("V", "has_nan", bool(missing.any()))
    with_nan = [_plain(c, ctx, 9) for c, m in zip(df.columns, missing.tolist(), strict=False) if m]
    f.put("V", "columns_with_nan", with_nan[: ctx.options["max_keys"]] or None)
    per_column: dict[str, Any] = {}
    for i in shown:
        column = df.iloc[:, i]
        try:
            per_column[str(labels[i])] = _column_values(pd, column, ctx)
        except Exception as error:
            per_column[str(labels[i])] = {"error": _error_text(error)}
    f.put("V", "column_values", per_column)


def _index_text(index: Any) -> str:
    name = f" named {index.name!r}" if getattr(index, "name", None) is not None else ""
    return f"{type(index).__name__} of {len(index)} ({index.dtype}){name}"


def _column_values(pd: Any, column: Any, ctx: _Context) -> dict[str, Any]:
    """V of one column or Series: missing values, unique values, range or examples."""
    out: dict[str, Any] = {}
    k = ctx.options["max_items"]
    n_missing = int(column.isna().sum())
    if n_missing:
        out["n_missing"] = n_missing
    dtype = column.dtype
    kind = getattr(dtype, "kind", "O")
    with contextlib.suppress(TypeError):  # unhashable cells (lists)
        out["n_unique"] = int(column.nunique(dropna=True))
    if isinstance(dtype, pd.CategoricalDtype):
        categories = list(dtype.categories[: ctx.options["max_keys"]])
        out["categories"] = [_plain(c, ctx, 9) for c in categories]
    elif kind in "iuf" and len(column) > n_missing:
        low, high = column.min(), column.max()
        out["range"] = [_plain(low, ctx, 9), _plain(high, ctx, 9)]
    elif kind in "mM" and len(column) > n_missing:
        out["range"] = [str(column.min()), str(column.max())]
    if kind not in "iufmM" or isinstance(dtype, pd.CategoricalDtype):
        values = column.dropna()
        examples = []
        seen = set()
        for value in values.iloc[: 1000].tolist():  # distinct examples, in order of appearance
            key = repr(value)
            if key not in seen:
                seen.add(key)
                examples.append(_plain(value, ctx, 9))
            if len(examples) >= k:
                break
        out["examples"] = examples
    return out


# -- scikit-learn ------------------------------------------------------------------------


def _sklearn(obj: Any, f: _Fields, ctx: _Context) -> bool:
    (base,) = loaded("sklearn.base")
    if base is None or not isinstance(obj, base.BaseEstimator):
        return False
    f.put("R", "type", type_name(obj))
    f.lazy("R", "params", lambda: {k: brief(v, ctx) if not isinstance(v, (int, float, str, bool, type(None)))
                                   else v for k, v in obj.get_params(deep=False).items()
                                   if k != "steps"})
    steps = vars(obj).get("steps")
    if isinstance(steps, list):
        f.put("R", "steps", {str(name): type_name(step) for name, step in steps[: ctx.options["max_keys"]]})
    f.lazy("V", "fitted", lambda: _sklearn_fitted(obj))
    for attribute, category in (("n_features_in_", "S"), ("feature_names_in_", "S"),
                                ("n_outputs_", "S"), ("classes_", "V"), ("categories_", "V")):
        f.lazy(category, attribute.rstrip("_"), functools.partial(_fitted_attribute, obj, attribute, ctx))
    if ctx.wants("V") and "classes_" in vars(obj):
        f.lazy("V", "n_classes", lambda: len(obj.classes_))
    if "coef_" in vars(obj):
        f.lazy("S", "coef_shape", lambda: list(getattr(obj.coef_, "shape", ())))
    return True


def _sklearn_fitted(obj: Any) -> bool:
    """scikit-learn's own rule: ``__sklearn_is_fitted__`` or attributes ending in ``_``."""
    check = getattr(type(obj), "__sklearn_is_fitted__", None)
    if check is not None:
        return bool(obj.__sklearn_is_fitted__())
    return any(k.endswith("_") and not k.startswith("__") for k in vars(obj))


def _fitted_attribute(obj: Any, name: str, ctx: _Context) -> Any:
    """A fitted attribute, read from the instance (a pipeline's delegated ones via getattr)."""
    if name in vars(obj):
        value = vars(obj)[name]
    elif "steps" in vars(obj) and name in ("n_features_in_", "feature_names_in_", "classes_"):
        try:
            value = getattr(obj, name)
        except AttributeError:
            return None
    else:
        return None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        limit = ctx.options["max_keys"]
        cut = [v.tolist() if hasattr(v, "tolist") else v for v in value[:limit]]
        return cut + ([f"… {len(value) - limit} more"] if len(value) > limit else [])
    return value


# -- statsmodels -------------------------------------------------------------------------


def _statsmodels(obj: Any, f: _Fields, ctx: _Context) -> bool:
    wrapper, model = loaded("statsmodels.base.wrapper", "statsmodels.base.model")
    if model is None:
        return False
    is_results = isinstance(obj, model.Results) or (
        wrapper is not None and isinstance(obj, wrapper.ResultsWrapper))
    if is_results:
        fitted_model = obj.model
        f.put("R", "type", type_name(obj))
        f.put("R", "model", type_name(fitted_model))
        f.lazy("S", "nobs", lambda: obj.nobs)
        f.lazy("S", "n_params", lambda: len(obj.params))
        f.lazy("S", "exog_names", lambda: _cut_list(fitted_model.exog_names, ctx))
        f.lazy("S", "endog_names", lambda: fitted_model.endog_names)
        f.put("V", "fitted", True)
        return True
    if isinstance(obj, model.Model):
        f.put("R", "type", type_name(obj))
        f.lazy("S", "exog_names", lambda: _cut_list(obj.exog_names, ctx))
        f.lazy("S", "endog_names", lambda: obj.endog_names)
        f.lazy("S", "exog_shape", lambda: list(obj.exog.shape) if obj.exog is not None else None)
        f.put("V", "fitted", False)
        return True
    return False


def _cut_list(values: Any, ctx: _Context) -> Any:
    if not isinstance(values, list):
        return values
    limit = ctx.options["max_keys"]
    return values[:limit] + ([f"… {len(values) - limit} more"] if len(values) > limit else [])


# -- PyTorch ---------------------------------------------------------------------------


def _torch(obj: Any, f: _Fields, ctx: _Context) -> bool:
    torch, nn, data = loaded("torch", "torch.nn", "torch.utils.data")
    if torch is None:
        return False
    if isinstance(obj, torch.Tensor):
        _tensor(torch, obj, f, ctx)
        return True
    if nn is not None and isinstance(obj, nn.Module):
        f.put("R", "type", type_name(obj))
        f.lazy("R", "layers", lambda: {name: _cut(f"{type(child).__name__}({child.extra_repr()})", 120)
                                       for name, child in _first(obj.named_children(),
                                                                 ctx.options["max_keys"])})
        f.lazy("S", "n_parameters", lambda: sum(p.numel() for p in obj.parameters()))
        f.lazy("S", "n_trainable", lambda: sum(p.numel() for p in obj.parameters() if p.requires_grad))
        f.put("V", "training", bool(obj.training))
        return True
    if data is None:
        return False
    if isinstance(obj, data.DataLoader):
        _data_loader(data, obj, f, ctx)
        return True
    if isinstance(obj, data.IterableDataset):
        f.put("R", "type", type_name(obj))
        f.put("R", "style", "iterable (not iterated)")
        return True
    if isinstance(obj, data.Dataset):
        _map_dataset(obj, f, ctx)
        return True
    return False


def _tensor(torch: Any, t: Any, f: _Fields, ctx: _Context) -> None:
    f.put("R", "type", type_name(t))
    f.put("R", "dtype", str(t.dtype))
    f.put("R", "device", str(t.device))
    f.put("R", "requires_grad", bool(t.requires_grad))
    f.put("S", "shape", list(t.shape))
    f.put("S", "numel", int(t.numel()))
    if not ctx.wants("V") or t.numel() == 0 or t.device.type == "meta" or t.is_complex():
        return
    values = t.detach()
    if values.is_floating_point():
        f.lazy("V", "has_nan", lambda: bool(torch.isnan(values).any().item()))
        finite = values[torch.isfinite(values)]
        if finite.numel():
            f.lazy("V", "range", lambda: [finite.min().item(), finite.max().item()])
    elif values.dtype != torch.bool:
        f.lazy("V", "range", lambda: [values.min().item(), values.max().item()])
    if t.numel() <= ctx.options["max_unique_size"]:
        f.lazy("V", "n_unique", lambda: int(torch.unique(values).numel()))
    f.lazy("V", "examples", lambda: values.reshape(-1)[: ctx.options["max_items"]].tolist())


def _map_dataset(ds: Any, f: _Fields, ctx: _Context) -> None:
    f.put("R", "type", type_name(ds))
    f.put("R", "style", "map")
    sized = hasattr(type(ds), "__len__")
    if sized:
        f.lazy("S", "length", lambda: len(ds))
    if ctx.wants("V") and sized:
        def probe() -> list[Any]:
            count = min(len(ds), ctx.options.get("max_probe", 2))
            return [_brief_item(ds[i], ctx) for i in range(count)]
        f.lazy("V", "probed_items", probe)


def _brief_item(item: Any, ctx: _Context) -> Any:
    if isinstance(item, (tuple, list)):
        return [brief(v, ctx) for v in item[: ctx.options["max_items"]]]
    if isinstance(item, dict):
        return {str(k): brief(v, ctx) for k, v in _first(item.items(), ctx.options["max_items"])}
    return brief(item, ctx)


def _data_loader(data: Any, loader: Any, f: _Fields, ctx: _Context) -> None:
    """Described from its attributes: never iterated (that would start workers and read data)."""
    dataset = loader.dataset
    map_style = not isinstance(dataset, data.IterableDataset)
    f.put("R", "type", type_name(loader))
    f.put("R", "dataset_type", type_name(dataset))
    f.put("R", "sampler", type(loader.sampler).__name__)
    f.put("R", "collate_fn", getattr(loader.collate_fn, "__qualname__", None))
    f.put("R", "num_workers", loader.num_workers)
    f.put("S", "batch_size", loader.batch_size)
    f.put("S", "drop_last", loader.drop_last)
    if map_style and hasattr(type(dataset), "__len__"):
        f.lazy("S", "dataset_length", lambda: len(dataset))
        f.lazy("S", "n_batches", lambda: len(loader))  # arithmetic on the sampler's length
    f.put("V", "shuffle", type(loader.sampler).__name__ == "RandomSampler")
    if map_style and ctx.wants("V") and ctx.depth == 0:
        ctx.depth += 1
        try:
            inner = _Fields(ctx)
            _map_dataset(dataset, inner, ctx)
            f.put("V", "dataset_probed_items", inner.data["V"].get("probed_items"))
        finally:
            ctx.depth -= 1


# -- TensorFlow / Keras ----------------------------------------------------------------


def _tf_kind(obj: Any) -> str | None:
    if not any_loaded(("tensorflow",)):
        return None
    for module, name in mro(obj):
        if not module.startswith("tensorflow"):
            continue
        if name in ("Tensor", "EagerTensor", "_EagerTensorBase", "SymbolicTensor"):
            return "tensor"
        if name in ("Variable", "BaseResourceVariable", "ResourceVariable"):
            return "variable"
        if name == "DatasetV2":
            return "dataset"
    return None


def _tf_shape(t: Any) -> Any:
    shape = t.shape
    try:
        return shape.as_list()
    except ValueError:  # unknown rank
        return None


def _tensorflow(obj: Any, f: _Fields, ctx: _Context) -> bool:
    kind = _tf_kind(obj)
    if kind is None:
        return False
    f.put("R", "type", type_name(obj))
    if kind == "dataset":  # the element spec only: a dataset is never iterated
        f.lazy("R", "element_spec", lambda: _cut(str(obj.element_spec), ctx.options["max_repr"] * 3))
        return True
    f.put("R", "dtype", obj.dtype.name)
    f.lazy("S", "shape", lambda: _tf_shape(obj))
    eager = hasattr(obj, "numpy") and "Symbolic" not in type(obj).__name__
    (np,) = loaded("numpy")
    if ctx.wants("V") and eager and np is not None:
        try:
            values = obj.numpy()
        except Exception as error:
            f.errors["values"] = _error_text(error)
            return True
        if isinstance(values, np.ndarray):
            _array_values(np, values, f, ctx)
    return True


def _keras_image_iterator(obj: Any, f: _Fields, ctx: _Context) -> bool:
    """Keras' image iterators (``flow_from_directory``, ``flow_from_dataframe``, ``flow``):
    read from their instance attributes, never advanced."""
    if not any_loaded(("keras", "tensorflow", "tf_keras", "keras_preprocessing")):
        return False
    if not any(name == "Iterator" and "preprocessing" in module and "image" in module
               for module, name in mro(obj)):
        return False
    state = vars(obj)
    samples = state.get("samples", state.get("n"))
    batch_size = state.get("batch_size")
    f.put("R", "type", type_name(obj))
    for key in ("class_mode", "color_mode", "data_format", "dtype", "interpolation"):
        value = state.get(key)
        f.put("R", key, value if isinstance(value, (str, type(None))) else str(value))
    f.put("S", "samples", samples)
    f.put("S", "batch_size", batch_size)
    image_shape = state.get("image_shape")
    if image_shape is None and hasattr(state.get("x"), "shape"):
        image_shape = tuple(state["x"].shape[1:])
    f.put("S", "image_shape", list(image_shape) if image_shape is not None else None)
    f.put("S", "target_size", list(state["target_size"]) if state.get("target_size") else None)
    if isinstance(samples, int) and isinstance(batch_size, int) and batch_size > 0:
        f.put("S", "n_batches", math.ceil(samples / batch_size))
    indices = state.get("class_indices")
    if isinstance(indices, dict):
        f.put("V", "n_classes", len(indices))
        f.put("V", "class_indices", dict(_first(indices.items(), ctx.options["max_keys"])))
    classes = state.get("classes")
    if classes is not None and ctx.wants("V"):
        f.lazy("V", "class_counts", lambda: dict(_first(
            sorted(collections.Counter(_plain(c, ctx, 9) for c in list(classes)).items(),
                   key=lambda kv: str(kv[0])), ctx.options["max_keys"])))
    f.put("V", "shuffle", state.get("shuffle"))
    f.put("V", "batches_seen", state.get("total_batches_seen"))
    return True


def _keras_model(obj: Any, f: _Fields, ctx: _Context) -> bool:
    if not any_loaded(("keras", "tensorflow", "tf_keras")):
        return False
    if not any(name in ("Layer", "Model") and module.startswith(("keras", "tf_keras", "tensorflow"))
               for module, name in mro(obj)):
        return False
    f.put("R", "type", type_name(obj))
    f.put("R", "name", vars(obj).get("name") if isinstance(vars(obj).get("name"), str) else None)
    if any(name == "Model" for _, name in mro(obj)):
        f.lazy("R", "layers", lambda: [f"{getattr(layer, 'name', '?')}: {type(layer).__name__}"
                                       for layer in list(obj.layers)[: ctx.options["max_keys"]]])
    built = bool(getattr(obj, "built", False))
    if built:
        f.lazy("S", "input_shape", lambda: _shape_text(obj.input_shape))
        f.lazy("S", "output_shape", lambda: _shape_text(obj.output_shape))
        f.lazy("S", "n_parameters", lambda: int(obj.count_params()))
    f.put("V", "built", built)
    return True


def _shape_text(shape: Any) -> Any:
    if isinstance(shape, tuple):
        return [None if d is None else d for d in shape]
    return str(shape)


# -- anything else -----------------------------------------------------------------------


def _generic(obj: Any, f: _Fields, ctx: _Context) -> bool:
    f.put("R", "type", type_name(obj))
    if hasattr(type(obj), "__len__"):
        f.lazy("S", "length", lambda: len(obj))
    f.lazy("V", "repr", lambda: _short_repr(obj, ctx.options["max_repr"]))
    if type(obj).__module__ == "__main__" and hasattr(obj, "__dict__"):  # the notebook's own class
        f.lazy("V", "fields", lambda: {k: brief(v, ctx) for k, v in _first(vars(obj).items(),
                                                                           ctx.options["max_keys"])})
    return True


#: Describers, most specific first; the first that recognises the object wins.
_DESCRIBERS: tuple[Callable[[Any, _Fields, _Context], bool], ...] = (
    _scalar, _module, _generator, _numpy, _pandas, _sklearn, _statsmodels, _torch,
    _tensorflow, _keras_image_iterator, _keras_model, _class_or_callable, _iterator,
    _container, _generic,
)
