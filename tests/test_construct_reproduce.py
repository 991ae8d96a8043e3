"""``construct reproduce``: sampled crashes replayed up to their crashing cell and classified.

The candidates are the bundled sample's original notebooks (data under ``../input/<slug>/``
as on Kaggle), some edited: they reproduce, raise another exception, crash earlier, do not
crash, miss their data or a module, or cannot be run at all. The same table is classified
under the local executor here and under Ray in tests/test_construct_reproduce_ray.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli
from test_verify import Unstartable

from junobench.construct.reproduce import input_datasets, reproduce
from junobench.data.snapshot import sample_path
from junobench.data.tables import read_table, write_table

pytest.importorskip("nbclient", reason="construct reproduce needs the run extra")
pytestmark = pytest.mark.kernel

BENCHMARK = sample_path() / "benchmark"
_INPUT = re.compile(r"\.\./input/([\w.-]+)/([\w.-]+)")

# fname → (what the row expects, outcome)
EXPECTED = {
    "pandas_1.ipynb": "same exception",
    "statsmodels_1.ipynb": "same exception",  # numpy_1 needs NumPy 1.x (np.NaN)
    "absolute_paths.ipynb": "same exception",  # /kaggle/input/… pointed at the copy
    "other_exception.ipynb": "different exception",
    "NBspecific_2.ipynb": "same exception",  # no In[5]: its crashing cell (In[6]) run twice
    "fixed_crash.ipynb": "no crash",
    "earlier.ipynb": "crashed earlier",
    "missing_module.ipynb": "missing module",
    "sklearn_1.ipynb": "missing data",  # its dataset is not in --data
    "no_error_output.ipynb": "not run",
    "absent.ipynb": "not run",
}


def _code(notebook: dict) -> list[dict]:
    return [c for c in notebook["cells"] if c["cell_type"] == "code"]


def _original(case: str) -> dict:
    return json.loads((BENCHMARK / case / f"{case}.ipynb").read_text())


def _crash_row(case: str, fname: str | None = None) -> dict:
    notebook = _original(case)
    error = next(o for c in _code(notebook) for o in c.get("outputs", []) if o["output_type"] == "error")
    return {"fname": fname or f"{case}.ipynb", "eid": f"e-{case}", "ename": error["ename"].lower(),
            "evalue": error["evalue"]}


@pytest.fixture(scope="module")
def candidates(tmp_path_factory) -> tuple[Path, Path, Path]:
    """The sampled table, the notebooks folder and the data folder (Kaggle's input layout)."""
    root = tmp_path_factory.mktemp("sampled")
    notebooks, data = root / "notebooks", root / "input"
    notebooks.mkdir()
    for case in ("pandas_1", "statsmodels_1", "NBspecific_2", "sklearn_1", "pandas_2"):
        notebook = _original(case)
        if case != "sklearn_1":  # sklearn_1's dataset stays out of --data
            for slug, name in {m.groups() for c in _code(notebook) for m in _INPUT.finditer("".join(c["source"]))}:
                (data / slug).mkdir(parents=True, exist_ok=True)
                shutil.copy(BENCHMARK / case / "data" / name, data / slug / name)
    rows = []

    def add(case: str, fname: str, edit=None) -> None:
        notebook = _original(case)
        if edit is not None:
            edit(_code(notebook))
        (notebooks / fname).write_text(json.dumps(notebook))
        rows.append(_crash_row(case, fname))

    def set_source(index: int, source: str):
        def edit(cells: list[dict]) -> None:
            cells[index]["source"] = source
        return edit

    def absolute(cells: list[dict]) -> None:
        cells[1]["source"] = "".join(cells[1]["source"]).replace("../input/", "/kaggle/input/")

    def drop_errors(cells: list[dict]) -> None:
        for cell in cells:
            cell["outputs"] = [o for o in cell.get("outputs", []) if o["output_type"] != "error"]

    add("pandas_1", "pandas_1.ipynb")
    add("statsmodels_1", "statsmodels_1.ipynb")
    add("pandas_1", "absolute_paths.ipynb", absolute)
    add("pandas_2", "other_exception.ipynb", set_source(4, "sales = sales['no such column']"))
    add("NBspecific_2", "NBspecific_2.ipynb")
    add("pandas_2", "fixed_crash.ipynb", set_source(4, "sales = pd.concat([sales, forecast], ignore_index=True)"))
    add("pandas_1", "earlier.ipynb", set_source(2, "df.isna().sum() / 'x'"))
    add("statsmodels_1", "missing_module.ipynb", set_source(3, "import junobench_no_such_module\npredictions = 1"))
    add("sklearn_1", "sklearn_1.ipynb")
    add("pandas_1", "no_error_output.ipynb", drop_errors)
    rows.append({**_crash_row("pandas_1"), "fname": "absent.ipynb"})
    (notebooks / "absent.ipynb").unlink(missing_ok=True)
    table = root / "sampled.xlsx"
    write_table(table, rows, ["fname", "eid", "ename", "evalue"])
    return table, notebooks, data


def _check(rows: list[dict]) -> None:
    got = {r["fname"]: r["reproduced"] for r in rows}
    assert got == EXPECTED, {k: (got.get(k), EXPECTED.get(k)) for k in EXPECTED if got.get(k) != EXPECTED.get(k)}
    by_name = {r["fname"]: r for r in rows}
    assert by_name["pandas_1.ipynb"]["reproduced_exception"] == "KeyError"
    assert by_name["pandas_1.ipynb"]["crash_cell"] == 4 == by_name["pandas_1.ipynb"]["reproduced_cell"]
    other = by_name["other_exception.ipynb"]
    assert other["reproduced_exception"] == "KeyError" and "recorded: attributeerror" in other["reproduced_detail"]
    assert by_name["earlier.ipynb"]["reproduced_cell"] == 2
    assert "junobench_no_such_module" in by_name["missing_module.ipynb"]["reproduced_detail"]
    assert "FileNotFoundError" in by_name["sklearn_1.ipynb"]["reproduced_detail"]
    assert "/kaggle paths" in by_name["absolute_paths.ipynb"]["reproduced_detail"]
    assert "no error output" in by_name["no_error_output.ipynb"]["reproduced_detail"]
    twice = by_name["NBspecific_2.ipynb"]
    assert twice["reproduced_exception"] == "KeyError"
    assert "on its second run: In[5] is missing, so the crashing cell ran twice" in twice["reproduced_detail"]


def test_reproduce_classifies_each_candidate_locally(candidates, tmp_path, capsys):
    table, notebooks, data = candidates
    out = tmp_path / "triaged.xlsx"
    code, stdout, stderr = run_cli(capsys, "construct", "reproduce", str(table), "--notebooks", str(notebooks),
                                   "--data", str(data), "--out", str(out), "--jobs", "2", "--timeout", "60",
                                   "--no-progress")
    assert code == 0
    written = read_table(out)
    assert written.columns[:4] == ["fname", "eid", "ename", "evalue"]
    assert "reproduced" in written.columns and "reproduced_detail" in written.columns
    _check(written.records())
    assert stdout == "" and "4 same exception" in stderr and "wrote 11 rows" in stderr

    # A rerun keeps every verdict and runs nothing again: it starts no executor at all.
    before = out.read_bytes()
    result = reproduce(table, notebooks, out=out, data=data, executor=Unstartable(2), timeout=60, progress=False)
    assert result.reused == 11 and not result.outcomes
    _check(read_table(out).records())
    assert out.read_bytes() != b"" and before


def test_rerun_replays_only_rows_without_a_verdict(candidates, tmp_path):
    _, notebooks, data = candidates
    table, out = tmp_path / "four.xlsx", tmp_path / "triaged.xlsx"
    rows = read_table(candidates[0]).records()[:4]  # two replays: what is at stake is which rows run
    write_table(table, rows, ["fname", "eid", "ename", "evalue"])
    # An earlier run that got two verdicts, and an infrastructure error for a third row.
    earlier = [dict(r, reproduced=None) for r in rows]
    earlier[0].update(reproduced="same exception", reproduced_detail="kept", reproduced_exception="KeyError")
    earlier[1].update(reproduced="no crash", reproduced_detail="kept too")
    earlier[2].update(reproduced="infrastructure error", reproduced_detail="3 attempts failed")
    write_table(out, earlier, ["fname", "eid", "ename", "evalue", "reproduced", "reproduced_detail",
                               "reproduced_exception"])
    seen = []
    result = reproduce(table, notebooks, out=out, data=data, jobs=2, timeout=60, progress=False,
                       on_row=lambda row: seen.append(row["fname"]))
    assert result.reused == 2
    assert sorted(seen) == sorted(r["fname"] for r in rows[2:])
    final = read_table(out).records()
    assert final[0]["reproduced_detail"] == "kept" and final[1]["reproduced"] == "no crash"
    assert final[2]["reproduced"] == "same exception"  # the infrastructure error was run again
    assert final[3]["reproduced"] == "different exception"


def test_a_quota_per_library_stops_trying_a_library_once_met(candidates, tmp_path, capsys):
    table, notebooks, data = candidates
    rows = {r["fname"]: r for r in read_table(table).records()}
    order = [("earlier.ipynb", "pandas"), ("pandas_1.ipynb", "pandas"), ("absolute_paths.ipynb", "pandas"),
             ("statsmodels_1.ipynb", "statsmodels"), ("missing_module.ipynb", "statsmodels")]
    quota_table = tmp_path / "scored.xlsx"
    write_table(quota_table, [{**rows[name], "Libs-cause": library} for name, library in order],
                ["fname", "eid", "ename", "evalue", "Libs-cause"])
    out = tmp_path / "triaged.xlsx"
    code, stdout, err = run_cli(capsys, "construct", "reproduce", str(quota_table), "--notebooks", str(notebooks),
                                "--data", str(data), "--out", str(out), "--jobs", "2", "--timeout", "60",
                                "--no-progress", "--quota", "1")
    assert code == 0, err
    got = {r["fname"]: (r["reproduced"], r["reproduced_detail"]) for r in read_table(out).records()}
    assert got["earlier.ipynb"][0] == "crashed earlier" and got["pandas_1.ipynb"][0] == "same exception"
    assert got["absolute_paths.ipynb"] == ("over quota", "not tried: 1 crash(es) of pandas reproduced already "
                                                         "(--quota)")
    assert got["statsmodels_1.ipynb"][0] == "same exception" and got["missing_module.ipynb"][0] == "over quota"
    assert stdout == "" and "2 over quota" in err
    # A rerun with a larger quota tries what was over quota, and keeps the verdicts.
    result = reproduce(quota_table, notebooks, out=out, data=data, jobs=2, timeout=60, progress=False, quota=2)
    assert result.reused == 3
    assert {r["fname"]: r["reproduced"] for r in read_table(out).records()}["absolute_paths.ipynb"] == "same exception"
    code, _, err = run_cli(capsys, "construct", "reproduce", str(table), "--notebooks", str(notebooks),
                           "--out", str(tmp_path / "x.xlsx"), "--quota", "1")
    assert code == 1 and "--quota needs a library column" in err


def test_bad_input_is_one_clear_error(candidates, tmp_path, capsys):
    table, notebooks, _ = candidates
    code, _, err = run_cli(capsys, "construct", "reproduce", str(table), "--notebooks", str(tmp_path / "nope"),
                           "--out", str(tmp_path / "o.xlsx"))
    assert code == 1 and err.startswith("error: ") and "the notebooks folder does not exist" in err
    code, _, err = run_cli(capsys, "construct", "reproduce", str(table), "--notebooks", str(notebooks),
                           "--out", str(table))
    assert code == 1 and "--out is the sampled table itself" in err
    code, _, err = run_cli(capsys, "construct", "reproduce", str(table), "--notebooks", str(notebooks),
                           "--out", str(tmp_path / "o.xlsx"), "--notebook-column", "nb")
    assert code == 1 and "nb" in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "construct", "reproduce", str(table), "--notebooks", str(notebooks),
                           "--out", str(tmp_path / "o.xlsx"), "--memory-per-notebook", "2GiB")
    assert code == 1 and "--executor ray only" in err


