"""Runtime information in CRANE-LLM's format (``runtime-info --style crane``).

CRANE-LLM (the runtime-augmented study) gave its models a ``pprint``-ed Python dict under
the heading ``# Current relevent runtime information:``: one entry per name the target
cell reads (``df``), one per attribute it uses on a name (``__method__df_groupby``), each
a summary with CRANE-LLM's field names, as its summariser configuration
(``runinfo_parser/summarize_config.json``) enables them:

- every value: ``type`` (``str(type(value))``, such as ``"<class 'list'>"``; the rules
  for NumPy arrays, pandas objects and data sets write the full name,
  ``'pandas.core.frame.DataFrame'``); a callable gets nothing else (no signature unless
  ``signatures`` is asked for: CRANE-LLM counted signatures as API grounding, not runtime
  information);
- names the executed cells define: ``execution_cell_source``, the code-cell index
  (``cellno``, from 0) and line (``lineno``, from 1) of the last definition that ran
  (plain assignments to a name, annotated assignments, ``def`` and ``class``);
- containers ``length``; scalars ``value``; dicts ``length`` and what they look like
  (training history, scikit-learn data set, scalar metrics, else a ``preview``);
- NumPy arrays ``shape``, ``dtype``, ``has_nan``, ``value_range``; pandas Series
  ``dtype``, ``length``, ``has_nan``; one-dimensional arrays, Series, tensors and lists
  ``value_info`` (``value_type`` binary / categorical numeric / continuous / categorical
  or object, ``num_unique``, ``unique_values`` or ``value_range``);
- DataFrames ``shape``, ``has_nan`` and ``per_column`` (the first 20 columns, then the
  key is ``per_column_max_20``): per column ``dtype``, semantic ``type`` (``binary``,
  ``categorical_numeric``, ``continuous``, ``categorical``), ``num_unique``, and
  ``value_range`` or ``unique_values`` (at most 5) or ``example_values`` (5);
- PyTorch tensors, data loaders and subsets, TensorFlow data sets, Keras directory and
  DataFrame iterators, scikit-learn estimators (``is_fitted``, ``fitted_attributes``) and
  label encoders, with CRANE-LLM's fields.

CRANE-LLM drew the example values of a column at random from the notebook's own NumPy
generator; here they are drawn by a private generator with a fixed seed, so the
notebook's random state is not touched and the same kernel state gives the same text.
``--exclude`` drops CRANE-LLM's feature categories (structural, representation with the
fitted state, values), as its ablations did.

Like :mod:`junobench.runtime.summarise`, this module runs **inside the notebook's
kernel**: it imports only the standard library and uses a library only when the
notebook already imported it (found in ``sys.modules``). Summaries travel as JSON in a
form that keeps tuples and the text of other objects (:func:`encode`), so the host
prints them exactly as CRANE-LLM's ``pprint`` did (:func:`text`).

>>> print(text({"x": {"type": "<class 'int'>", "value": 3, "execution_cell_source":
...                    {"cellno": 0, "lineno": 1}}}))
{'x': {'execution_cell_source': {'cellno': 0, 'lineno': 1},
       'type': "<class 'int'>",
       'value': 3}}
"""

from __future__ import annotations

import ast
import contextlib
import math
import pprint
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from junobench.runtime.probes import loaded, top_modules

STYLE = "crane"
#: CRANE-LLM's feature categories, by field name (S structural, R representation with the
#: fitted state, V values); unknown fields are kept.
FEATURES: dict[str, str] = {
    **dict.fromkeys(("shape", "length", "n_samples", "dataset_shape", "data_shape",
                     "target_shape", "sample_shapes", "batch_shapes", "image_shape",
                     "target_size", "n_examples", "num_batches", "n_epochs", "samples",
                     "batch_size"), "S"),
    **dict.fromkeys(("type", "dtype", "dtypes_summary", "key_type", "value_type",
                     "classes_dtype", "module", "device", "requires_grad", "element_spec",
                     "is_fitted", "fitted_attributes"), "R"),
    **dict.fromkeys(("value_info", "has_nan", "value_range", "num_unique", "unique_values",
                     "example_values", "detected", "metrics", "value_repr", "preview",
                     "class_mode", "num_classes", "n_classes", "class_name", "final_values",
                     "keys", "per_column", "value"), "V"),
}
ORIGIN = "execution_cell_source"
DEFAULT_MAX_COLUMNS = 20
_SHOWN = 5


