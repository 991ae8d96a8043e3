"""seaborn_1: a hue column name that is not in the data (ValueError)."""

from __future__ import annotations

import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(909)
    parts = []
    for species, centre in [("setosa", (5.0, 3.4, 1.5, 0.25)),
                            ("versicolor", (5.9, 2.8, 4.3, 1.3)),
                            ("virginica", (6.6, 3.0, 5.5, 2.0))]:
        values = r.normal(centre, (0.35, 0.3, 0.25, 0.12), size=(40, 4)).clip(0.1)
        part = pd.DataFrame(values.round(1), columns=["sepal_length", "sepal_width",
                                                      "petal_length", "petal_width"])
        part["species"] = species
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    return {"flowers.csv": frame.iloc[r.permutation(len(frame))].reset_index(drop=True)}


CASE = Case(
    case_id="seaborn_1",
    fname="flower-species-visual-eda.ipynb",
    kaggle_slug="flower-measurements",
    root_cause="data confusion",
    crash_type="invalid argument",
    pipeline_stage="data visualization",
    cells=[
        md("""
        # Three flower species: how well do the measurements separate them?
        """),
        code("""
        import matplotlib.pyplot as plt
        import pandas as pd
        import seaborn as sns
        """),
        code("""
        flowers = pd.read_csv('data/flowers.csv')
        flowers.head()
        """),
        code("""
        flowers.groupby('species').mean().round(2)
        """),
        md("## Petal measurements by species"),
        code("""
        plt.figure(figsize=(5, 3.5))
        sns.scatterplot(data=flowers, x='petal_length', y='petal_width', hue='Species')
        plt.title('Petal length vs width')
        plt.show()
        """),
        code("""
        sns.pairplot(flowers, hue='species', height=1.6)
        plt.show()
        """),
    ],
    order=[0, 1, 2, 3],
    fixed={3: """plt.figure(figsize=(5, 3.5))
sns.scatterplot(data=flowers, x='petal_length', y='petal_width', hue='species')
plt.title('Petal length vs width')
plt.show()"""},
    diagnosis=(
        "The crash is a ValueError (Could not interpret value `Species` for `hue`) "
        "because the data has no column 'Species': the species column is named "
        "'species' in lower case, and seaborn looks column names up exactly."
    ),
    runinfo_help="runinfo should show the DataFrame's column names",
    datasets=[Dataset(
        name="flowers",
        title="Flower measurements of three species (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(909): 40 flowers per species from Gaussian clusters")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
