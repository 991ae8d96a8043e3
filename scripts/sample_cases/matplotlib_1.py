"""matplotlib_1: indexing the single Axes returned by plt.subplots() (TypeError)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(808)
    days = pd.date_range("2023-01-01", "2023-12-31", freq="D")
    doy = np.arange(len(days))
    seasonal = 11 - 9 * np.cos(2 * np.pi * (doy - 15) / 365)
    t_max = seasonal + 4 + r.normal(0, 2.5, len(days))
    rain = np.where(r.random(len(days)) < 0.35, r.gamma(1.4, 3.2, len(days)), 0.0)
    frame = pd.DataFrame({
        "date": days.strftime("%Y-%m-%d"),
        "temp_max": t_max.round(1),
        "temp_min": (t_max - 7 - r.gamma(2, 1.2, len(days))).round(1),
        "precipitation_mm": rain.round(1),
        "wind_speed_ms": r.gamma(3, 1.4, len(days)).round(1),
    })
    frame.loc[r.choice(len(days), 6, replace=False), "wind_speed_ms"] = np.nan  # anemometer outages
    return {"weather_daily.csv": frame}


CASE = Case(
    case_id="matplotlib_1",
    fname="city-weather-2023-dashboard.ipynb",
    kaggle_slug="city-daily-weather-2023",
    root_cause="API misuse",
    crash_type="type error",
    pipeline_stage="data visualization",
    cells=[
        md("""
        # One year of weather in the city
        Daily temperatures, rain and wind for 2023, summarised per month.
        """),
        code("""
        import matplotlib.pyplot as plt
        import pandas as pd
        """),
        code("""
        weather = pd.read_csv('data/weather_daily.csv', parse_dates=['date'])
        weather = weather.fillna(method='ffill')  # a few days without wind readings
        weather['month'] = weather['date'].dt.month
        weather.head()
        """),
        code("""
        monthly = weather.groupby('month').agg(temp_max=('temp_max', 'mean'),
                                               temp_min=('temp_min', 'mean'),
                                               rain=('precipitation_mm', 'sum'))
        monthly.round(1)
        """),
        md("## Temperature and rain side by side"),
        code("""
        fig, axes = plt.subplots(figsize=(8, 3))
        axes[0].plot(monthly.index, monthly['temp_max'], label='max')
        axes[0].plot(monthly.index, monthly['temp_min'], label='min')
        axes[0].set_title('Mean temperature (°C)')
        axes[0].legend()
        axes[1].bar(monthly.index, monthly['rain'], color='tab:blue')
        axes[1].set_title('Total rain (mm)')
        plt.tight_layout()
        plt.show()
        """),
        code("""
        weather['wind_speed_ms'].describe().round(2)
        """),
    ],
    order=[0, 1, 2, 3],
    fixed={3: """fig, axes = plt.subplots(1, 2, figsize=(8, 3))
axes[0].plot(monthly.index, monthly['temp_max'], label='max')
axes[0].plot(monthly.index, monthly['temp_min'], label='min')
axes[0].set_title('Mean temperature (°C)')
axes[0].legend()
axes[1].bar(monthly.index, monthly['rain'], color='tab:blue')
axes[1].set_title('Total rain (mm)')
plt.tight_layout()
plt.show()"""},
    diagnosis=(
        "The crash is a TypeError ('Axes' object is not subscriptable) because "
        "plt.subplots(figsize=(8, 3)) creates a single subplot and returns one Axes "
        "object, not an array of Axes; axes[0] and axes[1] need plt.subplots(1, 2, ...)."
    ),
    runinfo_help="runinfo should show that axes is a single Axes object",
    datasets=[Dataset(
        name="weather_daily",
        title="Daily city weather, 2023 (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(808): seasonal temperature curve, gamma-distributed rain "
            "and wind; 6 days without a wind reading")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
