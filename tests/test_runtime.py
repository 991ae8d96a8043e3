"""``runtime-info`` end to end: real kernels on the bundled sample and edited checkouts of it."""

from __future__ import annotations

import builtins
import json
import sys
from pathlib import Path

import pytest
from snapshot_files import edit_cell, tree_digest  # tests/ is on sys.path under pytest

from junobench.cli import main
from junobench.data.checkout import checkout
from junobench.data.notebook import read_notebook
from junobench.detection import prompt
from junobench.detection.tasks import read_tasks, read_truth, truth_path
from junobench.runtime import read_runtime_info, runtime_info, runtime_texts
from junobench.runtime.extract import Inspection, request_for
from junobench.verify import replay_in_copy
from junobench.verify.runner import run_sync
from junobench.verify.spec import case_specs

pytest.importorskip("nbclient", reason="runtime-info needs the run extra")
pytestmark = pytest.mark.kernel

#: Names the IPython kernel itself provides (never the notebook's objects).
KERNEL_NAMES = {"get_ipython", "display", "In", "Out", "exit", "quit"}


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory, sample_env) -> tuple[Path, dict[str, dict]]:
    """runtime-info of every notebook of the bundled sample (both versions), via the CLI, in
    the sample's pinned environment."""
    out = tmp_path_factory.mktemp("runtime") / "sample.jsonl"
    code = main(["runtime-info", "--source", "sample", "--out", str(out), "--jobs", "2",
                 "--env", str(sample_env.path), "--no-progress"])
    assert code == 0
    return out, read_runtime_info(out)


def test_every_name_the_target_reads_that_the_kernel_has_is_summarised(sample_run):
    _, records = sample_run
    assert len(records) == 20
    assert {r["version"] for r in records.values()} == {"reproduced", "fixed"}
    for instance, record in records.items():
        assert record["status"] == "ok", (instance, record["problem"])
        assert record["imported_by_inspection"] == [], instance
        assert record["names"], instance
        for name in record["names"]:
            if name in record["objects"]:
                summary = record["objects"][name]
                assert summary["R"]["type"] and set(summary) <= {"S", "R", "V"}, (instance, name)
            else:  # not summarised: a builtin, or not defined in the kernel
                assert name in dir(builtins) or name in record["undefined"], (instance, name)
    # the only names missing from a kernel are those of the "cell that was not run" case
    undefined = {i: r["undefined"] for i, r in records.items() if r["undefined"]}
    assert undefined == {"NBspecific_1_reproduced": ["X_train", "y_train", "X_test", "y_test"]}
    assert set(records["NBspecific_1_fixed"]["objects"]) == {
        "LinearRegression", "X_train", "y_train", "X_test", "y_test"}
    assert set(records["statsmodels_1_fixed"]["objects"]) == {"ols", "sm", "test", "features", "np"}
    assert set(records["seaborn_1_reproduced"]["objects"]) == {"plt", "sns", "flowers"}


def test_summaries_show_the_column_and_shape_mismatches_behind_the_crashes(sample_run):
    _, records = sample_run
    # pandas_1: groupby(...)['survived'] on a frame whose column is 'Survived'
    frame = records["pandas_1_reproduced"]["objects"]["df"]
    assert "Survived" in frame["S"]["columns"] and "survived" not in frame["S"]["columns"]
    # statsmodels_1: fitted with a constant (4 parameters), predicting on 3 feature columns
    ols = records["statsmodels_1_reproduced"]["objects"]["ols"]
    assert ols["S"]["exog_names"] == ["const", "TV", "radio", "newspaper"] and ols["S"]["n_params"] == 4
    assert records["statsmodels_1_reproduced"]["objects"]["features"]["S"]["length"] == 3
    # numpy_1: 1001 samples cannot be cut into 20 windows of 50
    assert records["numpy_1_reproduced"]["objects"]["signal"]["S"]["shape"] == [1001, 3]
    # NBspecific_2: the column is already gone when the cell runs again
    columns = records["NBspecific_2_reproduced"]["objects"]["df"]["S"]["columns"]
    assert "num_outbound_cmds" not in columns
    # sklearn_1: NaN in a feature; sklearn_2: a continuous target for a classifier
    assert records["sklearn_1_reproduced"]["objects"]["X_train"]["V"]["columns_with_nan"] == ["garage_area_m2"]
    target = records["sklearn_2_reproduced"]["objects"]["y_train"]
    assert target["R"]["dtype"] == "float64" and target["V"]["values"]["n_unique"] > 100
    # pandas_2: DataFrame.append no longer exists in the installed pandas
    sales = records["pandas_2_reproduced"]["objects"]["sales"]
    assert sales["R"]["attributes"] == {"append": "missing"}


