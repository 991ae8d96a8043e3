"""Object summaries, in-process (the same code runs inside kernels): categories, iterators
left alone, libraries never imported, size caps."""

from __future__ import annotations

import ast
import importlib.abc
import importlib.util
import inspect
import itertools
import json
import sys
import types

import numpy as np
import pandas as pd
import pytest

from junobench.runtime import summarise as summarise_module
from junobench.runtime.summarise import (
    CATEGORIES,
    attribute_kind,
    fit,
    inspect_namespace,
    summarise,
)

UNIMPORTED = ("torch", "torchvision", "tensorflow", "keras", "tf_keras", "jax", "lightgbm", "xgboost")


class Point:  # a class of the notebook's own
    def __init__(self) -> None:
        self.x, self.y = 1, [1, 2]


Point.__module__ = "__main__"


def gallery() -> dict[str, object]:
    """One object of each kind the summariser knows (plus some it does not). statsmodels
    and scikit-learn (~2 s to import) are imported here, not when every worker collects."""
    import statsmodels.api as sm
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import LabelEncoder, StandardScaler

    frame = pd.DataFrame({"age": [22.0, None, 35.0], "sex": ["m", "f", "m"],
                          "when": pd.to_datetime(["2020-01-01", "2021-06-01", "2022-01-01"]),
                          "grade": pd.Categorical(["a", "b", "a"])})
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 1, 0, 1, 1, 0])
    results = sm.OLS(np.arange(6.0) + np.array([0, 1, 0, 1, 0, 1]), sm.add_constant(X[:, 0])).fit()
    return {
        "frame": frame, "series": frame["age"], "index": frame.columns,
        "floats": np.array([1.0, np.nan, 3.0]), "ints": y, "objects": np.array([Point(), "a"], dtype=object),
        "fitted": LogisticRegression().fit(X, y), "unfitted": LinearRegression(),
        "encoder": LabelEncoder().fit(["cat", "dog", "cat"]),
        "pipeline": make_pipeline(StandardScaler(), LinearRegression()).fit(X, y),
        "results": results, "model": sm.OLS(np.arange(6.0), X),
        "a_list": [1, "two", frame], "a_dict": {"k": X, 2: "v"}, "a_tuple": (1, 2.5), "a_set": {3, 1},
        "text": "hello", "number": 3, "real": 2.5, "nothing": None, "np_scalar": np.float32(1.5),
        "generator": (i for i in range(3)), "iterator": iter([1, 2]), "a_range": range(2, 10, 2),
        "module": np, "function": np.mean, "builtin": len, "cls": LinearRegression,
        "point": Point(), "other": object(),
    }


@pytest.mark.parametrize("excluded", CATEGORIES)
def test_excluding_a_category_removes_its_fields_and_nothing_else(excluded):
    for name, obj in gallery().items():
        full = summarise(obj, attributes=["fit", "shape", "nope"])
        without = summarise(obj, categories=[c for c in CATEGORIES if c != excluded],
                            attributes=["fit", "shape", "nope"])
        assert excluded not in without, name
        assert {c: without.get(c) for c in CATEGORIES if c != excluded} == {
            c: full.get(c) for c in CATEGORIES if c != excluded}, name
    # and the categories do carry fields: each is present for most objects
    fulls = [summarise(obj) for obj in gallery().values()]
    assert sum(excluded in s for s in fulls) >= 10


def test_each_field_sits_in_its_category():
    frame = summarise(gallery()["frame"])
    assert frame["S"] == {"shape": [3, 4], "n_columns": 4, "columns": ["age", "sex", "when", "grade"]}
    assert frame["R"]["type"] == "pandas.DataFrame"
    assert frame["R"]["dtypes"]["age"] == "float64" and frame["R"]["dtypes"]["grade"] == "category"
    values = frame["V"]
    assert values["has_nan"] is True and values["columns_with_nan"] == ["age"]
    assert values["column_values"]["age"] == {"n_missing": 1, "n_unique": 2, "range": [22.0, 35.0]}
    assert values["column_values"]["sex"]["examples"] == ["m", "f"]
    assert values["column_values"]["grade"]["categories"] == ["a", "b"]
    assert values["column_values"]["when"]["range"][0].startswith("2020-01-01")
    array = summarise(gallery()["floats"])
    assert array == {"S": {"shape": [3], "size": 3}, "R": {"type": "numpy.ndarray", "dtype": "float64"},
                     "V": {"has_nan": True, "range": [1.0, 3.0], "n_unique": 2,
                           "examples": [1.0, "nan", 3.0]}}


