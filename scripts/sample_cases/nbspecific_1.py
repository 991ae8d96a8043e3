"""NBspecific_1: the train/test split cell was skipped after a kernel restart (NameError)."""

from __future__ import annotations

import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(101)
    n = 240
    hours = r.uniform(0, 12, n).round(1)
    sleep = r.normal(7, 1.1, n).clip(4, 10).round(1)
    attendance = r.uniform(55, 100, n).round(0)
    previous = r.normal(62, 12, n).clip(20, 100).round(0)
    score = (18 + 3.1 * hours + 1.8 * sleep + 0.22 * attendance + 0.35 * previous
             + r.normal(0, 5, n)).clip(0, 100).round(1)
    return {"student_scores.csv": pd.DataFrame({
        "hours_studied": hours, "sleep_hours": sleep, "attendance_pct": attendance,
        "previous_score": previous, "exam_score": score,
    })}


CASE = Case(
    case_id="NBspecific_1",
    fname="exam-score-prediction-linear-regression.ipynb",
    kaggle_slug="student-study-habits",
    root_cause="NB specific",
    crash_type="variable not found",
    pipeline_stage="training",
    cells=[
        md("""
        # Exam score prediction
        Can study habits predict the final exam score? A linear-regression baseline on
        the student study-habits data.
        """),
        code("""
        import os

        import numpy as np
        import pandas as pd
        from sklearn.linear_model import LinearRegression
        from sklearn.model_selection import train_test_split

        for dirname, _, filenames in os.walk('data'):
            for filename in filenames:
                print(os.path.join(dirname, filename))
        """),
        code("""
        df = pd.read_csv('data/student_scores.csv')
        df.head()
        """),
        md("## A first look at the data"),
        code("""
        df.describe().round(2)
        """),
        md("""
        ## Train / test split
        80% of the students for training, 20% held out.
        """),
        code("""
        X = df.drop(columns='exam_score')
        y = df['exam_score']
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=42)
        print(X_train.shape, X_test.shape)
        """),
        md("## Baseline: linear regression"),
        code("""
        model = LinearRegression()
        model.fit(X_train, y_train)
        print('R^2 on the test set:', round(model.score(X_test, y_test), 3))
        """),
        md("Which habits matter most?"),
        code("""
        coefficients = pd.Series(model.coef_, index=X.columns).sort_values()
        coefficients.round(3)
        """),
    ],
    # After a kernel restart the split cell (code cell 3) was not run again.
    order=[0, 1, 2, 4],
    fixed={},
    fixed_order=[0, 1, 2, 3, 4],
    diagnosis=(
        "The crash is a NameError because X_train is used in model.fit before it is "
        "defined: the cell that splits the data into X_train, X_test, y_train and y_test "
        "was not executed before the training cell (it was skipped after the kernel was "
        "restarted). Running the train/test split cell first fixes it."
    ),
    runinfo_help="runinfo should know that X_train is not defined in the kernel",
    datasets=[Dataset(
        name="student_scores",
        title="Student study habits and exam scores (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(101): exam score = linear function of the habits plus "
            "Gaussian noise", "240 generated students; no real person is described")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