def test_notebook_names_cannot_leave_the_folder(tmp_path):
    from junobench.construct.reproduce import notebook_path

    folder = tmp_path / "nbs"
    folder.mkdir()
    (folder / "a.ipynb").write_text("{}")
    (tmp_path / "secret.ipynb").write_text("{}")
    (folder / "link.ipynb").symlink_to(tmp_path / "secret.ipynb")
    assert notebook_path(folder, "a.ipynb") == (folder / "a.ipynb").resolve()
    for name in ("../secret.ipynb", str(tmp_path / "secret.ipynb"), "link.ipynb", "missing.ipynb", "."):
        assert notebook_path(folder, name) is None, name


def test_input_datasets_read_both_layouts(tmp_path):
    kaggle = tmp_path / "kaggle"
    (kaggle / "titanic").mkdir(parents=True)
    (kaggle / "titanic" / "train.csv").write_text("a\n")
    downloads = tmp_path / "downloads"
    (downloads / "owner" / "flowers").mkdir(parents=True)
    (downloads / "owner" / "flowers.download.json").write_text("{}")
    (downloads / "owner" / "unrecorded").mkdir()
    assert input_datasets(kaggle) == {"titanic": kaggle / "titanic"}
    assert input_datasets(downloads) == {"flowers": downloads / "owner" / "flowers"}


