"""construct resample: a seeded draw of further crashes from the pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from junobench.cli import main
from junobench.construct.resample import MATCHED_COLUMN, draw
from junobench.data.tables import read_table, write_table

POOL_COLUMNS = ["fname", "eid", "ename", "evalue", "traceback"]


@pytest.fixture
def study(tmp_path: Path) -> dict[str, Path]:
    """Pool, imports and labeled tables in the empirical study's shapes."""
    imports_by_notebook = {
        "torch_nb.ipynb": "['torch', 'numpy']",
        "keras_nb.ipynb": "['keras.models', 'os']",
        "svm_nb.ipynb": "['sklearn.svm']",
        "plain_nb.ipynb": "['os', 'json']",
        "labeled_nb.ipynb": "['pandas']",
    }
    for i in range(40):
        imports_by_notebook[f"pandas_{i}.ipynb"] = "['pandas', 'matplotlib.pyplot']"
    pool = []
    for notebook in imports_by_notebook:
        for k in range(2):
            pool.append({"fname": notebook, "eid": f"{notebook}-{k}", "ename": "valueerror",
                         "evalue": "bad", "traceback": "['ValueError: bad']"})
    paths = {"pool": tmp_path / "clusters_Kaggle_final.xlsx",
             "imports": tmp_path / "nb_imports_all_final.xlsx",
             "labeled": tmp_path / "cluster_sampled_labeled_final.xlsx"}
    write_table(paths["pool"], pool, POOL_COLUMNS)
    write_table(paths["imports"], [{"fname": k, "imports": v} for k, v in imports_by_notebook.items()],
                ["fname", "imports"])
    write_table(paths["labeled"], [{"fname": "labeled_nb.ipynb", "eid": "x"}], ["fname", "eid"])
    return paths


def _run(study: dict[str, Path], out: Path, *, n: int, seed: int,
         libraries: str = "torch,tensorflow,sklearn,pandas") -> int:
    return main(["construct", "resample", str(study["pool"]), "--imports", str(study["imports"]),
                 "--exclude", str(study["labeled"]), "--libraries", libraries, "--n", str(n),
                 "--seed", str(seed), "--out", str(out)])


def test_same_inputs_and_seed_give_the_same_sample(study, tmp_path: Path) -> None:
    first, second, other = (tmp_path / f"{name}.xlsx" for name in ("a", "b", "c"))
    assert _run(study, first, n=20, seed=43) == 0
    assert _run(study, second, n=20, seed=43) == 0
    assert _run(study, other, n=20, seed=7) == 0
    rows = read_table(first).records()
    assert rows == read_table(second).records()
    assert [r["eid"] for r in rows] != [r["eid"] for r in read_table(other).records()]
    assert len(rows) == 20 and len({r["eid"] for r in rows}) == 20
    assert read_table(first).columns == [*POOL_COLUMNS, MATCHED_COLUMN]


def test_only_unlabeled_notebooks_importing_a_target_library(study, tmp_path: Path, capsys) -> None:
    out = tmp_path / "all.xlsx"
    assert _run(study, out, n=1000, seed=43, libraries="torch,tensorflow,sklearn") == 0
    captured = capsys.readouterr()
    assert "fewer than the 1000" in captured.err
    rows = read_table(out).records()
    assert {r["fname"] for r in rows} == {"torch_nb.ipynb", "keras_nb.ipynb", "svm_nb.ipynb"}
    assert len(rows) == 6  # all of them: the pool is smaller than n
    matched = {r["fname"]: r[MATCHED_COLUMN] for r in rows}
    assert matched["keras_nb.ipynb"] == "tensorflow" and matched["svm_nb.ipynb"] == "sklearn"
    assert "crashes in the pool: 90 crashes in 45 notebooks" in captured.out
    assert "not labeled before: 88 crashes in 44 notebooks" in captured.out


def test_unreadable_imports_are_reported_by_row(study, tmp_path: Path, capsys) -> None:
    write_table(study["imports"], [{"fname": "a.ipynb", "imports": "['pandas'"},
                                   {"fname": "b.ipynb", "imports": "[1, 2]"}],
                ["fname", "imports"])
    assert _run(study, tmp_path / "o.xlsx", n=3, seed=1) == 1
    error = capsys.readouterr().err
    assert "row 2 (a.ipynb)" in error and "row 3 (b.ipynb)" in error
    assert not (tmp_path / "o.xlsx").exists()


def test_draw_keeps_pool_order() -> None:
    pool = [{"fname": f"nb{i}", "eid": i} for i in range(50)]
    imports = {f"nb{i}": ["numpy"] for i in range(50)}
    sample = draw(pool, imports, libraries=["numpy"], n=10, seed=3)
    eids = [r["eid"] for r in sample.rows]
    assert eids == sorted(eids) and len(eids) == 10
    assert not sample.short