def test_dataframe_columns_are_described_up_to_a_configurable_limit():
    wide = pd.DataFrame(np.zeros((2, 30)), columns=[f"c{i}" for i in range(30)])
    summary = summarise(wide)
    assert summary["S"]["n_columns"] == 30
    assert summary["S"]["columns"][-1] == "… 10 more" and len(summary["S"]["columns"]) == 21
    assert len(summary["R"]["dtypes"]) == 20 and len(summary["V"]["column_values"]) == 20
    assert len(summarise(wide, options={"max_columns": 5})["V"]["column_values"]) == 5


def test_estimators_show_fitted_state_features_and_classes():
    items = gallery()
    fitted = summarise(items["fitted"])
    assert fitted["V"]["fitted"] is True and fitted["S"]["n_features_in"] == 2
    assert fitted["V"]["classes"] == [0, 1] and fitted["V"]["n_classes"] == 2
    assert summarise(items["unfitted"])["V"] == {"fitted": False}
    assert "n_features_in" not in summarise(items["unfitted"]).get("S", {})
    assert summarise(items["encoder"])["V"]["classes"] == ["cat", "dog"]
    pipeline = summarise(items["pipeline"])
    assert pipeline["R"]["steps"] == {"standardscaler": "sklearn.preprocessing._data.StandardScaler",
                                      "linearregression": "sklearn.linear_model._base.LinearRegression"}
    assert pipeline["S"]["n_features_in"] == 2 and pipeline["V"]["fitted"] is True
    results = summarise(items["results"], attributes=["predict", "params", "nonsense"])
    assert results["S"]["exog_names"] == ["const", "x1"] and results["S"]["n_params"] == 2
    assert results["R"]["attributes"] == {"predict": "method", "params": "attribute",
                                          "nonsense": "missing"}


def test_callables_modules_containers_and_scalars():
    items = gallery()
    assert summarise(items["function"])["R"]["signature"].startswith("(a, axis=None")
    assert summarise(items["cls"])["R"]["type"] == "class"
    assert summarise(items["module"], attributes=["mean", "linalg", "pi"])["R"]["attributes"] == {
        "mean": "function", "linalg": "module", "pi": "attribute"}
    a_list = summarise(items["a_list"])
    assert a_list["S"] == {"length": 3}
    assert a_list["V"]["examples"] == ["1", "'two'", "DataFrame (3, 4)"]
    assert summarise(items["a_dict"])["S"]["keys"] == ["k", 2]
    assert summarise(items["text"]) == {"S": {"length": 5}, "R": {"type": "str"}, "V": {"value": "hello"}}
    assert summarise(items["np_scalar"])["R"] == {"type": "numpy.float32", "dtype": "float32"}
    assert summarise(items["point"])["V"]["fields"] == {"x": "1", "y": "list of 2"}


def test_generators_and_iterators_are_described_without_being_advanced(tmp_path):
    generator = (i for i in range(3))
    iterator = iter([10, 20])
    mapped = map(str, [1, 2])
    counter = itertools.count(5)
    handle = (tmp_path / "lines.txt").open("w+")
    handle.write("first\nsecond\n")
    handle.seek(0)

    class Counting:
        calls = 0

        def __iter__(self):
            Counting.calls += 1
            return self

        def __next__(self):
            Counting.calls += 1
            return 1

        def __length_hint__(self):
            Counting.calls += 1
            return 1

    counting = Counting()
    namespace = {"generator": generator, "iterator": iterator, "mapped": mapped,
                 "counter": counter, "handle": handle, "counting": counting}
    payload = inspect_namespace(namespace, {"names": list(namespace)})
    objects = payload["objects"]
    assert objects["generator"]["V"] == {"state": "created", "advanced": False}
    assert objects["iterator"]["S"] == {"remaining": 2} and objects["iterator"]["R"]["iterator"] is True
    assert next(generator) == 0 and next(iterator) == 10 and next(mapped) == "1"
    assert next(counter) == 5 and handle.readline() == "first\n"
    assert Counting.calls == 0
    handle.close()


