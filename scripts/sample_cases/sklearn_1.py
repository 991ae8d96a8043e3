"""sklearn_1: fitting a regressor on features with missing values (ValueError)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(606)
    n = 300
    living = r.normal(140, 40, n).clip(45, 320).round(0)
    lot = r.normal(600, 180, n).clip(150, 1500).round(0)
    rooms = (living / 28 + r.normal(0, 0.8, n)).clip(1, 10).round(0)
    age = r.integers(0, 90, n)
    garage = np.where(r.random(n) < 0.12, np.nan, (r.normal(25, 8, n)).clip(0, 60).round(0))
    price = (35_000 + 1_650 * living + 60 * lot + 4_000 * rooms - 900 * age
             + 1_200 * np.nan_to_num(garage) + r.normal(0, 20_000, n)).round(-2)
    return {"house_prices.csv": pd.DataFrame({
        "living_area_m2": living, "lot_area_m2": lot, "rooms": rooms, "age_years": age,
        "garage_area_m2": garage, "price": price,
    })}


CASE = Case(
    case_id="sklearn_1",
    fname="house-prices-ridge-baseline.ipynb",
    kaggle_slug="suburban-house-prices",
    root_cause="data confusion",
    crash_type="data value violation",
    pipeline_stage="training",
    cells=[
        md("""
        # House prices: a ridge regression baseline
        Predicting sale prices from a handful of numeric features.
        """),
        code("""
        import numpy as np
        import pandas as pd
        from sklearn.linear_model import Ridge
        from sklearn.metrics import mean_absolute_error
        from sklearn.model_selection import train_test_split
        """),
        code("""
        houses = pd.read_csv('data/house_prices.csv')
        houses.head()
        """),
        code("""
        houses.describe().round(1)
        """),
        code("""
        X = houses.drop(columns='price')
        y = houses['price']
        X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.25, random_state=0)
        """),
        md("## Ridge regression"),
        code("""
        model = Ridge(alpha=1.0)
        model.fit(X_train, y_train)
        """),
        code("""
        print('validation MAE:', round(mean_absolute_error(y_valid, model.predict(X_valid))))
        """),
    ],
    order=[0, 1, 2, 3, 4],
    fixed={4: """from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline

model = make_pipeline(SimpleImputer(strategy='median'), Ridge(alpha=1.0))
model.fit(X_train, y_train);"""},
    diagnosis=(
        "The crash is a ValueError because the training features contain NaN: "
        "garage_area_m2 is missing for some houses and Ridge does not accept missing "
        "values. The missing values have to be imputed (or the rows dropped) before "
        "fitting."
    ),
    runinfo_help="runinfo should show that garage_area_m2 has missing values",
    datasets=[Dataset(
        name="house_prices",
        title="Suburban house sales with basic features (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(606): price = linear function of the features plus noise; "
            "12% of garage areas left empty")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