class Shown:
    """An object shown by its text (``repr``), as ``pprint`` shows objects it does not know."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shown) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


# --------------------------------------------------------------------------- where names come from


def definitions(source: str) -> list[tuple[str, int]]:
    """``(name, line)`` of each definition in a cell, in the order CRANE-LLM's tracker
    visited them: assignments to a plain name, annotated assignments, ``def``, ``async
    def`` and ``class``, at any depth. A cell that does not parse defines nothing."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            found.extend((t.id, node.lineno) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, node.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.name, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def origins(cells: Iterable[tuple[int, str]]) -> dict[str, dict[str, int]]:
    """Name → ``{"cellno", "lineno"}`` of its last definition, over ``(code-cell index,
    source)`` pairs in execution order."""
    out: dict[str, dict[str, int]] = {}
    for index, source in cells:
        for name, line in definitions(source):
            out[name] = {"cellno": index, "lineno": line}
    return out


# --------------------------------------------------------------------------- summaries


def summarise(value: Any, *, max_columns: int = DEFAULT_MAX_COLUMNS,
              signatures: bool = False) -> dict[str, Any]:
    """CRANE-LLM's summary of one value (see the module docstring)."""
    summary: dict[str, Any] = {"type": str(type(value))}
    if callable(value):
        if signatures:
            import inspect

            with contextlib.suppress(TypeError, ValueError):
                summary["signature"] = str(inspect.signature(value))
        return summary
    for rule in _RULES:  # in CRANE-LLM's order: later rules overwrite earlier fields
        try:
            found = rule(value, max_columns) if rule is _dataframe else rule(value)
        except Exception:  # a rule that fails adds nothing, as in CRANE-LLM
            continue
        if found:
            summary.update(found)
    return summary


def _full_name(value: Any) -> str:
    """``module.Name`` of the value's type, the module being the one that defines it: a
    library that re-labels its public classes (pandas 3 says ``pandas.DataFrame``) is
    seen through to the module of the class's own functions (``pandas.core.frame``), the
    name CRANE-LLM's rules printed."""
    cls = type(value)
    module = getattr(cls, "__module__", "") or ""
    homes = {getattr(f, "__module__", None) for f in vars(cls).values() if callable(f)}
    found = sorted(home for home in homes if isinstance(home, str)
                   and home.startswith(module + ".")
                   and vars(sys.modules.get(home, sys)).get(cls.__name__) is cls)
    return f"{found[0] if len(found) == 1 else module}.{cls.__name__}"


def _collection(value: Any) -> dict[str, Any] | None:
    if isinstance(value, (list, tuple, dict, set)):
        return {"length": len(value)}
    return None


def _column(pd: Any, np: Any, df: Any, column: Any) -> dict[str, Any]:
    data = df[column].dropna()
    unique = data.unique()
    count = len(unique)
    out: dict[str, Any] = {"dtype": str(df[column].dtype)}
    if pd.api.types.is_numeric_dtype(data):
        if count == 2 and set(unique.tolist()) <= {0, 1}:
            out["type"] = "binary"
        elif pd.api.types.is_integer_dtype(data) and count <= 10:
            out["type"] = "categorical_numeric"
        else:
            out["type"] = "continuous"
        out["num_unique"] = count
        out["value_range"] = (data.min(), data.max())
        return out
    out["type"] = "categorical"
    out["num_unique"] = count
    values = list(unique.tolist()) if hasattr(unique, "tolist") else list(unique)
    if count <= _SHOWN:
        out["unique_values"] = [_truncate(v) for v in values[:_SHOWN]]
    else:
        picked = random.Random(0).sample(range(count), _SHOWN)
        out["example_values"] = [_truncate(values[i]) for i in picked]
    return out


def _truncate(value: Any, limit: int = 20) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "..."
    return value


def _dataframe(value: Any, max_columns: int = DEFAULT_MAX_COLUMNS) -> dict[str, Any] | None:
    pd, np = loaded("pandas", "numpy")
    if pd is None or np is None or not isinstance(value, pd.DataFrame):
        return None
    summary: dict[str, Any] = {"type": _full_name(value), "shape": value.shape,
                               "has_nan": value.isnull().values.any()}
    key = f"per_column_max_{max_columns}" if value.shape[1] > max_columns else "per_column"
    summary[key] = {column: _column(pd, np, value, column)
                    for column in list(value.columns)[:max_columns]}
    return summary


