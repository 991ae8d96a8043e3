"""numpy_1: reshaping a signal whose length is not a multiple of the window (ValueError)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(505)
    n = 1001
    t = np.arange(n) / 50
    activity = np.repeat(["walking", "sitting", "running", "walking"], [300, 250, 250, 201])
    amplitude = np.select([activity == "running", activity == "walking"], [2.5, 1.0], 0.05)
    frequency = np.select([activity == "running", activity == "walking"], [2.8, 1.8], 0.2)
    return {"accelerometer.csv": pd.DataFrame({
        "t": t.round(2),
        "acc_x": (amplitude * np.sin(2 * np.pi * frequency * t) + r.normal(0, 0.1, n)).round(3),
        "acc_y": (amplitude * np.cos(2 * np.pi * frequency * t) + r.normal(0, 0.1, n)).round(3),
        "acc_z": (9.81 + 0.5 * amplitude * r.normal(0, 1, n)).round(3),
        "activity": activity,
    })}


CASE = Case(
    case_id="numpy_1",
    fname="activity-recognition-windowing.ipynb",
    kaggle_slug="wrist-accelerometer-activities",
    root_cause="implementation error",
    crash_type="tensor shape mismatch",
    pipeline_stage="data preparation",
    cells=[
        md("""
        # Human activity recognition: windowing the accelerometer signal
        The 50 Hz signal is cut into 1-second windows of 50 samples, one example each.
        """),
        code("""
        import numpy as np
        import pandas as pd
        """),
        code("""
        data = pd.read_csv('data/accelerometer.csv')
        data = data.replace(-999.0, np.NaN)  # the logger writes -999 for a dropped sample
        print(data.shape)
        data['activity'].value_counts()
        """),
        code("""
        signal = data[['acc_x', 'acc_y', 'acc_z']].to_numpy()
        signal = (signal - signal.mean(axis=0)) / signal.std(axis=0)
        signal.shape
        """),
        md("## Windows of 50 samples"),
        code("""
        WINDOW = 50
        n_windows = len(signal) // WINDOW
        windows = signal.reshape(n_windows, WINDOW, 3)
        windows.shape
        """),
        code("""
        labels = data['activity'].to_numpy()[: n_windows * WINDOW].reshape(n_windows, WINDOW)[:, 0]
        features = np.concatenate([windows.mean(axis=1), windows.std(axis=1)], axis=1)
        features.shape, labels[:5]
        """),
    ],
    order=[0, 1, 2, 3],
    fixed={3: """WINDOW = 50
n_windows = len(signal) // WINDOW
windows = signal[: n_windows * WINDOW].reshape(n_windows, WINDOW, 3)
windows.shape"""},
    diagnosis=(
        "The crash is a ValueError because the signal has 1001 samples, which is not a "
        "multiple of the 50-sample window: n_windows = 1001 // 50 = 20 windows hold only "
        "1000 samples, so reshaping all 3003 values into (20, 50, 3) is impossible. The "
        "trailing sample must be cut off before reshaping."
    ),
    runinfo_help="runinfo should show the length of signal (1001 samples)",
    datasets=[Dataset(
        name="accelerometer",
        title="Wrist accelerometer recordings of daily activities (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(505): sinusoids per activity plus Gaussian noise, 50 Hz",
            "1001 samples: one more than 20 full windows")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
