"""Synthetic stand-ins for tables whose licence forbids redistribution.

The synthetic table keeps what a notebook's code depends on and none of the records:

- the same columns in the same order, with the same dtypes;
- missing values in exactly the same cells;
- numbers drawn uniformly within each column's original range (integers stay integers;
  floats keep the original's number of decimals), dates likewise within their range and
  written in their original format;
- categorical values (text, booleans, categories) drawn from the column's original
  values with their original frequencies; codes written with leading zeros (``00123``)
  stay text;
- no original value of an identifier or of free text: identifiers (integer, text or date
  columns whose values are all distinct) stay distinct, as distinct integers or dates in
  the original range that are none of the originals (dates just past the range when it
  has no room; an integer range with no room is permuted: ``1..n`` is only a count), or
  generated texts; text columns of mostly distinct values (free text: names,
  addresses, comments) get generated texts too, each original value replaced by the same
  one wherever it appears. A generated text keeps the shape of the original: each
  letter replaced by a random letter of the same case, each digit by a random digit (a
  leading zero stays), other characters kept;
- no original row reproduced whole: a synthetic row equal to an original one is drawn
  again (a few tries; with very few distinct values a repeat can be inevitable, and is
  counted).

Deterministic: the same table and seed give the same bytes. CSV, TSV and parquet.

>>> import pandas as pd
>>> original = pd.DataFrame({"age": [23, 41, None, 35], "city": ["Oslo", "Lund", "Oslo", None]})
>>> fake, report = synthesize(original, seed=1)
>>> list(fake.columns), bool((fake.isna() == original.isna()).all().all()), report.rows
(['age', 'city'], True, 4)
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from junobench.construct import provenance
from junobench.errors import JunoBenchError
from junobench.safety.atomic import write_bytes

#: Text date formats recognised in CSV columns (a column is a date column when every
#: value parses with one of them).
DATE_FORMATS: tuple[str, ...] = (
    "%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d",
    "%d/%m/%Y", "%m/%d/%Y", "%d-%m-%Y", "%d.%m.%Y", "%Y%m%d", "%b %d, %Y", "%d %b %Y",
)
SUFFIXES = (".csv", ".tsv", ".parquet")
#: A number written with leading zeros (a code: 00123, 007): its text is kept.
_PADDED = r"^[+-]?0\d"
_TRIES = 20


@dataclass
class Report:
    """How each column was made, and how many rows still equal an original row."""

    rows: int
    columns: dict[str, str] = field(default_factory=dict)  # column → how it was drawn
    repeated_rows: int = 0


def synthesize(frame: Any, *, seed: int) -> tuple[Any, Report]:
    """A synthetic DataFrame shaped like ``frame`` (see the module docstring)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    report = Report(len(frame))
    columns = {}
    for name in frame.columns:
        columns[name], report.columns[str(name)] = _column(frame[name], rng)
    fake = pd.DataFrame(columns, index=frame.index)[list(frame.columns)]
    fixed = {i for i, name in enumerate(frame.columns) if is_identifier(frame[name])}
    report.repeated_rows = _avoid_original_rows(frame, fake, rng, fixed)
    return fake, report


