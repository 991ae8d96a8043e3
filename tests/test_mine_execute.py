"""mine --execute: a corpus made by running notebooks (sandboxed, in the sample's pinned
environment) with matplotlib, seaborn, pandas and scikit-learn plots, mined into one figure
row per image with the right calls, kind and cell; stock load_dataset decodes the images."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pyarrow.parquet as pq
import pytest

from junobench.mining import mine
from junobench.mining.write import PARQUET

pytestmark = [pytest.mark.kernel, pytest.mark.slow]
pytest.importorskip("nbclient", reason="running notebooks needs the run extra")

MATPLOTLIB = [
    ("markdown", "# Matplotlib\n\nRandom numbers."),
    ("code", "import numpy as np\nimport matplotlib.pyplot as plt\nx = np.random.default_rng(0).normal(size=300)"),
    ("markdown", "## Their distribution"),
    ("code", "plt.figure(figsize=(4, 3))\nplt.hist(x, bins=20)\nplt.title('x')\nplt.show()"),
    ("code", "fig, ax = plt.subplots(figsize=(4, 3))\nax.scatter(x[:-1], x[1:], s=4)\nplt.show()\n"
             "fig2, axes = plt.subplots(1, 2, figsize=(6, 3))\naxes[0].bar(['a', 'b'], [1, 2])\n"
             "axes[1].pie([3, 4])\nplt.show()"),
]
PANDAS_SEABORN = [
    ("code", "import numpy as np\nimport pandas as pd\nimport seaborn as sns\nimport matplotlib.pyplot as plt\n"
             "rng = np.random.default_rng(1)\n"
             "df = pd.DataFrame({'a': rng.normal(size=100), 'b': rng.normal(size=100), 'c': rng.integers(0, 3, 100)})"),
    ("markdown", "## Correlations"),
    ("code", "sns.heatmap(df.corr(), annot=True)\nplt.show()"),
    ("code", "df.plot.scatter(x='a', y='b')\nplt.show()"),
    ("code", "sns.countplot(x='c', data=df)\nplt.show()"),
    ("code", "df['a'].hist(bins=10)\nplt.show()"),
]
SKLEARN = [
    ("code", "import matplotlib.pyplot as plt\nimport seaborn as sns\n"
             "from sklearn.datasets import make_classification\n"
             "from sklearn.tree import DecisionTreeClassifier, plot_tree\n"
             "from sklearn.metrics import ConfusionMatrixDisplay, confusion_matrix\n"
             "X, y = make_classification(n_samples=80, n_features=4, random_state=0)\n"
             "clf = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)"),
    ("code", "plot_tree(clf)\nplt.show()"),
    ("code", "ConfusionMatrixDisplay.from_estimator(clf, X, y)\nplt.show()"),
    ("markdown", "## Errors of the tree"),
    ("code", "sns.heatmap(confusion_matrix(y, clf.predict(X)), annot=True)\nplt.show()"),
]
FAILING = [
    ("code", "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"),
    ("code", "raise KeyError('gone')"),
    ("code", "plt.plot([1, 2])\nplt.show()"),
]
#: notebook → the figures expected: (cell position, [(library, function)], kind, purpose, stage)
EXPECTED = {
    "corpus/matplotlib.ipynb": [
        (3, [("matplotlib", "hist")], "histogram", "distribution", "data visualization"),
        (4, [("matplotlib", "Axes.scatter")], "scatter plot", "relationship", "data visualization"),
        (4, [("matplotlib", "Axes.bar"), ("matplotlib", "Axes.pie")], "bar chart", "comparison",
         "data visualization"),
    ],
    "corpus/pandas_seaborn.ipynb": [
        (2, [("seaborn", "heatmap")], "heatmap", "relationship", "data visualization"),
        (3, [("pandas", "DataFrame.plot.scatter")], "scatter plot", "relationship", "data visualization"),
        (4, [("seaborn", "countplot")], "count plot", "distribution", "data visualization"),
        (5, [("pandas", "DataFrame.hist")], "histogram", "distribution", "data visualization"),
    ],
    "corpus/sklearn.ipynb": [
        (1, [("sklearn", "plot_tree")], "decision tree", "other", None),
        (2, [("sklearn", "ConfusionMatrixDisplay.from_estimator")], "confusion matrix", "model evaluation",
         "evaluation/prediction"),
        (4, [("seaborn", "heatmap")], "heatmap", "model evaluation", "evaluation/prediction"),
    ],
    "corpus/failing.ipynb": [
        (0, [("matplotlib", "plot")], "line plot", "relationship", "data visualization"),
    ],
}


def write_notebook(path: Path, cells: list[tuple[str, str]]) -> None:
    made = [nbformat.v4.new_markdown_cell(text) if kind == "markdown" else nbformat.v4.new_code_cell(text)
            for kind, text in cells]
    notebook = nbformat.v4.new_notebook(cells=made, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                            "display_name": "Python 3"}})
    path.write_text(nbformat.writes(notebook))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("execute") / "corpus"
    folder.mkdir()
    for name, cells in (("matplotlib", MATPLOTLIB), ("pandas_seaborn", PANDAS_SEABORN), ("sklearn", SKLEARN),
                        ("failing", FAILING)):
        write_notebook(folder / f"{name}.ipynb", cells)
    return folder


@pytest.fixture(scope="module")
def mined(corpus, sample_env, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mined") / "out"
    result = mine([corpus], out, execute=True, env=sample_env.path, jobs=2, timeout=120, progress=False)
    assert result.runs == {"corpus/failing.ipynb": "error", "corpus/matplotlib.ipynb": "ok",
                           "corpus/pandas_seaborn.ipynb": "ok", "corpus/sklearn.ipynb": "ok"}
    return out


def rows(out: Path, config: str, columns: list[str] | None = None) -> list[dict]:
    return pq.read_table(out / PARQUET[config], columns=columns).to_pylist()


def test_one_figure_row_per_image_with_its_calls_kind_and_cell(mined: Path) -> None:
    figures = rows(mined, "figures", ["notebook", "cell", "calls", "kind", "purpose", "stage", "mime", "executed",
                                      "problem", "width", "height"])
    found: dict[str, list[tuple]] = {}
    for f in figures:
        assert f["mime"] == "image/png" and f["problem"] is None and f["executed"]
        assert f["width"] > 50 and f["height"] > 50
        found.setdefault(f["notebook"], []).append(
            (f["cell"], [(c["library"], c["function"]) for c in f["calls"]], f["kind"], f["purpose"], f["stage"]))
    assert found == EXPECTED


def test_the_figures_are_the_images_the_run_produced(mined: Path, corpus: Path) -> None:
    """Every image/png output the kernels produced is a figure row, bytes for bytes."""
    notebooks = rows(mined, "notebooks", ["notebook", "figures", "executed", "execution", "error", "outputs"])
    by_id = {n["notebook"]: n for n in notebooks}
    assert {k: v["figures"] for k, v in by_id.items()} == {k: len(v) for k, v in EXPECTED.items()}
    failing = by_id["corpus/failing.ipynb"]
    assert failing["execution"] == "error" and failing["error"].startswith("KeyError: 'gone'")
    assert all(n["executed"] for n in notebooks)
    images = {(f["notebook"], f["cell"], f["output"]): f["image"]["bytes"] for f in rows(mined, "figures")}
    pngs = sum(o["count"] for n in notebooks for o in n["outputs"] if o["mime"] == "image/png")
    assert len(images) == pngs == 11
    assert all(data.startswith(b"\x89PNG") for data in images.values())


def test_the_cells_and_markdown_before_each_figure(mined: Path) -> None:
    cells = rows(mined, "cells", ["notebook", "cell", "cell_type", "headings", "figures", "error"])
    matplotlib = [c for c in cells if c["notebook"] == "corpus/matplotlib.ipynb"]
    assert [c["cell_type"] for c in matplotlib] == ["markdown", "code", "markdown", "code", "code"]
    assert [c["figures"] for c in matplotlib] == [0, 0, 0, 1, 2]
    assert matplotlib[0]["headings"] == ["Matplotlib"]
    assert [c["error"] for c in cells if c["notebook"] == "corpus/failing.ipynb"] == [None, "KeyError", None]
    figures = rows(mined, "figures", ["notebook", "cell", "markdown", "heading"])
    first = next(f for f in figures if f["notebook"] == "corpus/matplotlib.ipynb")
    assert (first["markdown"], first["heading"]) == ("## Their distribution", "Their distribution")
    tree = next(f for f in figures if f["notebook"] == "corpus/sklearn.ipynb" and f["cell"] == 4)
    assert tree["heading"] == "Errors of the tree"


def test_stock_load_dataset_decodes_the_images(mined: Path) -> None:
    from datasets import load_dataset

    figures = load_dataset(str(mined), "figures", split="train")
    assert len(figures) == 11
    for row in figures:
        image = row["image"]
        assert image.size == (row["width"], row["height"])
        image.load()
    card = (mined / "README.md").read_text()
    assert "config_name: figures" in card and "dtype: image" in card
    croissant = json.loads((mined / "croissant.json").read_text())
    fields = {f["name"]: f for rs in croissant["recordSet"] if rs["name"] == "figures" for f in rs["field"]}
    assert fields["image"]["dataType"] == "sc:ImageObject"


def test_rerun_replaces_the_saved_outputs_by_the_runs(sample_env, tmp_path) -> None:
    """--rerun mines what the run drew, not what the notebook had saved: a saved figure of a
    cell the run never reaches is gone, and the failure is the row's."""
    import base64

    from test_mine_hostile import png

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("raise ValueError('stops here')", execution_count=1),
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()", execution_count=2,
                                  outputs=[nbformat.v4.new_output("display_data", data={
                                      "image/png": base64.b64encode(png()).decode()})])])
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "saved.ipynb").write_text(nbformat.writes(notebook))
    kept = mine([folder], tmp_path / "kept", execute=True, env=sample_env.path, progress=False)
    assert kept.runs == {} and kept.rows["figures"] == 1  # it has outputs: mined as saved
    rerun = mine([folder], tmp_path / "rerun", rerun=True, env=sample_env.path, progress=False, timeout=60)
    assert rerun.runs == {"saved/saved.ipynb": "error"} and rerun.rows["figures"] == 0
    [row] = rows(tmp_path / "rerun", "notebooks", ["error", "executed"])
    assert row["executed"] and row["error"].startswith("ValueError: stops here (code cell 0)")


def test_mine_rerun_on_the_bundled_sample_draws_its_figures(sample_mined_rerun) -> None:
    """``junobench mine sample --rerun``: every notebook of the sample run (sandboxed, in its
    pinned environment) and mined from what it drew (the same run on Ray:
    tests/test_mine_ray.py)."""
    runs = rows(sample_mined_rerun, "notebooks", ["notebook", "executed"])
    assert len(runs) == 30 and all(row["executed"] for row in runs)
    figures = rows(sample_mined_rerun, "figures")
    # in the pinned environment the fixed notebooks of matplotlib_1 and seaborn_1 draw their figures
    assert {(f["notebook"], f["executed"]) for f in figures} >= {
        ("matplotlib_1/matplotlib_1_fixed.ipynb", True), ("seaborn_1/seaborn_1_fixed.ipynb", True)}
    assert all(f["image"]["bytes"].startswith(b"\x89PNG") for f in figures)
    assert all(f["calls"] and f["kind"] for f in figures), [(f["notebook"], f["kind"]) for f in figures]

