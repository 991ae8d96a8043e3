"""mine's output for a fixed corpus is fixed: the rows of every config, images included, hash
to the digests recorded here. The corpus is built here byte for byte (PNGs written by hand
with stored deflate blocks, no library's encoder), so the digests depend on mine alone; a
change to mine that changes any row (a speed-up must not) fails this test. When a row is
meant to change (a new column, a mapping version), record the new digests deliberately."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from make_corpus import CHARTS, SIZES, notebook

from junobench.data.export import file_digest
from junobench.mining import Limits, mine
from junobench.mining.features import schemas, written_schemas
from junobench.mining.write import MANIFEST, PARQUET

#: sha256 of each config's rows (see :func:`rows_digest`), as mine wrote them when recorded.
DIGESTS = {
    "notebooks": "95d219344da195105edf2771d6b8a38ea74f056c17574f55819fe1fc873f14c4",
    "cells": "b9c1fdf659ab89e0e5d5102c8ca92fa117c5ce34ad7263da0ce65e0ac3ed5cb8",
    "figures": "8caa38e8bd43e7e46f83fa2b5a597f3e97d249aa35f151c2cd43166d1290e947",
}
ROWS = {"notebooks": 34, "cells": 489, "figures": 157}


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def stored(data: bytes) -> bytes:
    """``data`` as a zlib stream of stored (uncompressed) deflate blocks: the same bytes whatever zlib."""
    blocks = [data[i:i + 65535] for i in range(0, len(data), 65535)] or [b""]
    body = b"".join(bytes([i == len(blocks) - 1]) + struct.pack("<HH", len(b), len(b) ^ 0xFFFF) + b
                    for i, b in enumerate(blocks))
    return b"\x78\x01" + body + struct.pack(">I", zlib.adler32(data))


def png(width: int, height: int, shade: int) -> bytes:
    """A grey PNG of ``width`` × ``height``, written by hand."""
    rows = b"".join(b"\0" + bytes([(shade + y) % 256]) * width for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stored(rows)) + chunk(b"IEND", b"")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def display(data: dict) -> dict:
    return {"output_type": "display_data", "metadata": {}, "data": data}


def code(source: str | list[str], outputs: list[dict], count: int | None = 1) -> dict:
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "source": source, "outputs": outputs}


def python(cells: list[dict], language: str = "python") -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"kernelspec": {"name": language, "language": language, "display_name": language}}}


def bomb(width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stored(b"\0" * 64)) + \
        chunk(b"IEND", b"")


#: A 3×2 JPEG and a 2×2 GIF, as Pillow wrote them once (kept as bytes: no encoder runs here).
JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1x"
    "eXBkeFxlZ2P/wAALCAACAAMBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQR"
    "BRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4"
    "eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEB"
    "AAA/ACv/2Q==")
GIF = base64.b64decode("R0lGODdhAgACAIAAAAAAAAAAACwAAAAAAgACAAAIBgABCAQQEAA7")


def odd_outputs() -> list[dict]:
    """Outputs of every shape a figure row or a problem comes from."""
    good = png(7, 5, 40)
    return [
        display({"image/png": b64(good), "text/plain": "<Figure>"}),
        display({"image/png": [b64(good)[:40] + "\n", b64(good)[40:]]}),  # base64 split over lines
        display({"image/png": b64(good) + "\n"}),
        display({"image/png": "iVBORw0KGgo!!!not base64***"}),
        display({"image/png": b64(bomb(30000, 30000))}),
        display({"image/png": b64(good[:-20])}),
        display({"image/png": b64(good[:-5] + b"XXXXX")}),  # IEND's checksum fails
        display({"image/png": b64(b"GIF89a not really")}),
        display({"image/jpeg": b64(good)}),  # a PNG that says it is a JPEG
        display({"image/gif": b64(b"GIF89a" + struct.pack("<HH", 3, 2) + b"\x00\x00\x00;")}),
        display({"image/jpeg": b64(JPEG), "image/png": b64(good)}),  # PNG preferred
        display({"image/jpeg": b64(JPEG)}),
        display({"image/gif": b64(GIF)}),
        display({"image/webp": b64(JPEG)}),
        display({"image/svg+xml": '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'}),
        display({"image/svg+xml": '<svg xmlns="http://www.w3.org/2000/svg" onload="x()"/>'}),
        display({"image/svg+xml": "<svg><unclosed"}),
        display({"image/tiff": b64(b"II*\x00")}),
        display({"application/vnd.plotly.v1+json": {"data": [{"type": "bar", "y": [1, 2]}], "layout": {}}}),
        display({"application/vnd.vegalite.v4+json": json.dumps({"mark": "point"})}),
        display({"application/vnd.vegalite.v4+json": "{not json"}),
        display({"application/x-weird": "??", "text/plain": "x"}),
        display({"image/png": b64(png(300, 200, 9))}),  # over the output bound of the run
        {"output_type": "stream", "name": "stdout", "text": "hi\n"},
        {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": []},
        {"output_type": "execute_result", "execution_count": 3, "metadata": {},
         "data": {"text/html": "<table>" + "<tr><td>1</td></tr>" * 40 + "</table>", "text/plain": "t"}},
    ]


def write_corpus(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import make_corpus

    pool = {(kind, size): png(size[0] * 9, size[1] * 9, 17 * n + s)
            for n, kind in enumerate(CHARTS) for s, (size, _) in enumerate(SIZES)}
    monkeypatch.setattr(make_corpus, "png_pool", lambda: pool)
    (folder / "made").mkdir(parents=True)
    for number in range(24):
        (folder / "made" / f"nb_{number:02d}.ipynb").write_text(
            json.dumps(notebook(number, random.Random(f"golden-{number}"), pool), indent=1))
    hand = folder / "hand"
    hand.mkdir()
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Odd outputs\n", "<h2>An <b>HTML</b> heading</h2>"]},
        code("import matplotlib.pyplot as plt\nfrom matplotlib import pyplot\nimport seaborn as sns, numpy as np\n"
             "def draw(d):\n    sns.histplot(d)\n    plt.show()\nfig, axes = plt.subplots(2, 2)", []),
        code("for ax in axes.flat:\n    ax.plot([1, 2])\nplt.show()\ndraw(x)\nsns.kdeplot(y)\nplt.show()\n"
             "pyplot.mystery(1)\n%matplotlib inline\n!ls", odd_outputs(), None),
        {"cell_type": "markdown", "metadata": {}, "source": 42},
        code("x = 1", [display({"application/x-weird": "??"}), {"output_type": "no-such-type"}, "not an output"]),
        code("from sklearn.metrics import confusion_matrix\ncm = confusion_matrix(a, b)\nsns.heatmap(cm)",
             [display({"image/png": b64(png(20, 10, 3))})], 2**40),
        {"cell_type": "raw", "metadata": {}, "source": "raw text"},
        code("history = model.fit(X, y)\nplt.plot(history.history['loss'])\nplt.plot(h['val_loss'])",
             [display({"image/png": b64(png(30, 10, 4))}), display({"image/png": b64(png(31, 10, 5))})]),
        code("plt.hist(x)\nplt.show()\nsns.boxplot(y)\nplt.show()",
             [display({"image/png": b64(png(12, 9, 7))}), display({"image/png": b64(png(13, 9, 8))})]),
        code("def broken(:\n    plt.plot(1)", [display({"image/png": b64(png(8, 8, 6))})]),
    ]
    (hand / "odd.ipynb").write_text(json.dumps(python(cells)))
    (hand / "typed.ipynb").write_text(json.dumps(python([cells[0], cells[1], cells[2], cells[5], cells[7]])))
    (hand / "r_kernel.ipynb").write_text(json.dumps(python(
        [code("plot(1:10)", [display({"image/png": b64(png(4, 4, 1))})])], language="R")))
    (hand / "no_language.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 2, "metadata": {},
                                                         "cells": [code(["plt.", "hist(x)"], [])]}))
    (hand / "not_json.ipynb").write_text('{"cells": [')
    (hand / "list.ipynb").write_text("[1, 2, 3]")
    (hand / "binary.ipynb").write_bytes(b"\xff\xfe\x00garbage")
    (hand / "huge.ipynb").write_text(json.dumps(python([code("x", [])])) + " " * 700_000)
    (hand / "nbformat5.ipynb").write_text(json.dumps({"nbformat": 5, "metadata": {}}))
    (hand / "nbformat3.ipynb").write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                                      "worksheets": [{"cells": [
        {"cell_type": "code", "input": "plt.plot(x)", "language": "python", "prompt_number": 1,
         "outputs": [{"output_type": "display_data", "png": b64(png(6, 6, 2)), "metadata": {}}]}]}]}))


def rows_digest(path: Path) -> str:
    """sha256 of a parquet file's rows as JSON (bytes as their sha256): the rows, not the file's
    encoding (which names the pyarrow version that wrote it)."""
    def plain(value: object) -> object:
        return {"sha256": hashlib.sha256(value).hexdigest()} if isinstance(value, bytes) else repr(value)

    digest = hashlib.sha256()
    for row in pq.read_table(path).to_pylist():
        digest.update(json.dumps(row, default=plain, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("golden")
    with pytest.MonkeyPatch.context() as monkeypatch:
        write_corpus(folder / "corpus", monkeypatch)
    return folder / "corpus"


LIMITS = Limits(notebook_bytes=60_000 + 600_000, output_bytes=60_000, pixels=5_000_000)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_fixed_corpus_gives_the_recorded_rows(golden: Path, tmp_path: Path, jobs: int) -> None:
    result = mine([golden / "made", golden / "hand"], tmp_path / "out", jobs=jobs, limits=LIMITS, progress=False)
    assert result.rows == ROWS
    assert {config: rows_digest(tmp_path / "out" / path) for config, path in PARQUET.items()} == DIGESTS
    manifest = json.loads((tmp_path / "out" / MANIFEST).read_text())["files"]
    assert manifest == {name: file_digest(tmp_path / "out" / name) for name in manifest}  # taken while writing
    croissant = (tmp_path / "out" / "croissant.json").read_text()
    assert all(manifest[path]["sha256"] in croissant for path in PARQUET.values())


def test_the_workers_schemas_are_those_the_files_are_written_with() -> None:
    """Workers build record batches from the schemas made without ``datasets``; the files are
    written with ``datasets``' (its metadata, the image as ``datasets.Image`` stores one)."""
    from datasets import Image

    written = written_schemas()
    assert {config: schema.remove_metadata() for config, schema in written.items()} == schemas()
    assert all(b"huggingface" in schema.metadata for schema in written.values())
    assert schemas()["figures"].field("image").type == Image().pa_type
