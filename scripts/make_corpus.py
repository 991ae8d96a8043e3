"""Make a corpus of realistic Kaggle-style notebooks to mine: markdown, code, outputs.

Each notebook (nbformat 4, Python kernel) reads a CSV with pandas, explores it with
markdown sections between code cells, shows tables (``df.head()`` as HTML and text),
prints, and draws figures with matplotlib, seaborn, pandas and scikit-learn, each figure a
PNG output of a typical size; some notebooks train a model and plot its evaluation. The
numbers follow the published corpus studies: about 3.7 images per Python notebook (342,722
images in 92,050 notebooks of the notebook-accessibility study), a notebook's figures from
432×288 to 1152×720 pixels (Matplotlib's inline backend at 72 dpi for the figure sizes
Kaggle notebooks use), 10–60 cells.

The PNGs are real Matplotlib renders of each kind of chart at each size (a pool drawn once
per run, seeded), each copy made unique with a text chunk that names its notebook and
output, so that no two images of the corpus are the same bytes. The same seed gives the
same corpus, byte for byte.

    python scripts/make_corpus.py corpus/ --notebooks 10000 --seed 0

Needs matplotlib (the plot extra).
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import random
import struct
import sys
import zlib
from pathlib import Path

#: Figure sizes (inches) and their weights: Kaggle notebooks favour wide figures.
SIZES = [((6, 4), 3), ((8, 5), 3), ((10, 6), 4), ((12, 8), 3), ((15, 5), 2), ((16, 10), 1)]
DPI = 72
COLUMNS = ["age", "income", "score", "height", "weight", "price", "rating", "duration", "count", "distance"]
CATEGORIES = ["city", "segment", "label", "brand", "region", "type"]

#: Chart kinds: the code that draws one (columns filled in) and how the pool draws it.
CHARTS: dict[str, list[str]] = {
    "hist": ["plt.figure(figsize={size})\nplt.hist(df['{a}'], bins=30, color='steelblue')\nplt.title('{a}')\n"
             "plt.xlabel('{a}')\nplt.show()",
             "plt.figure(figsize={size})\nsns.histplot(df['{a}'], kde=True)\nplt.title('Distribution of {a}')\n"
             "plt.show()",
             "df['{a}'].hist(bins=20, figsize={size})\nplt.show()"],
    "scatter": ["plt.figure(figsize={size})\nsns.scatterplot(data=df, x='{a}', y='{b}', hue='{c}')\nplt.show()",
                "df.plot.scatter(x='{a}', y='{b}', figsize={size})\nplt.show()",
                "fig, ax = plt.subplots(figsize={size})\nax.scatter(df['{a}'], df['{b}'], alpha=0.5)\n"
                "ax.set_xlabel('{a}')\nax.set_ylabel('{b}')\nplt.show()"],
    "bar": ["plt.figure(figsize={size})\nsns.countplot(x='{c}', data=df)\nplt.xticks(rotation=45)\nplt.show()",
            "df.groupby('{c}')['{a}'].mean().plot(kind='bar', figsize={size})\nplt.title('Mean {a} by {c}')\n"
            "plt.show()"],
    "line": ["plt.figure(figsize={size})\nplt.plot(df['{a}'].rolling(20).mean())\nplt.title('Rolling mean of {a}')\n"
             "plt.show()",
             "plt.figure(figsize={size})\nsns.lineplot(data=df, x='{a}', y='{b}')\nplt.show()"],
    "heatmap": ["plt.figure(figsize={size})\nsns.heatmap(df[NUMERIC].corr(), annot=True, cmap='coolwarm')\n"
                "plt.title('Correlation')\nplt.show()"],
    "box": ["plt.figure(figsize={size})\nsns.boxplot(x='{c}', y='{a}', data=df)\nplt.show()",
            "df.boxplot(column='{a}', by='{c}', figsize={size})\nplt.show()"],
    "pie": ["df['{c}'].value_counts().plot.pie(autopct='%1.1f%%', figsize={size})\nplt.ylabel('')\nplt.show()"],
    "confusion": ["cm = confusion_matrix(y_test, y_pred)\nplt.figure(figsize={size})\n"
                  "sns.heatmap(cm, annot=True, fmt='d')\nplt.xlabel('Predicted')\nplt.ylabel('True')\nplt.show()",
                  "ConfusionMatrixDisplay.from_predictions(y_test, y_pred)\nplt.show()"],
    "history": ["plt.figure(figsize={size})\nplt.plot(history.history['loss'], label='train')\n"
                "plt.plot(history.history['val_loss'], label='validation')\nplt.legend()\nplt.show()"],
}
PROSE_TEXT = ("Let us look at the data before modelling. The distribution below shows how the values spread, "
              "which columns are skewed and where outliers may hide. We then compare the groups and check how "
              "the features relate to the target, to decide on the preprocessing steps.")
PROSE = PROSE_TEXT.split()


@functools.cache
def png_pool() -> dict[tuple[str, tuple[int, int]], bytes]:
    """One real Matplotlib render per chart kind and figure size (the same for every corpus)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    generator = np.random.default_rng(0)
    pool = {}
    for kind in CHARTS:
        for size, _ in SIZES:
            fig, ax = plt.subplots(figsize=size, dpi=DPI)
            values = generator.normal(50, 12, 2000)
            if kind == "hist":
                ax.hist(values, bins=30)
            elif kind == "scatter":
                ax.scatter(values, values * 0.5 + generator.normal(0, 8, 2000), c=generator.integers(0, 4, 2000),
                           s=12)
            elif kind == "bar":
                ax.bar([f"c{i}" for i in range(8)], generator.integers(10, 100, 8))
            elif kind == "line" or kind == "history":
                ax.plot(np.cumsum(generator.normal(0, 1, 200)))
                ax.plot(np.cumsum(generator.normal(0, 1, 200)))
            elif kind in ("heatmap", "confusion"):
                image = ax.imshow(generator.random((8, 8)), cmap="coolwarm")
                fig.colorbar(image)
            elif kind == "box":
                ax.boxplot([generator.normal(m, 10, 100) for m in range(40, 80, 10)])
            elif kind == "pie":
                ax.pie(generator.integers(5, 30, 5), autopct="%1.1f%%")
            ax.set_title(f"{kind} of a column")
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
            plt.close(fig)
            pool[kind, size] = buffer.getvalue()
    return pool


