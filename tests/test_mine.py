"""mine without kernels: the plotting calls found by static analysis, the chart-kind mapping,
the benchmark's own figures, the summaries and the review sheet read back with agreement."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_run import run_cli

from junobench.errors import JunoBenchError
from junobench.mining import mine
from junobench.mining.calls import CodeReader
from junobench.mining.kinds import MAPPING_FILE, PURPOSES, ChartKinds, chart_kinds, load_kinds
from junobench.mining.write import MANIFEST, PARQUET

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))


def calls_of(*cells: str) -> list[tuple[str, str, str | None, str | None]]:
    """(library, function, kind, purpose) of the last cell's chart calls, earlier cells read first."""
    reader = CodeReader()
    for cell in cells[:-1]:
        reader.read(cell, calls=False)
    return [(c.library, c.function, c.kind, c.purpose) for c in reader.read(cells[-1]).calls]


@pytest.mark.parametrize(("cells", "expected"), [
    (["import matplotlib.pyplot as p", "p.hist(x)"], [("matplotlib", "hist", "histogram", "distribution")]),
    (["from matplotlib import pyplot as plt", "plt.scatter(a, b)"],
     [("matplotlib", "scatter", "scatter plot", "relationship")]),
    (["from pylab import *", "hist(x)"], [("matplotlib", "hist", "histogram", "distribution")]),
    (["from seaborn import heatmap as hm", "hm(m)"], [("seaborn", "heatmap", "heatmap", "relationship")]),
    (["import seaborn as sns", "sns.catplot(data=d, kind='violin')"],
     [("seaborn", "catplot", "violin plot", "distribution")]),
    (["import pandas as pd", "df = pd.read_csv('x')", "df.groupby('a').size().plot(kind='bar')"],
     [("pandas", "DataFrame.plot", "bar chart", "comparison")]),
    (["import pandas as pd", "df = pd.read_csv('x')", "df['a'].hist()"],
     [("pandas", "DataFrame.hist", "histogram", "distribution")]),
    (["train.plot.scatter(x='a', y='b')"], [("pandas", "DataFrame.plot.scatter", "scatter plot", "relationship")]),
    (["train.plot()"], []),  # an object of unknown type: not guessed
    (["import matplotlib.pyplot as plt", "fig, axes = plt.subplots(2, 2)",
      "for ax, c in zip(axes.flat, cols):\n    ax.boxplot(d[c])"],
     [("matplotlib", "Axes.boxplot", "box plot", "distribution")]),
    (["import matplotlib.pyplot as plt\nimport seaborn as sns", "g = sns.FacetGrid(d, col='c')\ng.map(plt.hist, 'x')"],
     [("matplotlib", "hist", "histogram", "distribution")]),
    (["from sklearn.metrics import ConfusionMatrixDisplay", "ConfusionMatrixDisplay.from_predictions(y, p)"],
     [("sklearn", "ConfusionMatrixDisplay.from_predictions", "confusion matrix", "model evaluation")]),
    (["from sklearn import tree", "tree.plot_tree(clf)"], [("sklearn", "plot_tree", "decision tree", "other")]),
    (["import plotly.express as px", "px.line(d, x='t', y='v').show()"],
     [("plotly", "express.line", "line plot", "relationship")]),
    (["import plotly.graph_objs as go", "go.Figure(go.Bar(y=[1]))"], [("plotly", "graph_objects.Bar", "bar chart",
                                                                     "comparison")]),
    (["import matplotlib.pyplot as plt", "def show_hist(c):\n    plt.hist(d[c])\n    plt.show()", "show_hist('a')"],
     [("matplotlib", "hist", "histogram", "distribution")]),
    (["import altair as alt", "alt.Chart(d).mark_bar().encode(x='a')"],
     [("altair", "Chart.mark_bar", "bar chart", "comparison")]),
    (["%matplotlib inline\nimport matplotlib.pyplot as plt", "!ls\nplt.pie(s)"],
     [("matplotlib", "pie", "pie chart", "composition")]),
])
def test_calls_are_found_through_aliases_and_types(cells: list[str], expected: list) -> None:
    assert calls_of(*cells) == expected