def _dataframe_iterator(value: Any) -> dict[str, Any] | None:
    if type(value).__name__ != "DataFrameIterator":
        return None
    return {"type": _full_name(value), "n_samples": getattr(value, "n", None),
            "samples": getattr(value, "samples", None),
            "batch_size": getattr(value, "batch_size", None),
            "image_shape": getattr(value, "image_shape", None),
            "class_mode": getattr(value, "class_mode", None),
            "num_classes": len(value.class_indices) if hasattr(value, "class_indices") else None}


def _dict(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    summary: dict[str, Any] = {"type": str(type(value)), "length": len(value)}
    keys = list(value)
    values = list(value.values())
    numbers = (int, float)
    if values and all(isinstance(v, list) and all(isinstance(x, numbers) for x in v)
                      for v in values) and len({len(v) for v in values}) == 1:
        summary.update(detected="training_history_dict", metrics=keys, n_epochs=len(values[0]))
        return summary
    if {"data", "target"} <= set(keys):
        summary.update(detected="sklearn_dataset_dict", keys=keys,
                       data_shape=getattr(value.get("data"), "shape", None),
                       target_shape=getattr(value.get("target"), "shape", None))
        return summary
    if all(isinstance(v, numbers) for v in values):
        summary.update(detected="scalar_metrics_dict", metrics=keys)
        return summary
    preview = []
    for k, v in list(value.items())[:_SHOWN]:
        try:
            key, text = str(k), repr(v)
        except Exception:
            continue
        preview.append({"key": key[:30] + "..." if len(key) > 30 else key,
                        "key_type": str(type(k)),
                        "value_repr": text[:50] + "..." if len(text) > 50 else text,
                        "value_type": str(type(v))})
    summary["preview"] = preview
    return summary


def _directory_iterator(value: Any) -> dict[str, Any] | None:
    cls = type(value)
    if cls.__name__ != "DirectoryIterator" or "keras" not in cls.__module__:
        return None
    return {"n_samples": getattr(value, "n", None),
            "num_classes": getattr(value, "num_classes", None),
            "batch_size": getattr(value, "batch_size", None),
            "image_shape": getattr(value, "image_shape", None),
            "target_size": getattr(value, "target_size", None)}


def _label_encoder(value: Any) -> dict[str, Any] | None:
    cls = type(value)
    if cls.__name__ != "LabelEncoder" or "sklearn.preprocessing" not in cls.__module__:
        return None
    summary: dict[str, Any] = {"type": _full_name(value)}
    if hasattr(value, "classes_"):
        summary["n_classes"] = len(value.classes_)
        summary["classes_dtype"] = getattr(value.classes_, "dtype", None)
    return summary


def _numpy_array(value: Any) -> dict[str, Any] | None:
    (np,) = loaded("numpy")
    if np is None or not isinstance(value, np.ndarray):
        return None
    summary: dict[str, Any] = {"type": _full_name(value), "shape": value.shape,
                               "dtype": str(value.dtype)}
    with contextlib.suppress(TypeError):
        summary["has_nan"] = bool(np.isnan(value).any())
    if np.issubdtype(value.dtype, np.number):
        summary["value_range"] = ((np.nanmin(value), np.nanmax(value)) if value.size > 0
                                  else "empty array")
    return summary


def _series(value: Any) -> dict[str, Any] | None:
    (pd,) = loaded("pandas")
    if pd is None or not isinstance(value, pd.Series):
        return None
    return {"type": _full_name(value), "dtype": str(value.dtype), "length": len(value),
            "has_nan": bool(value.isna().any())}


def _primitive(value: Any) -> dict[str, Any] | None:
    if isinstance(value, (int, float, str, bool)):
        return {"value": value}
    return None


def _is_tensor(value: Any) -> bool:
    return type(value).__name__ == "Tensor" and "torch" in type(value).__module__


def _loader_dataset(dataset: Any, collate: Any = None, probes: int = 10) -> dict[str, Any] | None:
    if dataset is None:
        return None
    info: dict[str, Any] = {}
    for key, field in vars(dataset).items():
        if _is_tensor(field):
            info[key] = {"dataset_shape": tuple(field.shape), "dtype": field.dtype}
        else:
            info[key] = {"type": type(field).__name__}
    shapes: dict[str, set[Any]] = {}
    samples = []
    for index in range(min(probes, len(dataset))):
        try:
            sample = dataset[index]
        except Exception:
            continue
        samples.append(sample)
        if isinstance(sample, (tuple, list)):
            for position, item in enumerate(sample):
                key = "input" if position == 0 else "label" if position == 1 else f"field[{position}]"
                if _is_tensor(item):
                    shapes.setdefault(key, set()).add(item.shape)
                elif hasattr(item, "size") and callable(item.size):
                    shapes.setdefault(key, set()).add(f"PIL({item.size[0]}x{item.size[1]})")
                else:
                    shapes.setdefault(key, set()).add(type(item).__name__)
        elif isinstance(sample, dict):
            for key, item in sample.items():
                shapes.setdefault(key, set()).add(getattr(item, "shape", type(item).__name__))
        elif _is_tensor(sample):
            shapes.setdefault("data", set()).add(sample.shape)
        elif hasattr(sample, "__dict__"):
            for key, item in vars(sample).items():
                shapes.setdefault(key, set()).add(getattr(item, "shape", type(item).__name__))
        else:
            shapes.setdefault("unknown", set()).add(type(sample).__name__)
    batch: dict[str, Any] = {}
    if collate is not None and samples:
        try:
            made = collate(samples)
            if isinstance(made, dict):
                batch = {f"batch.{k}": getattr(v, "shape", type(v).__name__) for k, v in made.items()}
            elif isinstance(made, (tuple, list)):
                batch = {f"batch[{i}]": getattr(v, "shape", type(v).__name__)
                         for i, v in enumerate(made)}
            else:
                batch = {"batch": made.shape if _is_tensor(made) else type(made).__name__}
        except Exception as error:
            batch = {"error": f"collate_fn failed: {error}"}
    return {"dataset_info": info, "sample_shapes": shapes, "batch_shapes": batch}


def _data_loader(value: Any) -> dict[str, Any] | None:
    cls = type(value)
    if cls.__name__ != "DataLoader" or not cls.__module__.startswith("torch.utils.data"):
        return None
    dataset = getattr(value, "dataset", None)
    return {"type": _full_name(value), "num_batches": len(value),
            "num_examples": len(dataset) if dataset is not None else None,
            "batch_size": getattr(value, "batch_size", None),
            "dataset": _loader_dataset(dataset, getattr(value, "collate_fn", None))}


def _subset(value: Any) -> dict[str, Any] | None:
    (data,) = loaded("torch.utils.data")
    if data is None or not isinstance(value, data.Subset):
        return None
    return {"type": _full_name(value), "length": len(value),
            "underlying_dataset": _loader_dataset(value.dataset)}


def _sklearn_model(value: Any) -> dict[str, Any] | None:
    cls = type(value)
    if not (getattr(cls, "__module__", "") or "").startswith("sklearn."):
        return None
    summary: dict[str, Any] = {"type": str(cls), "class_name": cls.__name__,
                               "module": cls.__module__, "is_fitted": False}
    (validation,) = loaded("sklearn.utils.validation")
    try:
        if validation is None:
            raise LookupError
        validation.check_is_fitted(value)
        summary["is_fitted"] = True
    except Exception:
        summary["is_fitted"] = False
    if summary["is_fitted"]:
        summary["fitted_attributes"] = {"n_features_in_": getattr(value, "n_features_in_", None),
                                        "n_outputs_": getattr(value, "n_outputs_", None)}
    return summary


def _tf_dataset(value: Any) -> dict[str, Any] | None:
    cls = type(value)
    if not cls.__name__.endswith("Dataset") or not cls.__module__.startswith("tensorflow."):
        return None
    summary: dict[str, Any] = {"type": _full_name(value)}
    with contextlib.suppress(Exception):
        summary["element_spec"] = repr(value.element_spec)
    return summary


def _torch_tensor(value: Any) -> dict[str, Any] | None:
    if not _is_tensor(value):
        return None
    summary: dict[str, Any] = {"type": str(type(value)),
                               "shape": tuple(value.shape) if hasattr(value, "shape") else None,
                               "dtype": str(getattr(value, "dtype", None)),
                               "device": str(getattr(value, "device", None)),
                               "requires_grad": getattr(value, "requires_grad", None)}
    with contextlib.suppress(Exception):
        summary["has_nan"] = bool(value.isnan().any().item())
    return summary


def _value_range(value: Any) -> dict[str, Any] | None:
    np, pd = loaded("numpy", "pandas")
    if np is None or pd is None:
        return None
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    elif hasattr(value, "numpy"):
        value = value.numpy()
    elif isinstance(value, list):
        value = np.array(value)
    if getattr(value, "ndim", 1) > 1 or not isinstance(value, (pd.Series, np.ndarray)):
        return None
    data = (value if isinstance(value, pd.Series) else pd.Series(value)).dropna()
    unique = data.unique()
    count = len(unique)
    if pd.api.types.is_numeric_dtype(data):
        if count == 2 and set(unique.tolist()) <= {0, 1}:
            info: dict[str, Any] = {"value_type": "binary",
                                    "unique_values": sorted(unique.tolist())}
        elif count <= 10 and pd.api.types.is_integer_dtype(data):
            info = {"value_type": "categorical numeric(no more than 10 unique values)",
                    "num_unique": count}
            if count <= _SHOWN:
                info["unique_values"] = sorted(unique.tolist())
        else:
            info = {"value_type": "continuous", "value_range": (data.min(), data.max())}
    else:
        info = {"value_type": "categorical or object", "num_unique": count}
        if count <= _SHOWN:
            info["unique_values"] = list(unique.tolist())
    return {"value_info": info}


# CRANE-LLM applied its rules in the order of their names (summarize_collection,
# summarize_dataframe, …, summarize_value_range).
_RULES = (_collection, _dataframe, _dataframe_iterator, _dict, _directory_iterator,
          _label_encoder, _numpy_array, _series, _primitive, _data_loader, _subset,
          _sklearn_model, _tf_dataset, _torch_tensor, _value_range)


# --------------------------------------------------------------------------- categories


def drop(summaries: Mapping[str, Any], exclude: Iterable[str]) -> dict[str, Any]:
    """``summaries`` without the fields of the ``exclude`` categories (S, R, V), as
    CRANE-LLM's ablations filtered them: names stay, their fields are filtered at every
    depth (``per_column…`` as ``per_column``), ``execution_cell_source`` always stays, an
    entry or a nested dict left empty goes."""
    dropped = {c.upper() for c in exclude}
    if not dropped:
        return dict(summaries)

    def keep(data: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key == ORIGIN:
                out[key] = value
                continue
            per_column = isinstance(key, str) and key.startswith("per_column")
            category = FEATURES.get("per_column" if per_column else key)
            if category in dropped:
                continue
            if isinstance(value, dict):
                inner = keep(value)
                if inner:
                    out[key] = inner
            else:
                out[key] = value
        return out

    out = {}
    for name, summary in summaries.items():
        inner = keep(summary) if isinstance(summary, dict) else summary
        if inner:
            out[name] = inner
    return out


# --------------------------------------------------------------------------- transport and text


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` with what ``pprint`` would show of it: NumPy scalars as Python numbers (as
    NumPy prints them), tuples, lists, sets and dicts as themselves, other objects as
    their text (:class:`Shown`)."""
    module = type(value).__module__ or ""
    if module == "numpy" and hasattr(value, "item") and getattr(value, "shape", None) == ():
        kind = getattr(getattr(value, "dtype", None), "kind", "")
        if kind == "f":  # np.float64 is a float too: its text is NumPy's, of its precision
            return float(str(value))
        if kind in ("i", "u", "b"):
            return value.item()
    if value is None or type(value) in (bool, int, str, float) or isinstance(value, Shown):
        return value
    if depth > 20:
        return Shown(_text_of(value))
    if isinstance(value, dict):
        return {plain(k, depth + 1): plain(v, depth + 1) for k, v in value.items()}
    if type(value) in (tuple, list, set):
        items = [plain(v, depth + 1) for v in value]
        return tuple(items) if isinstance(value, tuple) else set(items) if isinstance(value, set) else items
    return Shown(_text_of(value))


def _text_of(value: Any) -> str:
    try:
        return repr(value)
    except Exception as error:
        return f"<{type(value).__name__}: repr failed: {type(error).__name__}>"


def encode(value: Any) -> Any:
    """A JSON value for a :func:`plain` value: tuples, sets, shown objects, non-text keys
    and non-finite floats tagged so that :func:`decode` gives them back."""
    if isinstance(value, Shown):
        return {"__shown__": value.text}
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, set):
        return {"__set__": [encode(v) for v in sorted(value, key=repr)]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    return value


def decode(value: Any) -> Any:
    """The :func:`plain` value of an :func:`encode`-d one."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (key, inner), = value.items()
        if key == "__shown__" and isinstance(inner, str):
            return Shown(inner)
        if key == "__float__" and inner in ("nan", "inf", "-inf"):
            return float(inner)
        if key == "__tuple__" and isinstance(inner, list):
            return tuple(decode(v) for v in inner)
        if key == "__set__" and isinstance(inner, list):
            return {_hashable(decode(v)) for v in inner}
        if key == "__dict__" and isinstance(inner, list) and all(
                isinstance(pair, list) and len(pair) == 2 for pair in inner):
            return {_hashable(decode(k)): decode(v) for k, v in inner}
    return {k: decode(v) for k, v in value.items()}


def _hashable(value: Any) -> Any:
    """``value``, or its text when it cannot be a key (only in a file not written here)."""
    try:
        hash(value)
    except TypeError:
        return Shown(_text_of(value))
    return value


def text(summaries: Mapping[str, Any]) -> str:
    """The prompt text: ``pprint`` of the summaries, as CRANE-LLM printed them."""
    return pprint.pformat(dict(summaries))


# --------------------------------------------------------------------------- type annotations

#: Kinds CRANE-LLM gave no annotation (uninformative to an analyser).
_UNANNOTATED = frozenset({"module", "type", "function", "method", "builtin_function_or_method",
                          "ABCMeta"})


def public_type(value: Any) -> str | None:
    """The dotted name an analyser can resolve for ``value``'s type: a builtin's name
    (``list``), else the shortest public module path (no ``_`` part) that exports the
    class itself (``pandas.core.frame.DataFrame`` → ``pandas.DataFrame``), trying the
    class's bases in order when it has none (a ``_PrefetchDataset`` →
    ``tensorflow.data.Dataset``), else the type's own full name;
    None for modules, functions, methods, classes and types defined in the notebook."""
    cls = type(value)
    if cls.__name__ in _UNANNOTATED or (cls.__module__ or "").startswith("__main__"):
        return None
    for base in cls.__mro__:
        if base is object:
            break
        module = base.__module__ or ""
        if module == "builtins":
            return base.__name__
        if base.__name__.startswith("_"):
            continue
        parts = module.split(".")
        for end in range(1, len(parts) + 1):
            if parts[end - 1].startswith("_"):
                break  # a private module is no public home
            home = ".".join(parts[:end])
            (found,) = loaded(home)
            if found is not None and vars(found).get(base.__name__) is base:
                return f"{home}.{base.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


# --------------------------------------------------------------------------- in the kernel


def inspect_namespace(namespace: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """CRANE-LLM's runtime information from a kernel's user namespace: the names of
    ``request["names"]`` in it, then ``__method__<name>_<attribute>`` for each attribute of
    ``request["attributes"]`` the object has (found with ``hasattr``, as CRANE-LLM did),
    each with its ``execution_cell_source`` from ``request["origins"]``; fields of the
    categories not in ``request["categories"]`` are dropped. Returns ``objects``
    (:func:`encode`-d), ``undefined``, ``environment`` (empty: not part of this format),
    ``capped`` (None), ``annotations`` (name → :func:`public_type`, for the static
    analysers) and ``imported_by_inspection``."""
    import builtins

    before = top_modules()
    options = request.get("options") or {}
    max_columns = int(options.get("max_columns", DEFAULT_MAX_COLUMNS))
    signatures = bool(request.get("signatures"))
    hidden = set(request.get("hidden", ()))
    bound = set(request.get("bound", ()))
    found_origins: Mapping[str, Any] = request.get("origins") or {}
    summaries: dict[str, Any] = {}
    annotations: dict[str, str] = {}
    undefined: list[str] = []
    for name in request.get("names", ()):
        if name in namespace and name not in hidden:
            try:
                summary = summarise(namespace[name], max_columns=max_columns,
                                    signatures=signatures)
                kind = public_type(namespace[name])
            except Exception:
                continue
            if kind is not None:
                annotations[name] = kind
            if name in found_origins:
                summary[ORIGIN] = dict(found_origins[name])
            summaries[name] = summary
        elif name not in namespace and name not in vars(builtins) and name not in bound:
            undefined.append(name)
    attributes: Mapping[str, Sequence[str]] = request.get("attributes") or {}
    for name, names in attributes.items():
        if name not in namespace or name in hidden:
            continue
        for attribute in names:
            try:
                obj = namespace[name]
                if not hasattr(obj, attribute):
                    continue
                summary = summarise(getattr(obj, attribute), max_columns=max_columns,
                                    signatures=signatures)
            except Exception:
                continue
            summaries[f"__method__{name}_{attribute}"] = summary
    excluded = [c for c in ("S", "R", "V") if c not in request.get("categories", "SRV")]
    kept = drop({k: plain(v) for k, v in summaries.items()}, excluded)
    return {"objects": {k: encode(v) for k, v in kept.items()}, "undefined": undefined,
            "environment": {}, "capped": None, "annotations": annotations,
            "imported_by_inspection": sorted(top_modules() - before)}
