"""pandas_2: DataFrame.append, removed in pandas 2.0 (AttributeError)."""

from __future__ import annotations

import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(404)
    months = pd.period_range("2021-01", "2023-12", freq="M").astype(str)
    rows = []
    for region, base in [("north", 420), ("south", 610), ("east", 350), ("west", 505)]:
        trend = base * (1 + 0.01 * r.normal(1, 0.2))
        for i, month in enumerate(months):
            season = 1 + 0.18 * ((i % 12) in (10, 11)) - 0.08 * ((i % 12) in (0, 1))
            units = int(trend * season * (1 + 0.006 * i) + r.normal(0, 25))
            rows.append((month, region, units, round(units * 19.9, 2)))
    return {"monthly_sales.csv": pd.DataFrame(rows, columns=["month", "region", "units",
                                                              "revenue"])}


CASE = Case(
    case_id="pandas_2",
    fname="store-sales-naive-forecast.ipynb",
    kaggle_slug="regional-monthly-sales",
    root_cause="library cause",
    crash_type="attribute error",
    pipeline_stage="data preparation",
    cells=[
        md("""
        # Regional sales: a naive forecast for next quarter
        Next quarter's units per region = the average of the same months last year.
        """),
        code("""
        import pandas as pd
        """),
        code("""
        sales = pd.read_csv('data/monthly_sales.csv')
        sales.tail()
        """),
        code("""
        pivot = sales.pivot(index='month', columns='region', values='units')
        pivot.tail(3)
        """),
        md("## Naive seasonal forecast"),
        code("""
        last_year = sales[sales['month'].isin(['2023-01', '2023-02', '2023-03'])]
        forecast = last_year.copy()
        forecast['month'] = forecast['month'].str.replace('2023', '2024')
        forecast['revenue'] = None
        forecast.head()
        """),
        code("""
        sales = sales.append(forecast, ignore_index=True)
        sales.tail()
        """),
        code("""
        sales.groupby('region')['units'].sum()
        """),
    ],
    order=[0, 1, 2, 3, 4],
    fixed={4: """sales = pd.concat([sales, forecast], ignore_index=True)
sales.tail()"""},
    diagnosis=(
        "The crash is an AttributeError because DataFrame.append was deprecated in "
        "pandas 1.4 and removed in pandas 2.0; with the installed pandas the method no "
        "longer exists. pd.concat([sales, forecast], ignore_index=True) does the same."
    ),
    runinfo_help="runinfo should report the installed pandas version",
    datasets=[Dataset(
        name="monthly_sales",
        title="Regional monthly sales 2021-2023 (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(404): per-region trend with a year-end peak plus noise")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