def test_unknown_calls_are_named_and_show_splits_figures() -> None:
    reader = CodeReader()
    reader.read("import seaborn as sns\nimport matplotlib.pyplot as plt")
    found = reader.read("sns.newplot(d)\nplt.title('t')\nsns.histplot(x)\nplt.show()\nplt.bar(a, b)\nplt.show()")
    assert [(c.library, c.function, c.text) for c in found.unknown] == [("seaborn", "newplot", "sns.newplot")]
    assert [[c.function for c in segment] for segment in found.segments()] == [["histplot"], ["bar"]]
    assert not reader.read("this is not python (").parsed


def test_a_function_defined_in_a_cell_without_figures_draws_later() -> None:
    reader = CodeReader()
    reader.read("import seaborn as sns", calls=False)
    reader.read("def dist(c):\n    sns.kdeplot(d[c])", calls=False)
    [call] = reader.read("dist('x')").calls
    assert (call.function, call.via) == ("kdeplot", "dist")


def test_cells_of_imports_read_without_parsing_are_read_as_parsed(monkeypatch) -> None:
    """Cells of plain imports are read without ``ast.parse``; what they bind is what the
    parse gives, whatever their spelling (dotted, aliased, starred, keywords, magics,
    comments, what Python refuses)."""
    import random

    import junobench.mining.calls as calls

    random.seed(7)
    modules = ["os", "numpy", "matplotlib.pyplot", "sklearn.metrics", "a.b.c", "class", "None", "match", "_x"]
    names = ["np", "plt", "confusion_matrix", "True", "case", "*", "b", "x.y"]

    def line() -> str:
        space = random.choice([" ", "  ", "\t"])

        def alias() -> str:
            return f"{space}as{space}{random.choice(names)}" if random.random() < 0.4 else ""

        if random.random() < 0.8:
            found = random.choice([
                f"import{space}" + ", ".join(random.choice(modules) + alias() for _ in range(random.randint(1, 3))),
                f"from{space}{random.choice(modules)}{space}import{space}"
                + ", ".join(random.choice(names) + alias() for _ in range(random.randint(1, 3)))])
        else:
            found = random.choice(["%matplotlib inline", "  # a comment", "", "pass", "  pass", "import os;",
                                   "from . import x", "import os . path", "import os \\", "from a import (b)",
                                   "x = 1", "import é", "import os,", "import os  # \0",
                                   "import os  # \ud800", "import os  # café"])
        return found + random.choice(["", "", "", "", "  # why", " "])

    def read(text: str, *, fast: bool) -> tuple:
        reader = calls.CodeReader()
        with monkeypatch.context() as patch:
            if not fast:
                patch.setattr(calls, "_imports_only", lambda text: None)
            found = reader.read(text, calls=False)
        return reader.aliases, reader.star, reader.modules, found.imports, found.parsed

    cells = ["\n".join(line() for _ in range(random.randint(1, 6))) for _ in range(3000)]
    unparsed = [cell for cell in cells if calls._imports_only(calls.python_source(cell)[0] or "") is not None]
    assert len(unparsed) > 150 and any(read(cell, fast=False)[2] for cell in unparsed)
    assert [read(cell, fast=True) for cell in cells] == [read(cell, fast=False) for cell in cells]


def test_the_mapping_is_versioned_and_checked(tmp_path: Path) -> None:
    kinds = chart_kinds()
    assert kinds.version and PURPOSES[-1] == "other"
    data = json.loads(MAPPING_FILE.read_text())
    data["charts"]["seaborn"]["histplot"] = ["histogram", "spread"]
    bad = tmp_path / "kinds.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(JunoBenchError, match=r"seaborn.histplot: .* is not \[kind, one of the purposes\]"):
        load_kinds(bad)
    data["charts"]["seaborn"]["histplot"] = ["histogram", "distribution"]
    data["evidence"]["stages"][0]["stage"] = "deployment"
    with pytest.raises(JunoBenchError, match="not a pipeline stage of the benchmark"):
        ChartKinds(data)