def test_iterables_are_never_iterated():
    class Lazy:
        iterations = 0

        def __iter__(self):
            Lazy.iterations += 1
            yield from range(3)

        def __len__(self):
            return 3

    summary = summarise(Lazy())
    assert summary["S"] == {"length": 3} and Lazy.iterations == 0


class _ImportSpy(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.attempts: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in UNIMPORTED:
            self.attempts.append(name)
        return None


def test_libraries_not_imported_are_never_imported(monkeypatch):
    for name in UNIMPORTED:
        if name in sys.modules:
            pytest.skip(f"{name} is already imported in this test process")
    # Objects that look like those libraries' (same class and module names): their
    # summarisers stay off because the libraries are not in sys.modules.
    fakes = {}
    for module, cls in (("torch", "Tensor"), ("torch.utils.data.dataloader", "DataLoader"),
                        ("tensorflow.python.framework.ops", "EagerTensor"),
                        ("tensorflow.python.data.ops.dataset_ops", "DatasetV2"),
                        ("keras.src.legacy.preprocessing.image", "Iterator"),
                        ("keras.src.models.model", "Model")):
        fake_type = type(cls, (), {"shape": (2, 3), "dtype": "float32"})
        fake_type.__module__ = module
        fakes[f"{module}.{cls}"] = fake_type()
    spy = _ImportSpy()
    monkeypatch.setattr(sys, "meta_path", [spy, *sys.meta_path])
    namespace = {**gallery(), **fakes}
    payload = inspect_namespace(namespace, {"names": list(namespace)})
    assert spy.attempts == []
    assert payload["imported_by_inspection"] == []
    assert not set(UNIMPORTED) & set(sys.modules)
    for key in fakes:  # described as the plain objects they are
        assert payload["objects"][key]["R"]["type"] == key
        assert set(payload["objects"][key]["R"]) == {"type"}


@pytest.mark.parametrize("library", ["torch", "tensorflow"])
def test_uninstalled_libraries_are_really_absent_here(library):
    """What the test above relies on, stated: these libraries are not installed here."""
    if importlib.util.find_spec(library) is not None:
        pytest.skip(f"{library} is installed here")
    assert library not in sys.modules


def test_the_summariser_imports_only_the_standard_library():
    tree = ast.parse(inspect.getsource(summarise_module))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.partition(".")[0])
    assert imported - {"__future__"} <= set(sys.stdlib_module_names)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", getattr(n.func, "attr", None)) in ("__import__", "import_module")]
    assert calls == []


def test_names_undefined_builtins_bound_and_hidden():
    payload = inspect_namespace({"df": pd.DataFrame({"a": [1]}), "get_ipython": print},
                                {"names": ["df", "print", "missing", "later", "get_ipython"],
                                 "bound": ["later"], "hidden": ["get_ipython"]})
    assert list(payload["objects"]) == ["df"]
    assert payload["undefined"] == ["missing"]
    assert payload["environment"]["R"]["libraries"]["pandas"] == pd.__version__


