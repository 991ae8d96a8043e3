"""pandas_1: grouping by a column name in the wrong case (KeyError)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sample_cases import Case, Dataset, code, downsampled, md, rng, synthetic

FULL_ROWS = 20_000
KEPT_ROWS = 400


def make_full() -> pd.DataFrame:
    """The full generated passenger list (not shipped; downsampled below)."""
    r = rng(303)
    n = FULL_ROWS
    pclass = r.choice([1, 2, 3], n, p=[0.24, 0.21, 0.55])
    sex = r.choice(["male", "female"], n, p=[0.64, 0.36])
    age = np.where(r.random(n) < 0.2, np.nan, r.normal(30, 13, n).clip(0.5, 78).round(0))
    fare = (r.lognormal(2.6, 0.7, n) * np.select([pclass == 1, pclass == 2], [4.0, 1.5], 1.0))
    chance = 0.15 + 0.5 * (sex == "female") + 0.12 * (3 - pclass)
    return pd.DataFrame({
        "PassengerId": np.arange(1, n + 1),
        "Survived": (r.random(n) < chance).astype(int),
        "Pclass": pclass,
        "Sex": sex,
        "Age": age,
        "SibSp": r.choice([0, 1, 2, 3], n, p=[0.68, 0.23, 0.06, 0.03]),
        "Parch": r.choice([0, 1, 2], n, p=[0.76, 0.14, 0.10]),
        "Fare": fare.round(2),
        "Embarked": r.choice(["S", "C", "Q"], n, p=[0.72, 0.19, 0.09]),
    })


def make() -> dict[str, pd.DataFrame]:
    sample = make_full().sample(n=KEPT_ROWS, random_state=0).sort_values("PassengerId")
    return {"passengers.csv": sample}


CASE = Case(
    case_id="pandas_1",
    fname="ocean-liner-survival-eda.ipynb",
    kaggle_slug="ocean-liner-passengers",
    root_cause="data confusion",
    crash_type="key error",
    pipeline_stage="data preparation",
    cells=[
        md("""
        # Who survived? Exploring the ocean liner passenger list
        Survival rates by class, sex and family size, before building any model.
        """),
        code("""
        import numpy as np
        import pandas as pd
        """),
        code("""
        df = pd.read_csv('data/passengers.csv')
        print(df.shape)
        df.head()
        """),
        code("""
        df.isna().sum()
        """),
        md("## Feature engineering"),
        code("""
        df['Age'] = df['Age'].fillna(df['Age'].median())
        df['FamilySize'] = df['SibSp'] + df['Parch'] + 1
        df['IsAlone'] = (df['FamilySize'] == 1).astype(int)
        df[['FamilySize', 'IsAlone']].describe()
        """),
        md("## Survival rate by passenger class"),
        code("""
        survival_by_class = df.groupby('Pclass')['survived'].mean()
        survival_by_class.round(3)
        """),
        code("""
        df.groupby(['Pclass', 'Sex'])['Survived'].mean().unstack().round(3)
        """),
    ],
    order=[0, 1, 2, 3, 4],
    fixed={4: """survival_by_class = df.groupby('Pclass')['Survived'].mean()
survival_by_class.round(3)"""},
    diagnosis=(
        "The crash is a KeyError because the column 'survived' does not exist: the "
        "passenger table names the target column 'Survived' with a capital S, and pandas "
        "column labels are case-sensitive."
    ),
    runinfo_help="runinfo should show the DataFrame's column names",
    datasets=[Dataset(
        name="passengers",
        title="Ocean liner passenger list (synthetic, downsampled)",
        make=make,
        modifications=[
            synthetic("numpy default_rng(303): 20,000 passengers; survival depends on "
                      "sex and class"),
            downsampled(f"random {KEPT_ROWS} of {FULL_ROWS:,} rows "
                        "(DataFrame.sample, random_state=0)",
                        "the full generated table is not shipped"),
        ],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic; downsampled",
)