def test_purpose_and_stage_come_from_what_the_code_says() -> None:
    from test_mine_hostile import b64, code, display, notebook, png

    from junobench.mining.rows import Item, mine_notebook

    image = display({"image/png": b64(png())})
    cells = [code("import matplotlib.pyplot as plt", []),
             code("h = model.fit(X, y)\nplt.plot(h.history['loss'])\nplt.show()", [image]),
             code("pred = model.predict(X)\nplt.scatter(y, pred)\nplt.show()", [image]),
             code("model.fit(X, y)\nplot_history(h)", [image]),
             code("show_samples(images)", [image])]
    figures = mine_notebook(Item("n"), json.dumps(notebook(cells)).encode()).figures
    got = [(f["kind"], f["purpose"], f["purpose_reason"], f["stage"], f["stage_reason"]) for f in figures]
    assert got == [
        ("line plot", "training progress", "attribute history", "training", "a training progress figure"),
        ("scatter plot", "model evaluation", "method predict", "evaluation/prediction", "a model evaluation figure"),
        (None, None, None, "training", "method fit"),
        (None, None, None, None, None),
    ]


def test_the_benchmarks_own_figures(tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "mine", "sample", "--out", str(tmp_path / "bench"), "--no-progress")
    assert code == 0, err
    notebooks = pq.read_table(tmp_path / "bench" / PARQUET["notebooks"]).to_pylist()
    assert len(notebooks) == 30 and {n["version"] for n in notebooks} == {"original", "reproduced", "fixed"}
    names = {n["notebook"]: (n["case_id"], n["version"]) for n in notebooks}
    assert names["pandas_1/pandas_1.ipynb"] == ("pandas_1", "original")
    assert names["pandas_1/pandas_1_fixed.ipynb"] == ("pandas_1", "fixed")
    figures = pq.read_table(tmp_path / "bench" / PARQUET["figures"]).to_pylist()
    assert {(f["case_id"], f["version"]) for f in figures} == {
        ("matplotlib_1", "original"), ("matplotlib_1", "reproduced"), ("matplotlib_1", "fixed"),
        ("seaborn_1", "fixed")}
    assert all(not f["executed"] for f in figures)
    seaborn = next(f for f in figures if f["case_id"] == "seaborn_1")
    assert (seaborn["library"], seaborn["kind"], seaborn["purpose"]) == ("seaborn", "scatter plot", "relationship")


def test_the_reference_snapshots_notebooks_have_no_figures_but_are_rows(reference_snapshot, tmp_path) -> None:
    result = mine([reference_snapshot], tmp_path / "ref", progress=False)
    assert result.rows["notebooks"] == 222 and result.rows["figures"] == 0
    assert result.summary.execution == {}


def test_mining_is_deterministic_whatever_the_jobs(tmp_path: Path, monkeypatch) -> None:
    from make_corpus import make_corpus

    import junobench.mining.parallel as parallel

    monkeypatch.setattr(parallel, "BATCH", 3)  # many batches in flight: their rows must come back in order
    make_corpus(tmp_path / "corpus", 40, seed=1)
    one = mine([tmp_path / "corpus"], tmp_path / "one", jobs=1, progress=False)
    mine([tmp_path / "corpus"], tmp_path / "two", jobs=2, progress=False)
    assert json.loads((tmp_path / "one" / MANIFEST).read_text()) == json.loads((tmp_path / "two" / MANIFEST)
                                                                              .read_text())
    assert one.rows["figures"] == one.summary.figures > 40


def test_rows_wait_for_the_files_and_give_the_same_files(tmp_path: Path, monkeypatch) -> None:
    """The writer opens its files once ``datasets`` is imported (in a thread): rows that come
    before are held, at most ``HELD_FIGURES`` figures (then ``add`` waits for the import),
    and the files are those of a writer that had its schemas at once."""
    from make_corpus import make_corpus

    import junobench.mining.write as write
    from junobench.data.export import file_digest
    from junobench.mining.features import written_schemas
    from junobench.mining.parallel import Job, mine_batch
    from junobench.mining.rows import Item, Limits

    make_corpus(tmp_path / "corpus", 24, seed=3)
    paths = sorted((tmp_path / "corpus").rglob("*.ipynb"))
    batches = [mine_batch([Job(Item(p.name), p) for p in paths[i:i + 4]], Limits()).batches
               for i in range(0, len(paths), 4)]

    def files(folder: Path) -> dict:
        return {name: file_digest(folder / name) for name in PARQUET.values()}

    at_once = write.CorpusWriter(tmp_path / "at-once")
    for batch in batches:
        at_once.add(batch)
    at_once.close()

    class Importing:
        """An import that is not over until the writer waits for it."""

        waited = False

        def done(self) -> bool:
            return False

        def result(self) -> dict:
            self.waited = True
            return written_schemas()

    monkeypatch.setattr(write, "HELD_FIGURES", 12)
    writer = write.CorpusWriter(tmp_path / "held")
    writer.preparing = importing = Importing()  # type: ignore[assignment]
    index = 0
    while writer.waiting["figures"] + batches[index]["figures"].num_rows < 12:
        writer.add(batches[index])
        index += 1
    assert index and not writer.writers and not importing.waited  # held, nothing written
    writer.add(batches[index])
    assert importing.waited and writer.writers  # past the bound: it waited, the files are open
    for batch in batches[index + 1:]:
        writer.add(batch)
    writer.close()
    assert files(tmp_path / "held") == files(tmp_path / "at-once")


