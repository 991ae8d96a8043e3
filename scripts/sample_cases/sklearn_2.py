"""sklearn_2: a classifier fitted on a continuous target (ValueError)."""

from __future__ import annotations

import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(707)
    n = 260
    frame = pd.DataFrame({
        "fixed_acidity": r.normal(8.3, 1.6, n).round(1),
        "volatile_acidity": r.normal(0.53, 0.17, n).clip(0.1, 1.5).round(2),
        "citric_acid": r.uniform(0, 0.7, n).round(2),
        "residual_sugar": r.lognormal(0.9, 0.4, n).round(1),
        "chlorides": r.normal(0.085, 0.02, n).clip(0.02, 0.2).round(3),
        "alcohol": r.normal(10.4, 1.0, n).clip(8.4, 14.5).round(1),
        "pH": r.normal(3.31, 0.15, n).round(2),
    })
    frame["quality_score"] = (5.6 + 0.35 * (frame["alcohol"] - 10.4)
                              - 1.1 * (frame["volatile_acidity"] - 0.53)
                              + r.normal(0, 0.35, n)).round(2)
    return {"wine_quality.csv": frame}


CASE = Case(
    case_id="sklearn_2",
    fname="red-wine-quality-classifier.ipynb",
    kaggle_slug="red-wine-tasting-scores",
    root_cause="ML model confusion",
    crash_type="value error",
    pipeline_stage="training",
    cells=[
        md("""
        # Red wine quality from its chemistry
        The tasting panel's average score is predicted from physico-chemical measurements.
        """),
        code("""
        import pandas as pd
        from sklearn.linear_model import LinearRegression, LogisticRegression
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        """),
        code("""
        wine = pd.read_csv('data/wine_quality.csv')
        wine.head()
        """),
        code("""
        wine.corr()['quality_score'].sort_values(ascending=False).round(3)
        """),
        code("""
        X = wine.drop(columns='quality_score')
        y = wine['quality_score']
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=1)
        scaler = StandardScaler().fit(X_train)
        X_train_s, X_test_s = scaler.transform(X_train), scaler.transform(X_test)
        """),
        md("## Model"),
        code("""
        clf = LogisticRegression(max_iter=1000)
        clf.fit(X_train_s, y_train)
        print('test score:', round(clf.score(X_test_s, y_test), 3))
        """),
    ],
    order=[0, 1, 2, 3, 4],
    fixed={4: """clf = LinearRegression()
clf.fit(X_train_s, y_train)
print('test score:', round(clf.score(X_test_s, y_test), 3))"""},
    diagnosis=(
        "The crash is a ValueError (Unknown label type: continuous) because "
        "LogisticRegression is a classifier but quality_score is a continuous average "
        "score. A regression model (e.g. LinearRegression) fits this target; a "
        "classifier would need the score binned into classes first."
    ),
    runinfo_help="runinfo should show that y_train holds continuous float values",
    datasets=[Dataset(
        name="wine_quality",
        title="Red wine chemistry and tasting scores (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(707): score depends on alcohol and volatile acidity plus noise")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