def test_reproduce_in_the_pinned_environment(sample_env, tmp_path):
    # numpy_1's notebook uses np.NaN, gone in NumPy 2: it reproduces only in the pinned
    # environment (NumPy 1.26), where its kernels run with --env.
    notebooks, data = tmp_path / "notebooks", tmp_path / "input"
    notebooks.mkdir()
    notebook = _original("numpy_1")
    (notebooks / "numpy_1.ipynb").write_text(json.dumps(notebook))
    for slug, name in {m.groups() for c in _code(notebook) for m in _INPUT.finditer("".join(c["source"]))}:
        (data / slug).mkdir(parents=True, exist_ok=True)
        shutil.copy(BENCHMARK / "numpy_1" / "data" / name, data / slug / name)
    table = tmp_path / "sampled.xlsx"
    write_table(table, [_crash_row("numpy_1")], ["fname", "eid", "ename", "evalue"])
    own = reproduce(table, notebooks, out=tmp_path / "own.xlsx", data=data, timeout=60, progress=False)
    pinned = reproduce(table, notebooks, out=tmp_path / "pinned.xlsx", data=data, env=sample_env.path,
                       timeout=60, progress=False)
    assert own.rows[0]["reproduced"] == "crashed earlier" and "NaN" in own.rows[0]["reproduced_detail"]
    assert pinned.rows[0]["reproduced"] == "same exception", pinned.rows[0]["reproduced_detail"]