@pytest.fixture(scope="module")
def corpus_mined(tmp_path_factory) -> Path:
    from make_corpus import make_corpus

    folder = tmp_path_factory.mktemp("summaries")
    make_corpus(folder / "corpus", 30, seed=2)
    mine([folder / "corpus"], folder / "mined", jobs=1, progress=False)
    return folder / "mined"


def test_figures_prints_summaries_and_draws_them(corpus_mined: Path, tmp_path: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "figures", str(corpus_mined), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["notebooks"] == 30
    assert sum(data["figures_by"]["kind"].values()) == data["figures"]
    assert sum(sum(v.values()) for v in data["kind_by_library"].values()) == data["figures"]
    code, out, _ = run_cli(capsys, "figures", str(corpus_mined), "--format", "csv")
    assert out.startswith("statistic,value,group,count") and "kind by stage" in out
    code, out, err = run_cli(capsys, "figures", str(corpus_mined), "--plot", str(tmp_path / "plots"))
    assert code == 0 and out == "" and (tmp_path / "plots" / "kind_by_library.png").is_file()
    code, _, err = run_cli(capsys, "figures", str(tmp_path))
    assert code == 1 and "not a mined corpus" in err


def test_the_review_sheet_reads_back_with_agreement(corpus_mined: Path, tmp_path: Path, capsys) -> None:
    from openpyxl import load_workbook

    from junobench.mining.review import read_review, sample_ids

    sheet = tmp_path / "review.xlsx"
    code, _, err = run_cli(capsys, "figures", str(corpus_mined), "--sample", "12", "--seed", "4", "--sheet",
                           str(sheet))
    assert code == 0 and "wrote 12 figures" in err
    assert sample_ids(corpus_mined, 12, 4) == sample_ids(corpus_mined, 12, 4) != sample_ids(corpus_mined, 12, 5)
    assert run_cli(capsys, "figures", str(corpus_mined), "--sample", "3", "--sheet", str(sheet))[0] == 1
    automatic = {r["figure"]: r for r in pq.read_table(corpus_mined / PARQUET["figures"]).to_pylist()}
    book = load_workbook(sheet)
    ws = book["Figures"]
    assert len(ws._images) == 12  # a thumbnail per figure
    header = [c.value for c in ws[1]]
    assert "purpose" in header and "kind" in header and automatic  # the sheet names no automatic label
    for number, row in enumerate(ws.iter_rows(min_row=2), start=0):
        figure = automatic[row[1].value]
        row[8].value = figure["purpose"] if number % 3 else "other"  # a third disagree
        row[9].value = figure["stage"] or "none"
    ws._images = []  # openpyxl cannot save again the pictures of a book it loaded (a reviewer's Excel can)
    book.save(sheet)
    review = read_review(corpus_mined, sheet)
    purpose = review.agreement["purpose"]
    disagreeing = sum(1 for n in range(12) if n % 3 == 0 and automatic[ws.cell(row=n + 2, column=2).value]
                      ["purpose"] != "other")
    assert purpose.n == 12 and purpose.agreed == 12 - disagreeing
    assert review.agreement["stage"].agreed == 12 and review.agreement["kind"] is None
    code, out, _ = run_cli(capsys, "figures", str(corpus_mined), "--review", str(sheet))
    assert code == 0 and "purpose" in out and "kappa" in out
    ws.cell(row=2, column=9).value = "vibes"
    book.save(sheet)
    code, _, err = run_cli(capsys, "figures", str(corpus_mined), "--review", str(sheet))
    assert code == 1 and "purpose 'vibes' is not one of" in err
