"""mine on hostile and malformed input: each bad notebook, output or image is a row whose
problem names it, never a traceback, and nothing is read without a bound or through a link."""

from __future__ import annotations

import base64
import io
import json
import os
import struct
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_run import run_cli

from junobench.mining import Limits, mine
from junobench.mining.visuals import decode_base64, svg_check, visual_of
from junobench.mining.write import MANIFEST, PARQUET


def png(width: int = 4, height: int = 3) -> bytes:
    """A valid PNG of ``width`` × ``height`` (drawn by Pillow)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def bomb_png(width: int, height: int) -> bytes:
    """A small PNG whose header claims ``width`` × ``height`` pixels, every chunk's checksum right."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + \
        chunk(b"IEND", b"")


def jpeg() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (5, 5), "blue").save(buffer, format="JPEG")
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def display(data: dict) -> dict:
    return {"output_type": "display_data", "metadata": {}, "data": data}


def notebook(cells: list[dict], language: str = "python") -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
            "metadata": {"kernelspec": {"name": language, "language": language, "display_name": language}}}


def code(source: str, outputs: list[dict]) -> dict:
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": source, "outputs": outputs}


SAFE_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40pt" height="30pt" viewBox="0 0 40 30">'
            '<rect width="40" height="30" fill="green"/></svg>')
SCRIPT_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script>'
              '<rect width="10" height="10"/></svg>')
HANDLER_SVG = '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)" width="10" height="10"/>'
LINKED_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" '
              'height="10"><image xlink:href="file:///etc/passwd" width="10" height="10"/></svg>')
ENTITY_SVG = ('<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
              '<svg xmlns="http://www.w3.org/2000/svg">&b;</svg>')

#: output → the problem its figure row must name (None: a good figure)
HOSTILE = [
    (display({"image/png": b64(png())}), None),
    (display({"image/png": "iVBORw0KGgo!!!not base64***"}), "malformed base64"),
    (display({"image/png": b64(bomb_png(30000, 30000))}), "30000×30000 pixels, over the bound"),
    (display({"image/png": b64(png()[:-20])}), "a damaged PNG image"),
    (display({"image/png": b64(jpeg())}), "a JPEG image, not what its MIME type says"),
    (display({"image/png": b64(b"GIF89a not really")}), "the data is not an image"),
    (display({"image/jpeg": b64(jpeg())}), None),
    (display({"image/svg+xml": SCRIPT_SVG}), "<script> element"),
    (display({"image/svg+xml": HANDLER_SVG}), "event handler"),
    (display({"image/svg+xml": LINKED_SVG}), "refers to something outside itself"),
    (display({"image/svg+xml": ENTITY_SVG}), "document type"),
    (display({"image/svg+xml": "<svg><unclosed"}), "not well-formed XML"),
    (display({"image/tiff": b64(b"II*\x00")}), "an image type junobench does not read"),
    (display({"application/vnd.plotly.v1+json": {"data": [{"type": "bar", "y": [1, 2]}], "layout": {}}}), None),
    (display({"application/vnd.vegalite.v4+json": "{not json"}), "the specification is not JSON"),
    (display({"image/png": b64(os.urandom(300_000))}), "over the 195.3 KiB bound: not read"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile") / "corpus"
    folder.mkdir()
    outputs = [output for output, _ in HOSTILE]
    cells = [code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()", outputs),
             code("x = 1", [display({"application/x-weird": "??"}),
                            {"output_type": "stream", "name": "stdout", "text": "hi"},
                            {"output_type": "no-such-type"}, "not an output"]),
             {"cell_type": "markdown", "metadata": {}, "source": 42}]
    (folder / "bad_outputs.ipynb").write_text(json.dumps(notebook(cells)))
    (folder / "r_kernel.ipynb").write_text(json.dumps(notebook(
        [code("plot(1:10)", [display({"image/png": b64(png())})])], language="R")))
    (folder / "not_json.ipynb").write_text("{\"cells\": [")
    (folder / "not_a_notebook.ipynb").write_text("[1, 2, 3]")
    (folder / "binary.ipynb").write_bytes(b"\xff\xfe\x00garbage")
    (folder / "huge.ipynb").write_text(json.dumps(notebook([code("x", [])])) + " " * 5000)
    (folder / "escape.ipynb").symlink_to("/etc/hostname")
    os.mkfifo(folder / "pipe.ipynb")
    linked = tmp_path_factory.mktemp("elsewhere")
    (linked / "secret.ipynb").write_text(json.dumps(notebook([])))
    (folder / "linked_folder").symlink_to(linked, target_is_directory=True)
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "bad_outputs-checkpoint.ipynb").write_text("{}")
    old = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "plot(x)", "language": "python", "prompt_number": 1,
         "outputs": [{"output_type": "display_data", "png": b64(png()), "metadata": {}}]}]}]}
    (folder / "nbformat3.ipynb").write_text(json.dumps(old))
    return folder