def test_per_object_cap_cuts_and_reports():
    big = {f"key_{i}_{'x' * 50}": "y" * 300 for i in range(500)}
    summary = summarise(big, options={"max_object_chars": 1500})
    assert len(json.dumps(summary, ensure_ascii=False)) <= 1500
    assert summary["truncated"]["limit"] == 1500 and summary["truncated"]["chars"] > 1500
    assert summary["S"]["length"] == 500 and summary["R"]["type"] == "dict"
    small = summarise([1, 2])
    assert fit(small, 10_000) is small and "truncated" not in small
    wide = pd.DataFrame(np.arange(60.0).reshape(3, 20), columns=[f"column_{i}" for i in range(20)])
    full = summarise(wide)
    cut = summarise(wide, options={"max_object_chars": 1200})
    assert len(json.dumps(cut, ensure_ascii=False)) <= 1200 < len(json.dumps(full, ensure_ascii=False))
    # the big per-column fields are cut first; the small ones stay whole
    assert cut["S"]["shape"] == [3, 20] and cut["S"]["n_columns"] == 20
    assert cut["R"]["type"] == "pandas.DataFrame" and cut["V"]["has_nan"] is False
    assert len(cut["V"]["column_values"]) < 20 and cut["V"]["column_values"]["…"].endswith(" more")


def test_per_notebook_cap_shrinks_then_leaves_out_and_reports():
    namespace = {f"frame{i}": pd.DataFrame(np.arange(200.0).reshape(10, 20)) for i in range(8)}
    options = {"max_notebook_chars": 4000}
    payload = inspect_namespace(namespace, {"names": list(namespace), "options": options})
    assert len(json.dumps(payload["objects"], ensure_ascii=False)) <= 4000
    capped = payload["capped"]
    assert capped["limit"] == 4000 and capped["chars"] > 4000
    assert capped["shrunk"] and set(capped["shrunk"]) | set(capped["omitted"]) == set(namespace) - (
        set(payload["objects"]) - set(capped["shrunk"]))
    assert list(payload["objects"]) + capped["omitted"] == list(namespace)  # order kept
    assert inspect_namespace({"a": 1}, {"names": ["a"]})["capped"] is None


def test_attribute_kinds_are_found_without_running_properties():
    class Guarded:
        ran = 0

        @property
        def expensive(self):
            Guarded.ran += 1
            return 1

        def method(self):
            return 2

    obj = Guarded()
    obj.plain = 3
    assert [attribute_kind(obj, a) for a in ("expensive", "method", "plain", "absent")] == [
        "property", "method", "attribute", "missing"]
    assert Guarded.ran == 0
    frame = pd.DataFrame({"Survived": [1]})
    assert [attribute_kind(frame, a) for a in ("Survived", "survived", "append", "groupby")] == [
        "column", "missing", "missing", "method"]
    assert attribute_kind(types.SimpleNamespace(), "x") == "missing"


# --------------------------------------------------------------------------- PyTorch


def test_torch_objects_when_torch_is_importable():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed here: its summariser "
                                "is exercised only where it is")
    from torch.utils.data import DataLoader, Dataset, IterableDataset

    class Squares(Dataset):
        reads = 0

        def __len__(self):
            return 10

        def __getitem__(self, i):
            Squares.reads += 1
            return torch.full((3,), float(i * i)), i % 2

    class Stream(IterableDataset):
        started = 0

        def __iter__(self):
            Stream.started += 1
            yield torch.zeros(2)

    tensor = torch.tensor([[1.0, float("nan")], [3.0, 4.0]])
    summary = summarise(tensor)
    assert summary["S"] == {"shape": [2, 2], "numel": 4}
    assert summary["R"]["dtype"] == "torch.float32" and summary["R"]["device"] == "cpu"
    assert summary["V"]["has_nan"] is True and summary["V"]["range"] == [1.0, 4.0]
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    module = summarise(net)
    assert module["S"]["n_parameters"] == 15
    assert module["R"]["layers"]["0"].startswith("Linear(in_features=4, out_features=3")
    dataset = summarise(Squares())
    assert dataset["S"] == {"length": 10}
    assert dataset["V"]["probed_items"] == [["Tensor torch.float32 [3]", "0"],
                                            ["Tensor torch.float32 [3]", "1"]]
    Squares.reads = 0
    loader = DataLoader(Squares(), batch_size=4, shuffle=True)
    summary = summarise(loader)
    assert summary["S"] == {"batch_size": 4, "drop_last": False, "dataset_length": 10, "n_batches": 3}
    assert summary["V"]["shuffle"] is True
    assert Squares.reads == 2  # the two probed items; the loader itself was not iterated
    streaming = DataLoader(Stream(), batch_size=2)
    summary = summarise(streaming)
    assert summary["S"]["batch_size"] == 2 and Stream.started == 0
    assert summarise(Stream())["R"]["style"] == "iterable (not iterated)"