def _column(column: Any, rng: Any) -> tuple[Any, str]:
    """A synthetic column with the dtype and missing cells of ``column``, and how it was drawn."""
    import numpy as np
    import pandas as pd

    mask = column.isna().to_numpy()
    present = column[~mask]
    n = len(column)
    dtype = column.dtype
    if present.empty:
        return column.copy(), "all missing: kept"
    values: Any
    distinct = _all_distinct(present)
    text_dates = _date_format(present) if _is_text(dtype) else None
    if distinct and pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        values = np.empty(n, dtype=object)
        low, high = int(present.min()), int(present.max())
        values[~mask] = _distinct_ticks(rng, low, high, len(present), present.to_numpy(),
                                        spill=False)
        values[mask] = values[~mask][0]
        dense = high - low + 1 - len(present) < len(present)  # too few others in range
        how = (f"distinct integers in [{low}, {high}], "
               + ("the range's own, permuted (a dense identifier: a count)" if dense
                  else "none an original (an identifier)"))
    elif _is_text(dtype) and text_dates is None and (distinct or _free_text(present)):
        values = np.empty(n, dtype=object)
        values[~mask] = _generated_texts(present.to_numpy(dtype=object), rng)
        values[mask] = values[~mask][0]
        how = ("generated texts shaped like the originals, none an original ("
               + ("an identifier)" if distinct else "free text, each value replaced alike)"))
    elif pd.api.types.is_bool_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
        values, how = _categorical(present, n, rng), "drawn from the original values"
    elif pd.api.types.is_integer_dtype(dtype):
        low, high = int(present.min()), int(present.max())
        values = rng.integers(low, high, size=n, endpoint=True)
        how = f"integers uniform in [{low}, {high}]"
    elif pd.api.types.is_float_dtype(dtype):
        values, how = _floats(present.to_numpy(dtype=float), n, rng)
    elif pd.api.types.is_datetime64_any_dtype(dtype):
        values = _dates(present, n, rng, distinct=distinct)
        how = "dates uniform in the original range" + (
            ", distinct, none an original (an identifier)" if distinct else "")
    elif text_dates is not None:
        fmt = text_dates
        parsed = pd.Series([datetime.strptime(str(v), fmt) for v in present])
        drawn = _dates(parsed, n, rng, distinct=distinct, unit=_format_unit(fmt))
        values = np.array([d.strftime(fmt) for d in pd.to_datetime(drawn)], dtype=object)
        how = f"dates ({fmt}) uniform in the original range"
        if distinct:
            how += ", distinct, none an original (an identifier)"
    else:
        values, how = _categorical(present, n, rng), "drawn from the original values"
    out = pd.Series(values, index=column.index).astype(dtype)
    out[mask] = column[mask]
    return out, how


def _floats(present: Any, n: int, rng: Any) -> tuple[Any, str]:
    """``n`` floats uniform in the range of the finite ``present`` values (rounded to their
    decimals); infinities come back with their share, drawn from the original ones."""
    import numpy as np

    finite = present[np.isfinite(present)]
    if not finite.size:
        values = present[rng.integers(0, present.size, size=n)]
        return values, "drawn from the original (infinite) values"
    least, most = float(finite.min()), float(finite.max())
    decimals = _decimals(finite)
    if math.isfinite(most - least):
        drawn = rng.uniform(least, most, size=n)
    else:  # a range wider than the largest float: interpolate without overflow
        share = rng.random(n)
        drawn = least * (1 - share) + most * share
    small = np.abs(drawn) < 1e15  # larger floats have no decimals to round (and would overflow)
    values = np.clip(np.where(small, np.round(np.where(small, drawn, 0.0), decimals), drawn), least, most)
    how = f"floats uniform in [{least:g}, {most:g}], {decimals} decimals"
    infinite = present[~np.isfinite(present)]
    if infinite.size:
        chosen = rng.random(n) < infinite.size / present.size
        values[chosen] = infinite[rng.integers(0, infinite.size, size=int(chosen.sum()))]
        how += ", infinities with their share"
    return values, how


def is_identifier(column: Any) -> bool:
    """A column of integers, text or dates whose (present) values are all distinct: an id,
    drawn without repeats and without an original value."""
    import pandas as pd

    dtype = column.dtype
    if pd.api.types.is_bool_dtype(dtype) or not (
            pd.api.types.is_integer_dtype(dtype) or _is_text(dtype)
            or pd.api.types.is_datetime64_any_dtype(dtype)):
        return False
    return _all_distinct(column.dropna())


def _all_distinct(present: Any) -> bool:
    if len(present) < 2:
        return False
    try:
        return bool(present.is_unique)
    except TypeError:  # unhashable cells
        return False