@pytest.fixture(scope="module")
def mined(hostile, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mined") / "out"
    limits = Limits(notebook_bytes=4096 + 1_000_000, output_bytes=200_000, pixels=50_000_000)
    huge = hostile / "huge.ipynb"
    huge.write_text(huge.read_text() + " " * 1_000_000)
    mine([hostile], out, limits=limits, jobs=1, progress=False)
    return out


def rows(out: Path, config: str) -> dict[str, dict]:
    key = "figure" if config == "figures" else "notebook"
    return {r[key]: r for r in pq.read_table(out / PARQUET[config]).to_pylist()}


def test_each_bad_output_is_a_figure_row_with_its_problem(mined: Path) -> None:
    figures = rows(mined, "figures")
    bad = {f["output"]: f for f in figures.values() if f["notebook"] == "corpus/bad_outputs.ipynb"}
    assert sorted(bad) == list(range(len(HOSTILE)))
    for number, (_, expected) in enumerate(HOSTILE):
        row = bad[number]
        if expected is None:
            assert row["problem"] is None, (number, row["problem"])
            assert row["image"] is not None or row["text"] is not None
        else:
            assert expected in (row["problem"] or ""), (number, row["problem"])
            assert row["image"] is None
    assert bad[0]["calls"][0]["function"] == "plot"  # the cell's code is still analysed
    assert json.loads(bad[13]["text"])["data"][0]["type"] == "bar"  # a Plotly spec, kept as JSON
    assert bad[7]["text"] is None  # an SVG with a script is not kept, not even as text


def test_each_bad_notebook_is_a_row_with_its_problem(mined: Path) -> None:
    notebooks = rows(mined, "notebooks")
    expected = {
        "corpus/not_json.ipynb": "not a notebook",
        "corpus/not_a_notebook.ipynb": "not a notebook",
        "corpus/binary.ipynb": "not a notebook",
        "corpus/huge.ipynb": "over the 1,004,096-byte bound of a notebook",
        "corpus/escape.ipynb": "a symbolic link: not followed",
        "corpus/pipe.ipynb": "a FIFO (named pipe), not a regular file",
        "corpus/r_kernel.ipynb": "a notebook of the r kernel: its code is not analysed",
    }
    for notebook_id, problem in expected.items():
        assert any(problem in p for p in notebooks[notebook_id]["problems"]), notebooks[notebook_id]["problems"]
    bad = notebooks["corpus/bad_outputs.ipynb"]["problems"]
    assert any("unknown MIME type 'application/x-weird'" in p for p in bad)
    assert any("unknown output type 'no-such-type'" in p for p in bad)
    assert any("output 3: not an output" in p for p in bad)
    assert any("cell 2: its source is not text" in p for p in bad)
    assert not any("linked_folder" in n or "checkpoint" in n for n in notebooks)  # links, hidden folders
    r_figures = [f for f in rows(mined, "figures").values() if f["notebook"] == "corpus/r_kernel.ipynb"]
    assert len(r_figures) == 1 and r_figures[0]["image"] is not None and r_figures[0]["calls"] == []
    old = notebooks["corpus/nbformat3.ipynb"]
    assert old["nbformat"] == 4 and old["figures"] == 1 and old["problems"] == []


def test_the_cli_reports_hostile_input_without_a_traceback(hostile, tmp_path, capsys) -> None:
    code_, out, err = run_cli(capsys, "mine", str(hostile), "--out", str(tmp_path / "out"), "--no-progress",
                              "--max-output-size", "200000", "--max-pixels", "1000000", "--jobs", "2")
    assert code_ == 0, err
    assert "Traceback" not in err and out == ""
    assert "figures with a problem" not in err or "wrote" in err


def test_decoding_is_bounded_and_strict() -> None:
    assert decode_base64(b'"' + base64.b64encode(b"abc") + b'\\n"') == (b"abc", None)
    assert decode_base64(json.dumps(["YW", "Jj\n"]).encode()) == (b"abc", None)
    data, problem = decode_base64(b'"YW Jj"')
    assert data is None and "malformed base64" in problem
    assert visual_of({"image/png": b'"' + b"A" * 300 + b'"'}, max_bytes=100).problem.endswith("bound: not read")
    assert svg_check(SAFE_SVG) == (None, pytest.approx((40 * 4 / 3, 30 * 4 / 3)))


def test_a_safe_svg_is_drawn_as_png_and_kept_as_text() -> None:
    pytest.importorskip("resvg_py", reason="drawing SVG needs the mine extra")
    visual = visual_of({"image/svg+xml": json.dumps(SAFE_SVG).encode()})
    assert visual.problem is None and visual.text == SAFE_SVG
    assert visual.image.startswith(b"\x89PNG") and (visual.width, visual.height) == (53, 40)
    height_first = SAFE_SVG.replace('width="40pt" height="30pt"', 'height="30pt" width="40pt"')
    drawn = visual_of({"image/svg+xml": json.dumps(height_first).encode()})
    assert (drawn.width, drawn.height) == (53, 40)  # each size to its own attribute, in any order
    giant = SAFE_SVG.replace('width="40pt" height="30pt"', 'width="100000" height="100000"')
    drawn = visual_of({"image/svg+xml": json.dumps(giant).encode()}, max_pixels=10_000)
    assert drawn.problem is None and drawn.width * drawn.height <= 10_000


@pytest.mark.parametrize("size", ['width="10" height="10" viewBox="0 0 inf 1"', 'width="1e999" height="5"',
                                  'width="nan" height="-5" viewBox="0 0 nan 3"',
                                  'width="1e-300" height="1e-300"', 'viewBox="0 0 1e400 1e400"'])
def test_an_svg_whose_size_no_picture_can_have_is_a_row_not_a_crash(size) -> None:
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" {size}><rect width="5" height="5"/></svg>'
    problem, own = svg_check(svg)
    assert problem is None and (own is None or all(0 < side < 1e300 for side in own))  # never inf or nan
    visual = visual_of({"image/svg+xml": json.dumps(svg).encode()})
    assert visual.text == svg
    if visual.image is not None:
        assert visual.width * visual.height <= 4096 * 4096


def test_a_listing_names_notebooks_inside_its_folder_only(tmp_path, capsys) -> None:
    from junobench.data.tables import write_table

    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "good.ipynb").write_text(json.dumps(notebook([code("x", [display({"image/png": b64(png())})])])))
    (tmp_path / "outside.ipynb").write_text(json.dumps(notebook([])))
    listing = tmp_path / "listing.xlsx"
    write_table(listing, [{"fname": "good.ipynb"}, {"fname": "../outside.ipynb"}, {"fname": "/etc/passwd"},
                          {"fname": "missing.ipynb"}], ["fname"])
    code_, _, err = run_cli(capsys, "mine", str(listing), "--notebooks", str(folder), "--out", str(tmp_path / "o"),
                            "--no-progress", "--jobs", "1")
    assert code_ == 0, err
    notebooks = rows(tmp_path / "o", "notebooks")
    assert notebooks["good.ipynb"]["figures"] == 1 and notebooks["good.ipynb"]["problems"] == []
    assert "is not a path inside the notebooks folder" in notebooks["../outside.ipynb"]["problems"][0]
    assert "is not a path inside the notebooks folder" in notebooks["/etc/passwd"]["problems"][0]
    assert "No such file" in notebooks["missing.ipynb"]["problems"][0]


