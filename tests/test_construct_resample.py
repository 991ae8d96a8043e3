"""construct resample: the published draw by default, the richer variants as flags."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pandas as pd
import pytest

from junobench.cli import main
from junobench.construct.naming import file_name_of_url, notebook_file_name
from junobench.construct.resample import MATCHED_COLUMN, Procedure, draw
from junobench.data.tables import read_table, write_table

POOL_COLUMNS = ["fname", "eid", "ename", "evalue", "traceback", "cluster_id", "pool_only"]
LABELED_COLUMNS = ["fname", "eid", "ename", "evalue", "traceback", "nb_source", "cluster_id",
                   "Libs-cause", "label_refined_exp_type", "label_root_cause",
                   "label_if_ML_bug", "label_ML_pipeline", "nb_url_kaggle"]
LABELS = ["Libs-cause", "label_refined_exp_type", "label_root_cause", "label_if_ML_bug",
          "label_ML_pipeline"]
#: Import lists of every kind the rules tell apart: exact names, submodules only, the
#: benchmark libraries the published draw leaves out (pandas, numpy), none.
IMPORT_LISTS = [
    ["torch", "numpy"], ["keras.models", "os"], ["keras", "numpy"], ["sklearn.svm"],
    ["sklearn", "pandas"], ["pandas", "matplotlib.pyplot"], ["matplotlib", "pandas"],
    ["numpy"], ["os", "json"], ["tensorflow"], ["seaborn", "pandas"], ["statsmodels.api"],
    ["lightgbm"], ["torchvision", "torch"], ["pandas"],
]


def published_draw(pool: Path, imports: Path, labeled: Path) -> pd.DataFrame:
    """The paper's resampling, written from its description with pandas."""
    libraries = ["torch", "sklearn", "tensorflow", "keras", "seaborn", "matplotlib",
                 "statsmodels", "torchvision", "lightgbm"]
    labels = pd.read_excel(labeled, keep_default_na=False, engine="openpyxl")
    kaggle = labels[labels.nb_source == 1]
    crashes = pd.read_excel(pool, engine="openpyxl")
    crashes = crashes[~crashes["fname"].isin(kaggle.fname.tolist())]
    modules = pd.read_excel(imports, engine="openpyxl")
    modules["imports"] = modules["imports"].apply(ast.literal_eval)
    names = modules[modules["imports"].apply(lambda x: any(lib in x for lib in libraries))]["fname"]
    crashes = crashes[crashes["fname"].isin(names)]
    assert crashes.fname.nunique() > 500
    drawn = crashes.sample(n=500, random_state=43)
    return drawn.reindex(columns=kaggle.columns, fill_value="")


@pytest.fixture
def study(tmp_path: Path) -> dict[str, Path]:
    """Pool, imports and labeled tables in the empirical study's shapes, large enough for
    the published draw (more than 500 eligible notebooks)."""
    rng = random.Random(5)
    notebooks = [notebook_file_name(f"user{i}", f"notebook-{i}") for i in range(1400)]
    imports = [{"fname": nb, "imports": repr(rng.choice(IMPORT_LISTS))} for nb in notebooks]
    pool = []
    for i, nb in enumerate(notebooks):
        for k in range(rng.choice([1, 1, 2, 3])):
            pool.append({"fname": nb, "eid": f"e{i}-{k}", "ename": "valueerror",
                         "evalue": f"bad {i}", "traceback": "['ValueError: bad']",
                         "cluster_id": i % 17, "pool_only": "x"})
    labeled = [{"fname": nb, "eid": f"e{i}-0", "nb_source": 1, "Libs-cause": "torch",
                "label_root_cause": "typo"} for i, nb in enumerate(notebooks[:300])]
    # A GitHub row of the labeled table does not exclude a Kaggle notebook of that name.
    labeled.append({"fname": notebooks[400], "eid": "g1", "nb_source": 2})
    paths = {"pool": tmp_path / "clusters_Kaggle_final.xlsx",
             "imports": tmp_path / "nb_imports_all_final.xlsx",
             "labeled": tmp_path / "cluster_sampled_labeled_final.xlsx"}
    write_table(paths["pool"], pool, POOL_COLUMNS)
    write_table(paths["imports"], imports, ["fname", "imports"])
    write_table(paths["labeled"], labeled, LABELED_COLUMNS)
    return paths


def _resample(study: dict[str, Path], out: Path, *extra: str) -> int:
    return main(["construct", "resample", str(study["pool"]), "--imports", str(study["imports"]),
                 "--exclude", str(study["labeled"]), "--out", str(out), *extra])


def test_the_default_is_the_published_draw(study, tmp_path: Path, capsys) -> None:
    out = tmp_path / "new_samples.xlsx"
    assert _resample(study, out) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "wrote 500 crashes" in captured.err
    expected = published_draw(study["pool"], study["imports"], study["labeled"])
    table = read_table(out)
    assert table.columns == LABELED_COLUMNS == list(expected.columns)
    rows = table.records()
    assert [r["eid"] for r in rows] == expected["eid"].tolist()  # same rows, drawn order
    assert [r["fname"] for r in rows] == expected["fname"].tolist()
    assert [r["cluster_id"] for r in rows] == expected["cluster_id"].tolist()
    assert all(r[c] is None for r in rows for c in [*LABELS, "nb_source"])