def _is_text(dtype: Any) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype))


def _free_text(present: Any) -> bool:
    """Text of mostly distinct values (names, addresses, comments), not categories."""
    try:
        distinct = present.nunique()
    except TypeError:
        return False
    return len(present) >= 10 and distinct > len(present) / 2


def _distinct_ticks(rng: Any, low: int, high: int, k: int, avoid: Any, *, spill: bool = True) -> Any:
    """``k`` distinct integers from ``[low, high]`` that are not in ``avoid``, in random
    order; when the range has too few, the rest just above it (``spill``) or, without,
    from ``avoid`` itself."""
    import numpy as np

    taken = {int(v) for v in np.asarray(avoid).tolist()}
    span = high - low + 1
    if span <= max(16 * (k + len(taken)), 1 << 16):
        pool = np.array([v for v in range(low, high + 1) if v not in taken], dtype=np.int64)
        if len(pool) < k:
            extra = ([v for v in range(high + 1, high + 1 + k + len(taken)) if v not in taken]
                     if spill else rng.permutation(sorted(taken)).tolist())
            pool = np.concatenate([pool, np.array(extra[:k - len(pool)], dtype=np.int64)])
            return rng.permutation(pool)
    chosen: dict[int, None] = {}
    while len(chosen) < k:
        for value in rng.integers(low, high, size=k - len(chosen), endpoint=True).tolist():
            if value not in taken:
                chosen[value] = None
    return np.array(list(chosen)[:k], dtype=np.int64)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _generated_texts(values: Any, rng: Any) -> Any:
    """Each value replaced by a generated text of its shape (see the module docstring),
    equal values alike, distinct ones apart, none an original value."""
    import numpy as np

    unique = list(dict.fromkeys(values))
    texts = [str(v) for v in unique]
    originals = set(texts)
    made: dict[int, str] = {}
    used: set[str] = set()
    todo = list(range(len(unique)))
    for attempt in range(_TRIES * 2):
        if not todo:
            break
        # a longer shape once a value's own keeps colliding (one-letter codes)
        grow = "x" * max(0, attempt - _TRIES + 1)
        drawn = _shaped_many([texts[i] + grow for i in todo], rng)
        left = []
        for i, candidate in zip(todo, drawn, strict=True):
            if candidate in originals or candidate in used:
                left.append(i)
            else:
                used.add(candidate)
                made[i] = candidate
        todo = left
    if todo:  # pragma: no cover - 40 draws of a shape all taken
        raise JunoBenchError(f"cannot generate a text unlike the originals for {texts[todo[0]][:40]!r}")
    mapping = {}
    for i, value in enumerate(unique):
        text = made[i]
        mapping[value] = int(text) if isinstance(value, int) and not isinstance(value, bool) \
            and text.lstrip("-").isdigit() else text
    return np.array([mapping[v] for v in values], dtype=object)


def _shaped_many(texts: list[str], rng: Any) -> list[str]:
    """A random text of each text's shape: letters by letters of the same case, digits by
    digits (a number's first digit stays a zero when it was one, and is not one otherwise),
    anything else kept. One draw for all."""
    draws = rng.integers(0, 90, size=sum(map(len, texts))).tolist()
    out = []
    position = 0
    for text in texts:
        chars = []
        previous_digit = False
        for char in text:
            draw = draws[position]
            position += 1
            if char.isascii() and char.isdigit():
                chars.append(str(draw % 10) if previous_digit else "0" if char == "0"
                             else str(1 + draw % 9))
                previous_digit = True
                continue
            previous_digit = False
            if char.isalpha():
                letter = _LETTERS[draw % 26]
                chars.append(letter.upper() if char.isupper() else letter)
            else:
                chars.append(char)
        out.append("".join(chars))
    return out