def unique_png(png: bytes, label: str) -> bytes:
    """``png`` with a ``tEXt`` chunk naming ``label`` before its ``IEND``: other bytes, the same picture."""
    body = b"tEXt" + b"Comment\x00" + label.encode()
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    return png[:-12] + chunk + png[-12:]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def _markdown(rng: random.Random, heading: str) -> dict[str, object]:
    words = [rng.choice(PROSE) for _ in range(rng.randint(10, 80))]
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(f"## {heading}\n\n{' '.join(words)}.")}


def _code(source: str, count: int, outputs: list[dict[str, object]]) -> dict[str, object]:
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": outputs,
            "source": _lines(source)}


def _table(rng: random.Random, rows: int) -> list[dict[str, object]]:
    head = "".join(f"<th>{c}</th>" for c in COLUMNS[:6])
    body = "".join("<tr>" + "".join(f"<td>{rng.uniform(0, 100):.2f}</td>" for _ in range(6)) + "</tr>"
                   for _ in range(rows))
    text = "\n".join("  ".join(f"{rng.uniform(0, 100):8.2f}" for _ in range(6)) for _ in range(rows))
    return [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
             "data": {"text/html": _lines(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"),
                      "text/plain": _lines(text)}}]


def notebook(number: int, rng: random.Random, pool: dict[tuple[str, tuple[int, int]], bytes]) -> dict[str, object]:
    """One notebook of the corpus."""
    import base64

    cells: list[dict[str, object]] = []
    count = 0

    def code(source: str, outputs: list[dict[str, object]] | None = None) -> None:
        nonlocal count
        count += 1
        cells.append(_code(source, count, outputs or []))

    cells.append({"cell_type": "markdown", "metadata": {}, "source": [f"# Notebook {number}: exploring a dataset"]})
    code("import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\nimport seaborn as sns\n"
         "from sklearn.model_selection import train_test_split\nfrom sklearn.ensemble import RandomForestClassifier\n"
         "from sklearn.metrics import confusion_matrix, ConfusionMatrixDisplay\n%matplotlib inline")
    code("df = pd.read_csv('../input/data/train.csv')\nNUMERIC = df.select_dtypes('number').columns\ndf.head()",
         _table(rng, 5))
    shape = f"({rng.randint(1000, 90000)}, 12)\n"
    code("print(df.shape)\ndf.info()", [{"output_type": "stream", "name": "stdout",
                                        "text": _lines(shape + "col  non-null\n" * 12)}])
    images = min(20, round(rng.expovariate(1 / 3.7)))
    trains = rng.random() < 0.4
    kinds = [k for k in CHARTS if k not in ("confusion", "history")]
    for index in range(images):
        model_plot = trains and index >= images - 2
        kind = rng.choice(["confusion", "history"]) if model_plot else rng.choice(kinds)
        if model_plot and not any("fit(" in "".join(c["source"]) for c in cells if c["cell_type"] == "code"):
            code("X_train, X_test, y_train, y_test = train_test_split(df[NUMERIC], df['label'], test_size=0.2)\n"
                 "model = RandomForestClassifier(n_estimators=100)\nmodel.fit(X_train, y_train)\n"
                 "y_pred = model.predict(X_test)")
        if rng.random() < 0.7:
            cells.append(_markdown(rng, f"{kind.title()} of the data"))
        size = rng.choices([s for s, _ in SIZES], weights=[w for _, w in SIZES])[0]
        a, b = rng.sample(COLUMNS, 2)
        source = rng.choice(CHARTS[kind]).format(size=size, a=a, b=b, c=rng.choice(CATEGORIES))
        png = unique_png(pool[kind, size], f"notebook {number} figure {index}")
        code(source, [{"output_type": "display_data", "metadata": {},
                       "data": {"image/png": base64.b64encode(png).decode() + "\n",
                                "text/plain": ["<Figure size 864x576 with 1 Axes>"]}}])
        if rng.random() < 0.5:
            code(f"df['{a}'].describe()", _table(rng, 8))
    for _ in range(rng.randint(2, 10)):
        code(f"df['{rng.choice(COLUMNS)}'] = df['{rng.choice(COLUMNS)}'].fillna(0)")
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                        "name": "python3"},
                                         "language_info": {"name": "python", "version": "3.10.12"}},
            "nbformat": 4, "nbformat_minor": 5}


def make_corpus(out: Path, notebooks: int, seed: int = 0, per_folder: int = 1000) -> list[Path]:
    """Write ``notebooks`` notebooks under ``out`` (``out/000/nb_000000.ipynb`` …), seeded."""
    pool = png_pool()
    written = []
    for number in range(notebooks):
        folder = out / f"{number // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"nb_{number:06d}.ipynb"
        path.write_text(json.dumps(notebook(number, random.Random(f"{seed}-{number}"), pool), indent=1))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the corpus into (new or empty)")
    parser.add_argument("--notebooks", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"error: {args.out} is not empty", file=sys.stderr)
        return 1
    paths = make_corpus(args.out, args.notebooks, args.seed)
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} notebooks ({size / 2**20:.0f} MiB) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