def test_exact_import_match_and_the_excluded_notebooks(study, tmp_path: Path) -> None:
    out = tmp_path / "all.xlsx"
    assert _resample(study, out, "--n", "5000") == 0
    published = {"torch", "sklearn", "tensorflow", "keras", "seaborn", "matplotlib",
                 "statsmodels", "torchvision", "lightgbm"}
    imports = {r["fname"]: ast.literal_eval(r["imports"])
               for r in read_table(study["imports"]).records()}
    labeled = {r["fname"] for r in read_table(study["labeled"]).records() if r["nb_source"] == 1}
    eligible = {name for name, modules in imports.items()
                if name not in labeled and published & set(modules)}
    assert {r["fname"] for r in read_table(out).records()} == eligible
    github = notebook_file_name("user400", "notebook-400")  # labeled, but from GitHub
    assert (github in eligible) == bool(published & set(imports[github]))
    assert not any(imports[name] == ["sklearn.svm"] for name in eligible)


def test_richer_variants_as_flags(study, tmp_path: Path) -> None:
    out = tmp_path / "module.xlsx"
    assert _resample(study, out, "--libraries", "tensorflow/keras,sklearn,statsmodels",
                     "--match", "module", "--sampler", "python", "--columns", "pool",
                     "--n", "40", "--seed", "7") == 0
    table = read_table(out)
    assert table.columns == [*POOL_COLUMNS, MATCHED_COLUMN]
    rows = table.records()
    assert len(rows) == 40
    positions = {r["eid"]: i for i, r in enumerate(read_table(study["pool"]).records())}
    assert [positions[r["eid"]] for r in rows] == sorted(positions[r["eid"]] for r in rows)
    matched = {m for r in rows for m in r[MATCHED_COLUMN].split(", ")}
    assert matched <= {"tensorflow/keras", "sklearn", "statsmodels"}
    assert "statsmodels" in matched  # only ever imported as statsmodels.api


def test_exclude_by_notebook_url_with_the_study_file_names(study, tmp_path: Path) -> None:
    desc = tmp_path / "benchmark_desc.xlsx"
    urls = [f"https://www.kaggle.com/code/user{i}/notebook-{i}" for i in range(300, 1400)]
    write_table(desc, [{"nb_name": f"torch_{i}", "NotebookUrl": u} for i, u in enumerate(urls)],
                ["nb_name", "NotebookUrl"])
    out = tmp_path / "rest.xlsx"
    assert main(["construct", "resample", str(study["pool"]), "--imports", str(study["imports"]),
                 "--exclude", str(study["labeled"]), "--exclude", str(desc), "--n", "5000",
                 "--out", str(out)]) == 0
    assert read_table(out).records() == []
    assert file_name_of_url(urls[0]) == notebook_file_name("user300", "notebook-300")


def test_a_small_pool_is_taken_whole_with_a_warning(study, tmp_path: Path, capsys) -> None:
    out = tmp_path / "few.xlsx"
    assert _resample(study, out, "--libraries", "lightgbm", "--n", "1000") == 0
    captured = capsys.readouterr()
    assert "no more than the 1000 asked for" in captured.err
    rows = read_table(out).records()
    imports = {r["fname"]: r["imports"] for r in read_table(study["imports"]).records()}
    assert rows and all(imports[r["fname"]] == "['lightgbm']" for r in rows)
    assert "crashes in the pool:" in captured.err and "not labeled before:" in captured.err


def test_unreadable_imports_are_reported_by_row(study, tmp_path: Path, capsys) -> None:
    write_table(study["imports"], [{"fname": "a.ipynb", "imports": "['pandas'"},
                                   {"fname": "b.ipynb", "imports": "[1, 2]"}],
                ["fname", "imports"])
    assert _resample(study, tmp_path / "o.xlsx", "--n", "3") == 1
    error = capsys.readouterr().err
    assert "row 2 (a.ipynb)" in error and "row 3 (b.ipynb)" in error
    assert not (tmp_path / "o.xlsx").exists()


def test_draw_is_deterministic_and_seeded() -> None:
    pool = [{"fname": f"nb{i}", "eid": i} for i in range(50)]
    imports = {f"nb{i}": ["numpy"] for i in range(50)}
    procedure = Procedure(libraries=("numpy",))
    first = draw(pool, imports, procedure=procedure, n=10, seed=3)
    again = draw(pool, imports, procedure=procedure, n=10, seed=3)
    other = draw(pool, imports, procedure=procedure, n=10, seed=4)
    assert first.rows == again.rows and first.rows != other.rows
    expected = pd.DataFrame(pool).sample(n=10, random_state=3)["eid"].tolist()
    assert [r["eid"] for r in first.rows] == expected
