"""statsmodels_1: predicting without the constant column the model was fitted with."""

from __future__ import annotations

import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(111)
    n = 200
    tv = r.uniform(0, 300, n).round(1)
    radio = r.uniform(0, 50, n).round(1)
    newspaper = (r.gamma(2, 14, n)).clip(0, 115).round(1)
    sales = (3.0 + 0.045 * tv + 0.19 * radio + 0.001 * newspaper + r.normal(0, 1.5, n)).round(1)
    return {"advertising.csv": pd.DataFrame({"TV": tv, "radio": radio,
                                             "newspaper": newspaper, "sales": sales})}


CASE = Case(
    case_id="statsmodels_1",
    fname="advertising-spend-ols.ipynb",
    kaggle_slug="advertising-budgets-and-sales",
    root_cause="API misuse",
    crash_type="tensor shape mismatch",
    pipeline_stage="evaluation/prediction",
    cells=[
        md("""
        # Does advertising sell? Ordinary least squares on the advertising budgets
        """),
        code("""
        import numpy as np
        import pandas as pd
        import statsmodels.api as sm
        """),
        code("""
        ads = pd.read_csv('data/advertising.csv')
        train, test = ads.iloc[:160], ads.iloc[160:]
        ads.head()
        """),
        md("## Fitting the model"),
        code("""
        features = ['TV', 'radio', 'newspaper']
        X_train = sm.add_constant(train[features])
        ols = sm.OLS(train['sales'], X_train).fit()
        print(ols.params.round(4))
        print('R^2:', round(ols.rsquared, 3))
        """),
        md("## Held-out error"),
        code("""
        predictions = ols.predict(test[features])
        rmse = np.sqrt(np.mean((test['sales'] - predictions) ** 2))
        print('test RMSE:', round(rmse, 3))
        """),
    ],
    order=[0, 1, 2, 3],
    fixed={3: """predictions = ols.predict(sm.add_constant(test[features]))
rmse = np.sqrt(np.mean((test['sales'] - predictions) ** 2))
print('test RMSE:', round(rmse, 3))"""},
    diagnosis=(
        "The crash is a ValueError (shapes not aligned) because the model was fitted on "
        "sm.add_constant(train[features]), with 4 columns including the constant, but "
        "predict receives test[features] with only 3 columns. The test features need "
        "sm.add_constant too."
    ),
    runinfo_help="runinfo should show the shapes of the test features and of ols.params",
    datasets=[Dataset(
        name="advertising",
        title="Advertising budgets and product sales (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(111): sales = linear in TV and radio budgets plus noise")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