def test_an_estimator_fitted_on_fewer_features_shows_n_features_in(tmp_path):
    snap = checkout(["sklearn_2"], "sample", tmp_path / "snap")
    edit_cell(snap, "sklearn_2", "reproduced", 4, "clf.predict(X_test_s)")
    edit_cell(snap, "sklearn_2", "reproduced", 3,
              "X = wine.drop(columns='quality_score')\ny = wine['quality_score']\n"
              "X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=1)\n"
              "scaler = StandardScaler().fit(X_train)\n"
              "X_train_s, X_test_s = scaler.transform(X_train), scaler.transform(X_test)\n"
              "clf = LinearRegression().fit(X_train_s[:, :5], y_train)")
    records = runtime_info(["sklearn_2"], snap, versions=["reproduced"], progress=False)
    objects = records[0]["objects"]
    assert objects["clf"]["S"]["n_features_in"] == 5 and objects["clf"]["V"]["fitted"] is True
    assert objects["X_test_s"]["S"]["shape"] == [52, 7]


@pytest.fixture(scope="module")
def sneaky(tmp_path_factory) -> tuple[Path, Path]:
    """A checkout of pandas_1 whose target cells would write a file, and whose reproduced
    notebook leaves a generator, an iterator and a look-alike of a torch tensor in the kernel."""
    root = tmp_path_factory.mktemp("sneaky")
    snap = checkout(["pandas_1"], "sample", root / "snap")
    marker = root / "target-ran"
    for version in ("reproduced", "fixed"):
        edit_cell(snap, "pandas_1", version, 4,
                  f"open({str(marker) + '-' + version!r}, 'w').write('ran')\n"
                  "print(next(gen), next(it), fake, values, df)")
    for index, source in enumerate(["gen = (i for i in range(3))", "it = iter([10, 20])",
                                    "class Tensor:\n    pass\nTensor.__module__ = 'torch'\nfake = Tensor()",
                                    "values = [1, 2, 3]"]):
        edit_cell(snap, "pandas_1", "reproduced", index, source)
    return snap, marker