def test_the_output_replaces_only_an_earlier_mined_corpus(hostile, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code_, _, err = run_cli(capsys, "mine", "sample", "--out", str(out), "--no-progress")
    assert code_ == 1 and err.startswith("error: ") and "not a mined corpus" in err and len(err.splitlines()) == 1
    (out / "notes.txt").unlink()
    assert run_cli(capsys, "mine", "sample", "--out", str(out), "--no-progress")[0] == 0
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    import junobench.mining.parallel as parallel

    def broken(jobs, limits):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(parallel, "mine_batch", broken)
    with pytest.raises(RuntimeError):
        mine(["sample"], out, jobs=1, progress=False)
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # the earlier one, whole
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left
    code_, _, err = run_cli(capsys, "mine", str(hostile), "--out", str(hostile / "mined"), "--no-progress")
    assert code_ == 1 and "output folder is an input" in err
    assert json.loads((out / MANIFEST).read_text())["format"] == "junobench-mined/1"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_notebook_that_makes_mining_fail_is_a_row_and_the_run_goes_on(tmp_path, monkeypatch, jobs) -> None:
    from junobench.mining import rows as mined_rows

    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook([code("x", [display({"image/png": b64(png())})])])))
    real = mined_rows._mine

    def failing_on_b(item, *args, **kwargs):
        if item.notebook.endswith("b.ipynb"):
            raise RuntimeError("boom\nsecond line")
        return real(item, *args, **kwargs)

    monkeypatch.setattr(mined_rows, "_mine", failing_on_b)  # workers are forked after this
    result = mine([folder], tmp_path / "out", jobs=jobs, progress=False)
    assert result.rows == {"notebooks": 3, "cells": 2, "figures": 2}
    notebooks = rows(tmp_path / "out", "notebooks")
    failed = notebooks["corpus/b.ipynb"]
    assert failed["problems"] == ["junobench failed on this notebook (RuntimeError: boom): its cells and figures "
                                  "are not mined; please report it"]
    assert failed["bytes"] == (folder / "b.ipynb").stat().st_size
    assert notebooks["corpus/a.ipynb"]["problems"] == [] and notebooks["corpus/c.ipynb"]["figures"] == 1
