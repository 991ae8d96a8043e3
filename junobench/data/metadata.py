"""Input-dataset metadata files (``benchmark/<case>/data/<name>.metadata.json``).

One file per input dataset: title, source URL, licence, the files it provides
(relative to the case's ``data/`` folder) and the modifications made to the source data
(``downsampled``, ``synthetic``, …). The shape is the JSON Schema shipped in
``junobench/schemas/dataset_metadata.schema.json``.

>>> validate_metadata({"title": "Iris", "url": None, "license": "CC0: Public Domain",
...                    "files": ["iris.csv"], "modifications": []})
[]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from junobench.data.layout import PACKAGE_DIR
from junobench.errors import JunoBenchError
from junobench.safety.atomic import write_text
from junobench.safety.paths import read_regular
from junobench.safety.text import shortened
from junobench.utf8 import is_utf8

SCHEMA_FILE = PACKAGE_DIR / "schemas" / "dataset_metadata.schema.json"


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())


#: A metadata file larger than this is refused unread (real ones are a few hundred bytes).
MAX_METADATA_BYTES = 1 << 20


def validate_metadata(data: Any) -> list[str]:
    """Every schema violation of ``data``, as ``path: message`` strings (empty when valid)."""
    try:
        errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    except RecursionError:
        return ["(top level): nested too deeply"]
    if errors:
        return [f"{'/'.join(map(str, e.absolute_path)) or '(top level)'}: {shortened(e.message, 301)}"
                for e in errors]
    # valid by the schema, so shallow
    return [f"{where}: {text!r} is not UTF-8 text (a file name's bytes? rename the file)"
            for where, text in _not_utf8(data)]


def _not_utf8(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Where ``value`` holds text that UTF-8 cannot encode (a file name's undecodable
    bytes), which no metadata file can hold."""
    if isinstance(value, str):
        if not is_utf8(value):
            yield where or "(top level)", value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _not_utf8(item, f"{where}/{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _not_utf8(item, f"{where}/{index}" if where else str(index))


def load_metadata_json(path: str | Path, *, case: str | None = None) -> Any:
    """The JSON value of a metadata file, unvalidated; a file that is not a regular file,
    too large, not UTF-8 or not JSON (nested too deeply, numbers too long) raises a
    :class:`JunoBenchError` naming it."""
    path = Path(path)
    if not is_utf8(path.name):  # its name (before the suffix) is a dataset's name in the records
        raise JunoBenchError("the file name is not UTF-8 text", file=path, case=case,
                             hint="rename it: the name before .metadata.json names the dataset")
    try:
        raw = read_regular(path, limit=MAX_METADATA_BYTES)
    except OSError as error:
        raise JunoBenchError(f"cannot read dataset metadata ({error.strerror or error})",
                             file=path, case=case) from None
    try:
        data = json.loads(raw.decode("utf-8"))
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # lone surrogates fail here
    except (UnicodeDecodeError, UnicodeEncodeError, ValueError, RecursionError) as error:
        reason = ("nested too deeply" if isinstance(error, RecursionError) else
                  "a \\u escape is a lone surrogate, not a character"
                  if isinstance(error, UnicodeEncodeError) else shortened(str(error), 301))
        raise JunoBenchError(f"dataset metadata is not valid JSON ({reason})", file=path,
                             case=case, hint="fix the file; see junobench/schemas/") from None
    return data


def read_metadata(path: str | Path, *, case: str | None = None) -> dict[str, Any]:
    """Read and validate one metadata file; raises naming the file, the case and each problem."""
    path = Path(path)
    data: dict[str, Any] = load_metadata_json(path, case=case)  # an object: the schema says so
    problems = validate_metadata(data)
    if problems:
        raise JunoBenchError("invalid dataset metadata: " + "; ".join(problems), file=path,
                             case=case, hint="see junobench/schemas/dataset_metadata.schema.json")
    return data


def listed_file_present(data_dir: str | Path, listed: str) -> bool:
    """Whether ``listed``, an entry of a metadata file's ``files``, is in the case's
    ``data_dir``; False, not an error, when it cannot name a file there (too long, a NUL)."""
    try:
        return (Path(data_dir) / listed).exists()
    except (OSError, ValueError):
        return False


def write_metadata(path: str | Path, data: dict[str, Any]) -> None:
    """Validate and write a metadata file (stable key order, UTF-8, trailing newline),
    atomically: a failed write leaves the previous file intact."""
    problems = validate_metadata(data)
    if problems:
        raise JunoBenchError("invalid dataset metadata: " + "; ".join(problems), file=path)
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