def test_the_target_cell_never_runs_and_the_snapshot_is_untouched(sneaky, tmp_path, capsys):
    snap, marker = sneaky
    before = tree_digest(snap)
    out = tmp_path / "rt.jsonl"
    code = main(["runtime-info", "pandas_1", "--source", str(snap), "--out", str(out), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    records = read_runtime_info(out)
    assert set(records) == {"pandas_1_reproduced", "pandas_1_fixed"}
    for version in ("reproduced", "fixed"):
        assert not Path(f"{marker}-{version}").exists(), "the target cell ran"
    assert set(records["pandas_1_reproduced"]["objects"]) == {"gen", "it", "fake", "values"}
    assert records["pandas_1_reproduced"]["undefined"] == ["df"]
    assert records["pandas_1_fixed"]["undefined"] == ["gen", "it", "fake", "values"]
    assert tree_digest(snap) == before


def test_inspection_in_a_kernel_advances_nothing_and_imports_nothing(sneaky):
    snap, _ = sneaky
    spec = case_specs(snap, ["pandas_1"])[0]
    notebook, _ = read_notebook(snap / "benchmark" / "pandas_1" / "pandas_1_reproduced.ipynb")
    request = request_for(notebook.code_cells[spec.target].source)
    inspection = Inspection(request, timeout=60)
    seen: dict = {}

    async def run_cell(client, source: str) -> str:
        import nbformat

        cell = nbformat.v4.new_code_cell(source)
        client.nb.cells.append(cell)
        await client.async_execute_cell(cell, len(client.nb.cells) - 1, store_history=False)
        return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")

    async def hook(client) -> None:
        await run_cell(client, "import sys as _sys\n_before = set(_sys.modules)")
        await inspection(client)
        seen.update(json.loads(await run_cell(client, (
            "import json\nprint(json.dumps({'next': [next(gen), next(it)], 'new': sorted(set(_sys.modules) - _before),"
            " 'loaded': sorted(m for m in ('numpy', 'pandas', 'torch', 'tensorflow', 'keras', 'sklearn')"
            " if m in _sys.modules)}))"))))

    log = run_sync(replay_in_copy(spec, "reproduced", spec.orders["reproduced"][:-1], timeout=60,
                                  after=hook))
    assert log.failure is None and inspection.problem is None
    objects = inspection.payload["objects"]
    assert objects["gen"]["V"] == {"state": "created", "advanced": False}
    assert objects["it"]["S"] == {"remaining": 2}
    assert objects["fake"]["R"] == {"type": "torch.Tensor"}  # only its type: torch is not imported
    assert seen["next"] == [0, 10], "an iterator was advanced by the inspection"
    assert seen["loaded"] == [], "the inspection imported a library the notebook did not"
    assert {m.partition(".")[0] for m in seen["new"]} <= set(sys.stdlib_module_names) | {"IPython"}


@pytest.mark.parametrize("excluded", ["S", "R", "V"])
def test_exclude_drops_one_category_and_nothing_else(excluded, sample_run, sample_env, tmp_path):
    _, full = sample_run
    out = tmp_path / f"without-{excluded}.jsonl"
    code = main(["runtime-info", "statsmodels_1", "sklearn_1", "--version", "reproduced",
                 "--source", "sample", "--out", str(out), "--exclude", excluded, "--jobs", "2",
                 "--env", str(sample_env.path), "--no-progress"])
    assert code == 0
    records = read_runtime_info(out)
    assert set(records) == {"statsmodels_1_reproduced", "sklearn_1_reproduced"}
    kept = [c for c in ("S", "R", "V") if c != excluded]
    for instance, record in records.items():
        assert record["categories"] == kept
        reference = full[instance]
        assert set(record["objects"]) == set(reference["objects"])
        for name, summary in record["objects"].items():
            assert excluded not in summary, (instance, name)
            assert {c: summary.get(c) for c in kept} == {
                c: reference["objects"][name].get(c) for c in kept}, (instance, name)
        expected_environment = {} if excluded == "R" else reference["environment"]
        assert record["environment"] == expected_environment
        assert record["undefined"] == reference["undefined"] and record["names"] == reference["names"]


def test_tasks_and_detect_put_runtime_information_between_executed_and_target_cells(sample_run, tmp_path,
                                                                                     capsys):
    from chat_server import ChatServer

    path, _ = sample_run
    tasks_file = tmp_path / "tasks.jsonl"
    assert main(["tasks", "--source", "sample", "--library", "numpy", "--out", str(tasks_file),
                 "--runtime-info", str(path)]) == 0
    tasks = read_tasks(tasks_file)
    instance_of = {row["id"]: row["instance"] for row in read_truth(truth_path(tasks_file))}
    assert sorted(instance_of[t["id"]] for t in tasks) == ["numpy_1_fixed", "numpy_1_reproduced"]
    texts = runtime_texts(path)
    for task in tasks:
        assert task["runtime_info"] == texts[instance_of[task["id"]]]
        user = prompt.user_message(task)
        assert (user.index("# Executed Cells:") < user.index("# Runtime Information:")
                < user.index("# Target Cell:"))
        assert "signal: numpy.ndarray" in user and '"shape": [1001, 3]' not in user
        assert "shape: [1001, 3]" in user
    without_values = tmp_path / "tasks-no-v.jsonl"
    assert main(["tasks", "--source", "sample", "--library", "numpy", "--out", str(without_values),
                 "--runtime-info", str(path), "--runtime-exclude", "V"]) == 0
    text = read_tasks(without_values)[0]["runtime_info"]
    assert "shape: [1001, 3]" in text and "range:" not in text and "has_nan" not in text

    answer = json.dumps({"reasoning": "r", "detection": True})
    with ChatServer(lambda body: answer) as server:
        code = main(["detect", "--endpoint", server.url, "--model", "m", "--runs", "1",
                     "--source", "sample", "--library", "numpy", "--runtime-info", str(path),
                     "--out", str(tmp_path / "pred.jsonl"), "--no-progress"])
    assert code == 0
    for body in server.requests:
        system, user = body["messages"]
        assert "[Runtime Information]" in system["content"]
        assert "# Runtime Information:\nObjects the target cell uses" in user["content"]
        assert "signal: numpy.ndarray" in user["content"]
    capsys.readouterr()


def test_bad_input_is_one_clear_error(tmp_path, capsys):
    assert main(["runtime-info", "nope_1", "--source", "sample", "--out", str(tmp_path / "x.jsonl")]) == 1
    assert "no case 'nope_1'" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance": "pandas_1_reproduced", "status": "ok"}\nnot json\n')
    assert main(["tasks", "--source", "sample", "--out", str(tmp_path / "t.jsonl"),
                 "--runtime-info", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "line 2 is not valid JSON" in err and str(bad) in err
    assert main(["tasks", "--source", "sample", "--out", str(tmp_path / "t.jsonl"),
                 "--runtime-exclude", "V"]) == 1
    assert "--runtime-exclude needs --runtime-info" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_torch_loader_in_a_kernel_is_described_without_iterating(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed here: the in-kernel PyTorch "
                        "summaries are exercised only where it is")
    snap = checkout(["pandas_1"], "sample", tmp_path / "snap")
    edit_cell(snap, "pandas_1", "reproduced", 3, (
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"
        "class Rows(Dataset):\n    reads = 0\n    def __len__(self):\n        return len(df)\n"
        "    def __getitem__(self, i):\n        Rows.reads += 1\n"
        "        return torch.tensor(df[['Age', 'Fare']].iloc[i].to_numpy()), int(df['Survived'].iloc[i])\n"
        "loader = DataLoader(Rows(), batch_size=32, shuffle=True)\nbatch = torch.zeros(4, 2)"))
    edit_cell(snap, "pandas_1", "reproduced", 4, "model(batch); next(iter(loader))")
    spec = case_specs(snap, ["pandas_1"])[0]
    notebook, _ = read_notebook(snap / "benchmark" / "pandas_1" / "pandas_1_reproduced.ipynb")
    inspection = Inspection(request_for(notebook.code_cells[4].source), timeout=120)
    reads: list = []

    async def hook(client) -> None:
        import nbformat

        await inspection(client)
        cell = nbformat.v4.new_code_cell("print(Rows.reads)")
        client.nb.cells.append(cell)
        await client.async_execute_cell(cell, len(client.nb.cells) - 1, store_history=False)
        reads.append(int(cell.outputs[0]["text"]))

    log = run_sync(replay_in_copy(spec, "reproduced", spec.orders["reproduced"][:-1], timeout=120,
                                  after=hook))
    assert log.failure is None and inspection.problem is None, inspection.problem
    objects = inspection.payload["objects"]
    assert objects["loader"]["S"] == {"batch_size": 32, "drop_last": False, "dataset_length": 400,
                                      "n_batches": 13}
    assert objects["loader"]["V"]["dataset_probed_items"] == [["Tensor torch.float64 [2]", "0"],
                                                              ["Tensor torch.float64 [2]", "1"]]
    assert objects["batch"]["S"] == {"shape": [4, 2], "numel": 8}
    assert inspection.payload["undefined"] == ["model"]
    assert reads == [2], "the loader was iterated (only two items are probed)"


def test_size_caps_are_applied_and_reported(tmp_path, capsys):
    out = tmp_path / "small.jsonl"
    code = main(["runtime-info", "statsmodels_1", "--version", "reproduced", "--source", "sample",
                 "--out", str(out), "--max-notebook-chars", "700", "--max-object-chars", "600",
                 "--no-progress"])
    assert code == 0
    assert "size cap hit in 1: statsmodels_1_reproduced" in capsys.readouterr().err
    record = read_runtime_info(out)["statsmodels_1_reproduced"]
    assert len(json.dumps(record["objects"], ensure_ascii=False)) <= 700
    assert record["capped"]["limit"] == 700 and record["capped"]["chars"] > 700
    assert all(len(json.dumps(s, ensure_ascii=False)) <= 600 for s in record["objects"].values())
    assert any("truncated" in s for s in record["objects"].values())
    text = runtime_texts(out)["statsmodels_1_reproduced"]
    assert "(summary cut to" in text or "Left out to keep this short" in text


def test_a_record_whose_summaries_are_not_summaries_is_refused_naming_its_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance": "pandas_1_reproduced", "status": "ok", "objects": {"df": [1]}}\n')
    assert main(["tasks", "--source", "sample", "--out", str(tmp_path / "t.jsonl"), "--runtime-info", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert "line 1" in err and "objects/df" in err and str(bad) in err