def _categorical(present: Any, n: int, rng: Any) -> Any:
    """``n`` values drawn from ``present``'s distinct values with their frequencies."""
    counts = present.value_counts(sort=False)
    values = counts.index.to_numpy(dtype=object)
    order = sorted(range(len(values)), key=lambda i: repr(values[i]))  # stable, seed-driven
    weights = counts.to_numpy()[order] / counts.sum()
    return values[order][rng.choice(len(order), size=n, p=weights)]


def _dates(present: Any, n: int, rng: Any, *, distinct: bool = False,
           unit: int | None = None) -> Any:
    """``n`` dates uniform in ``present``'s range, in steps of ``unit`` seconds (default:
    whole days when every value is one, else seconds); with ``distinct``, all different and
    none an original (just past the range when it has no room)."""
    import numpy as np
    import pandas as pd

    stamps = pd.to_datetime(present)
    # in seconds, so dates far from 1970 (years 1 to 9999) do not overflow nanoseconds
    seconds = (stamps.dt.tz_convert("UTC").dt.tz_localize(None)
               if getattr(stamps.dtype, "tz", None) is not None else stamps)
    seconds = seconds.to_numpy().astype("datetime64[s]").astype(np.int64)
    low, high = int(seconds.min()), int(seconds.max())
    if unit is None:
        unit = 86_400 if (stamps.dt.normalize() == stamps).all() else 1
    if distinct:
        ticks = _distinct_ticks(rng, low // unit, high // unit, n, seconds // unit) * unit
    else:
        ticks = rng.integers(low // unit, high // unit, size=n, endpoint=True) * unit
    values = pd.to_datetime(ticks.astype("datetime64[s]"))
    if getattr(present.dtype, "tz", None) is not None:
        values = values.tz_localize("UTC").tz_convert(present.dtype.tz)
    return values.to_numpy() if getattr(present.dtype, "tz", None) is None else values


def _format_unit(fmt: str) -> int:
    """The seconds a date format tells apart: 1 with ``%S``, 60 with ``%M``, … a day."""
    for code, seconds in (("%S", 1), ("%M", 60), ("%H", 3600)):
        if code in fmt:
            return seconds
    return 86_400


def _date_format(present: Any) -> str | None:
    """The one format every (text) value of a column parses with, if any."""
    values = [str(v) for v in present.unique()[:1000]]
    if not values or not all(isinstance(v, str) for v in present.head(100)):
        return None
    for fmt in DATE_FORMATS:
        try:
            for value in values:
                datetime.strptime(value, fmt)
        except ValueError:
            continue
        return fmt
    return None


def _decimals(values: Any, limit: int = 6) -> int:
    """Decimals needed to write every value (up to ``limit``)."""
    finite = [float(v) for v in values[:2000] if math.isfinite(v) and abs(v) < 1e12]
    for decimals in range(limit + 1):
        if all(math.isclose(v * 10**decimals, round(v * 10**decimals), abs_tol=1e-6)
               for v in finite):
            return decimals
    return limit


def _avoid_original_rows(original: Any, fake: Any, rng: Any, fixed: set[int]) -> int:
    """Redraw synthetic rows equal to an original row (the ``fixed`` columns, identifiers,
    keep their cell); the number left equal."""
    seen = {_row_key(row) for row in original.itertuples(index=False)}
    repeats = [i for i, row in enumerate(fake.itertuples(index=False)) if _row_key(row) in seen]
    if not repeats:
        return 0
    left = 0
    for i in repeats:
        for _ in range(_TRIES):
            donors = rng.integers(0, len(fake), size=len(fake.columns))
            candidate = [fake.iat[int(d), c]
                         if c not in fixed and not _missing(original.iat[i, c])
                         else fake.iat[i, c] for c, d in enumerate(donors)]
            if _row_key(candidate) not in seen:
                for c, value in enumerate(candidate):
                    fake.iat[i, c] = value
                break
        else:
            left += 1
    return left


def _row_key(row: Any) -> tuple[Any, ...]:
    return tuple(None if _missing(v) else (v.isoformat() if hasattr(v, "isoformat") else v)
                 for v in row)


def _missing(value: Any) -> bool:
    try:
        return value is None or bool(value != value)
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- files


def read_table(path: Path) -> Any:
    """A CSV/TSV (types inferred as pandas does) or parquet table."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise JunoBenchError(f"unsupported table format {suffix!r}", file=path,
                             hint=f"use one of {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise JunoBenchError("table not found", file=path)
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        sep = "\t" if suffix == ".tsv" else ","
        frame = pd.read_csv(path, sep=sep)
        text = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=True)
    except (ValueError, OSError, UnicodeDecodeError) as error:
        raise JunoBenchError(f"cannot read the table ({error})", file=path) from None
    for name in frame.columns:  # codes such as 00123 stay text, as written
        if frame[name].dtype.kind in "iuf" and text[name].str.match(_PADDED).any():
            frame[name] = text[name].astype(object)
    return frame


def to_bytes(frame: Any, suffix: str) -> bytes:
    """The table's file content in the format of ``suffix``."""
    buffer = io.BytesIO()
    if suffix == ".parquet":
        frame.to_parquet(buffer, index=False)
    else:
        text = frame.to_csv(None, sep="\t" if suffix == ".tsv" else ",", index=False)
        buffer.write(text.encode("utf-8"))
    return buffer.getvalue()


def synthetic(source: str | Path, out: str | Path, *, seed: int,
              metadata: str | Path | None = None, record: bool = True) -> Report:
    """Write a synthetic version of the table ``source`` to ``out`` (same format) and record
    it in the dataset's metadata file."""
    import pandas as pd

    source, out = Path(source), Path(out)
    if out.suffix.lower() != source.suffix.lower():
        raise JunoBenchError(f"the output should be a {source.suffix} file like the input",
                             file=out)
    if out.resolve() == source.resolve():
        raise JunoBenchError("the output would overwrite the original", file=out,
                             hint="write it beside, check it, then remove the original")
    meta = provenance.resolve_metadata(out, metadata, record=record)
    frame = read_table(source)
    fake, report = synthesize(frame, seed=seed)
    suffix = source.suffix.lower()
    data = to_bytes(fake, suffix)
    if suffix != ".parquet":  # CSV types come back by inference: check they did
        reread = pd.read_csv(io.BytesIO(data), sep="\t" if suffix == ".tsv" else ",")
        changed = [str(c) for c in frame.columns if reread[c].dtype != frame[c].dtype]
        if changed:
            data = to_bytes(_keep_text_types(frame, fake, changed), suffix)
    write_bytes(out, data)
    provenance.record(meta, {
        "kind": "synthetic",
        "method": "per-column sampling: numbers and dates uniform within the original "
                  "range, other values drawn from the original ones with their "
                  "frequencies; missing values in the same cells",
        "seed": seed,
        "source": source.name,
        "before": {"rows": len(frame), "bytes": source.stat().st_size},
        "after": {"rows": len(fake), "bytes": len(data)},
        "note": (f"{report.repeated_rows} row(s) equal an original row (too few distinct "
                 "values to avoid it)") if report.repeated_rows else None,
        "tool": provenance.tool("synthetic"),
    }, outputs=[out])
    return report


def _keep_text_types(original: Any, fake: Any, columns: list[str]) -> Any:
    """Text columns whose drawn values all look numeric would read back as numbers: put
    one original non-numeric value back in a drawn cell so they stay text."""
    fake = fake.copy()
    for name in columns:
        present = original[name].dropna()
        texts = [v for v in present.unique() if not _numeric(v)]
        cells = fake.index[fake[name].notna()]
        if texts and len(cells):
            fake.at[cells[0], name] = sorted(map(str, texts))[0]
    return fake


def _numeric(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