# --------------------------------------------------------------------------- TensorFlow


def test_tensorflow_objects_when_tensorflow_is_importable():
    tf = pytest.importorskip("tensorflow", reason="TensorFlow is not installed here: its "
                             "summariser is exercised only where it is")
    tensor = summarise(tf.constant([[1.0, 2.0], [3.0, 5.0]]))
    assert tensor["S"]["shape"] == [2, 2] and tensor["R"]["dtype"] == "float32"
    assert tensor["V"]["range"] == [1.0, 5.0]
    pulled = []

    def source():
        pulled.append(1)
        yield np.zeros(3, dtype="float32"), 1

    dataset = tf.data.Dataset.from_generator(source, output_signature=(
        tf.TensorSpec((3,), tf.float32), tf.TensorSpec((), tf.int32))).batch(2)
    summary = summarise(dataset)
    assert "TensorSpec(shape=(None, 3)" in summary["R"]["element_spec"]
    assert set(summary) == {"R"} and pulled == []
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)])
    summary = summarise(model)
    assert summary["S"] == {"input_shape": [None, 4], "output_shape": [None, 3], "n_parameters": 15}
    assert summary["V"] == {"built": True}


def test_keras_image_iterators_when_keras_is_importable(tmp_path):
    pytest.importorskip("tensorflow", reason="TensorFlow is not installed here: the Keras "
                        "image-iterator summariser is exercised only where it is")
    from PIL import Image

    try:
        from keras.src.legacy.preprocessing.image import ImageDataGenerator
    except ImportError:
        from tensorflow.keras.preprocessing.image import ImageDataGenerator
    for label, count in (("cats", 3), ("dogs", 2)):
        (tmp_path / label).mkdir()
        for i in range(count):
            Image.new("RGB", (12, 10)).save(tmp_path / label / f"{i}.png")
    flow = ImageDataGenerator(rescale=1 / 255).flow_from_directory(
        tmp_path, target_size=(10, 12), batch_size=2)
    summary = summarise(flow)
    assert summary["S"] == {"samples": 5, "batch_size": 2, "image_shape": [10, 12, 3],
                            "target_size": [10, 12], "n_batches": 3}
    assert summary["R"]["class_mode"] == "categorical"
    assert summary["V"]["class_indices"] == {"cats": 0, "dogs": 1} and summary["V"]["n_classes"] == 2
    assert summary["V"]["class_counts"] == {"0": 3, "1": 2} and summary["V"]["batches_seen"] == 0
    assert flow.batch_index == 0 and flow.total_batches_seen == 0  # not advanced


@pytest.mark.parametrize("style", ["junobench", "crane"])
def test_the_kernel_source_runs_without_junobench(style, tmp_path):
    """What the kernel executes (the shared probes, then the style's module) runs in a
    Python that cannot import junobench, and its inspection imports nothing."""
    import json
    import subprocess
    import sys

    from junobench.runtime.extract import inspection_code, request_for

    code = inspection_code(request_for("y = df.shape\nz = missing", style=style))
    program = tmp_path / "kernel.py"
    program.write_text(
        "import sys, types\n"
        "class Shell:\n    user_ns_hidden = {}\n    user_ns = {'df': [1, 2]}\n"
        "ipython = types.ModuleType('IPython'); ipython.get_ipython = lambda: Shell\n"
        "display = types.ModuleType('IPython.display')\n"
        "display.display = lambda data, raw: print(__import__('json').dumps(data))\n"
        "sys.modules.update({'IPython': ipython, 'IPython.display': display})\n" + code)
    done = subprocess.run([sys.executable, "-I", "-S", str(program)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    (payload,) = json.loads(done.stdout).values()
    assert payload["undefined"] == ["missing"] and "df" in payload["objects"]
    assert payload["imported_by_inspection"] == []
