"""construct synthetic: restricted tables replaced by synthetic ones of the same shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from junobench.cli import main
from junobench.construct.synthetic import synthesize, synthetic
from junobench.data.metadata import read_metadata, write_metadata
from junobench.errors import JunoBenchError


def housing(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "squareMeters": rng.integers(89, 99_999, n),
        "price": np.round(rng.uniform(10_313.5, 10_006_771.2, n), 1),
        "hasPool": rng.choice([True, False], n),
        "cityCode": rng.choice(["75001", "75002", "north-9"], n),
        "district": rng.choice(["Marais", "Bastille", "Opera", "Pigalle"], n),
        "made": pd.date_range("1990-01-01", periods=n, freq="7D").strftime("%d/%m/%Y"),
        "rooms": rng.integers(1, 100, n).astype(float),
    })
    frame.loc[rng.choice(n, 30, replace=False), "rooms"] = np.nan
    frame.loc[rng.choice(n, 15, replace=False), "district"] = None
    return frame


@pytest.fixture
def restricted(tmp_path: Path) -> Path:
    path = tmp_path / "source" / "ParisHousing.csv"
    path.parent.mkdir()
    housing().to_csv(path, index=False)
    return path


def _metadata(folder: Path, name: str) -> Path:
    path = folder / f"{name}.metadata.json"
    write_metadata(path, {"title": "Paris Housing Price Prediction",
                          "url": "https://www.kaggle.com/datasets/mssmartypants/paris-housing-price-prediction",
                          "license": "Proprietary", "files": [f"{name}.csv"], "modifications": []})
    return path


def test_same_columns_dtypes_and_missing_cells_different_values(restricted: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    meta = _metadata(data, "ParisHousing")
    out = data / "ParisHousing.csv"
    assert main(["construct", "synthetic", str(restricted), "--out", str(out), "--seed", "42"]) == 0
    original, fake = pd.read_csv(restricted), pd.read_csv(out)
    assert list(fake.columns) == list(original.columns)
    assert list(fake.dtypes) == list(original.dtypes)
    assert fake.isna().equals(original.isna())
    for column in ("squareMeters", "price", "rooms"):
        assert original[column].min() <= fake[column].min()
        assert fake[column].max() <= original[column].max()
        assert (fake[column] != original[column])[original[column].notna()].mean() > 0.9
    assert set(fake["district"].dropna()) <= set(original["district"].dropna())
    assert set(fake["cityCode"]) <= set(original["cityCode"])
    dates = pd.to_datetime(fake["made"], format="%d/%m/%Y")
    originals = pd.to_datetime(original["made"], format="%d/%m/%Y")
    assert originals.min() <= dates.min() and dates.max() <= originals.max()
    assert not set(map(tuple, fake.astype(str).values)) & set(map(tuple, original.astype(str).values))
    entry = read_metadata(meta)["modifications"][-1]
    assert entry["kind"] == "synthetic" and entry["seed"] == 42 and entry["source"] == "ParisHousing.csv"
    assert entry["before"]["rows"] == entry["after"]["rows"] == 300


def test_same_seed_same_bytes(restricted: Path, tmp_path: Path) -> None:
    outputs = []
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        out = tmp_path / f"{name}.csv"
        synthetic(restricted, out, seed=seed, record=False)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] != outputs[2]


def test_parquet_keeps_its_schema(tmp_path: Path) -> None:
    frame = housing(120)
    frame["made"] = pd.to_datetime(frame["made"], format="%d/%m/%Y")
    frame["district"] = frame["district"].astype("category")
    frame["code"] = pd.array(np.arange(120), dtype="Int64")
    frame.loc[3, "code"] = pd.NA
    source = tmp_path / "t.parquet"
    frame.to_parquet(source)
    for name in ("a", "b"):
        synthetic(source, tmp_path / f"{name}.parquet", seed=3, record=False)
    fake = pd.read_parquet(tmp_path / "a.parquet")
    assert list(fake.dtypes) == list(frame.dtypes)
    assert fake.isna().equals(frame.isna())
    assert frame["made"].min() <= fake["made"].min() and fake["made"].max() <= frame["made"].max()
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_low_cardinality_repeats_are_counted_not_hidden(tmp_path: Path) -> None:
    frame = pd.DataFrame({"flag": [True, False] * 10, "kind": ["a"] * 20})
    fake, report = synthesize(frame, seed=1)
    assert report.repeated_rows == 20  # every possible row is an original row
    assert fake.isna().equals(frame.isna())
    wide = pd.DataFrame({"x": range(50), "y": np.linspace(0, 1, 50)})
    assert synthesize(wide, seed=1)[1].repeated_rows == 0


def test_text_columns_stay_text(tmp_path: Path) -> None:
    """A text column whose drawn values happen to all look numeric still reads back as text."""
    frame = pd.DataFrame({"code": ["1"] * 99 + ["x"], "n": range(100)})
    source = tmp_path / "codes.csv"
    frame.to_csv(source, index=False)
    synthetic(source, tmp_path / "fake.csv", seed=0, record=False)
    assert pd.read_csv(tmp_path / "fake.csv")["code"].dtype == pd.read_csv(source)["code"].dtype


def test_refusals(restricted: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(JunoBenchError, match="overwrite"):
        synthetic(restricted, restricted, seed=1, record=False)
    with pytest.raises(JunoBenchError, match="like the input"):
        synthetic(restricted, tmp_path / "x.parquet", seed=1, record=False)
    assert main(["construct", "synthetic", str(restricted), "--out", str(tmp_path / "fake.csv"),
                 "--seed", "1"]) == 1
    assert "fake.metadata.json" in capsys.readouterr().err
    assert not (tmp_path / "fake.csv").exists()


def _every_kind(rows: int = 40) -> pd.DataFrame:
    """A table with a column of each kind, the identifiers dense (no room left in range)."""
    names = [f"Person {chr(65 + i % 26)}{i}" for i in range(rows)]
    names[1] = names[0]  # free text with a repeat: not an identifier
    return pd.DataFrame({
        "id": [7 * i + 3 for i in range(rows)],
        "row": range(1, rows + 1),
        "ref": [f"AB-{i:04d}" for i in range(rows)],
        "code": [f"{i:05d}" for i in range(rows)],
        "name": names,
        "day": [f"2020-01-{1 + i % 28:02d}" if i < 28 else f"2020-02-{i - 27:02d}" for i in range(rows)],
        "seen": [f"2021-03-04 10:{i:02d}" for i in range(rows)],
        "stamp": pd.date_range("2022-01-01", periods=rows, freq="D"),
        "city": ["Oslo", "Lund", "Umea", "Pite"] * (rows // 4),
        "score": np.linspace(0, 1, rows).round(3),
    })


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_no_original_identifier_or_free_text_value_is_copied(tmp_path: Path, suffix: str) -> None:
    frame = _every_kind()
    source = tmp_path / f"people{suffix}"
    if suffix == ".csv":
        frame.to_csv(source, index=False)
    else:
        frame.to_parquet(source, index=False)
    out = tmp_path / f"fake{suffix}"
    report = synthetic(source, out, seed=5, record=False)
    read = (lambda p: pd.read_csv(p, dtype=str)) if suffix == ".csv" else pd.read_parquet
    original, fake = read(source), read(out)
    for column in ("id", "ref", "code", "name", "day", "seen", "stamp"):
        copied = set(fake[column].astype(str)) & set(original[column].astype(str))
        assert not copied, (column, report.columns[column], sorted(copied)[:5])
    for column in ("id", "ref", "code", "day", "seen", "stamp", "row"):
        assert fake[column].is_unique, column
    # a dense integer range (1..n, a count) is permuted, not moved out of its range
    assert sorted(fake["row"].astype(int)) == list(range(1, len(frame) + 1))
    assert "permuted" in report.columns["row"]
    assert fake["name"].nunique() == original["name"].nunique()  # the repeat kept, renamed alike
    assert fake.loc[0, "name"] == fake.loc[1, "name"]
    assert all(c[:2].isupper() and c[2] == "-" and c[3] == "0" and c[4:].isdigit() for c in fake["ref"])
    assert all(len(c) == 5 and c.startswith("0") for c in fake["code"])
    assert set(fake["city"]) <= set(original["city"])  # categories are drawn from the originals
    assert "none an original" in report.columns["day"] and "none an original" in report.columns["id"]
    if suffix == ".csv":
        assert list(pd.read_csv(out).dtypes) == list(pd.read_csv(source).dtypes)
    else:
        assert list(fake.dtypes) == list(original.dtypes)
