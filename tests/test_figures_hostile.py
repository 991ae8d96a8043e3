"""The verbs reading a mined corpus (``figures``: summaries, a sample's sheet; ``site
--figures``) on a corpus changed or made by someone else: each bad file is one error line
naming it (and its row), never a traceback, a hang, or a file read through a link."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run_cli
from test_mine_hostile import b64, code, display, notebook, png

from junobench.mining import mine
from junobench.mining.write import MANIFEST, PARQUET

FIGURES = PARQUET["figures"]


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    (folder / "corpus").mkdir()
    cells = [code("import matplotlib.pyplot as plt\nplt.hist(x)", [display({"image/png": b64(png(30, 20))})]),
             code("plt.scatter(a, b)", [display({"image/png": b64(png(20, 30))})])]
    for name in ("a", "b"):
        (folder / "corpus" / f"{name}.ipynb").write_text(json.dumps(notebook(cells)))
    mine([folder / "corpus"], folder / "mined", jobs=1, progress=False)
    return folder / "mined"


def restamp(folder: Path) -> None:
    """Make ``checksums.json`` agree with the files again (as whoever changed them would)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    for name in manifest["files"]:
        data = (folder / name).read_bytes()
        manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (folder / MANIFEST).write_text(json.dumps(manifest))


def rewritten(folder: Path, config: str, change: Callable[[pa.Table], pa.Table]) -> None:
    path = folder / PARQUET[config]
    pq.write_table(change(pq.read_table(path)), path)
    restamp(folder)


def with_column(name: str, values: Callable[[int], list], kind: pa.DataType | None = None,
                ) -> Callable[[pa.Table], pa.Table]:
    """A change of a table: its column ``name`` given ``values`` (of type ``kind``, or its own)."""
    def change(table: pa.Table) -> pa.Table:
        column = table.schema.field(name)
        column = column if kind is None else column.with_type(kind)
        return table.set_column(table.schema.get_field_index(name), column,
                                pa.array(values(table.num_rows), column.type))
    return change


def _fifo(folder: Path) -> None:
    (folder / FIGURES).unlink()
    os.mkfifo(folder / FIGURES)


def _linked(folder: Path, elsewhere: Path) -> None:
    (folder / FIGURES).unlink()
    (folder / FIGURES).symlink_to(elsewhere / FIGURES)


def _linked_folder(folder: Path, elsewhere: Path) -> None:
    shutil.rmtree(folder / "figures")
    (folder / "figures").symlink_to(elsewhere / "figures", target_is_directory=True)


def _manifest_linked(folder: Path, elsewhere: Path) -> None:
    (folder / MANIFEST).unlink()
    (folder / MANIFEST).symlink_to(elsewhere / MANIFEST)


#: name → (how the corpus is changed, given it and an intact copy elsewhere; what the error says)
HOSTILE: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "truncated": (lambda f, _: (f / FIGURES).write_bytes((f / FIGURES).read_bytes()[:500]),
                  "500 bytes, where checksums.json says"),
    "not parquet, manifest agreeing": (lambda f, _: ((f / FIGURES).write_text("not parquet"), restamp(f)),
                                       "not a parquet file"),
    "another config's file": (lambda f, _: (shutil.copy(f / PARQUET["cells"], f / FIGURES), restamp(f)),
                              "no column"),
    "a column missing": (lambda f, _: rewritten(f, "figures", lambda t: t.drop(["kind"])), "no column 'kind'"),
    "a column of another type": (
        lambda f, _: rewritten(f, "figures", with_column("kind", lambda n: [1] * n, pa.int32())),
        "column 'kind' is int32, not string"),
    "an empty figure id": (lambda f, _: rewritten(f, "figures", with_column("figure", lambda n: [None] * n)),
                           "row 0: figure is empty"),
    "a FIFO": (lambda f, _: _fifo(f), "FIFO (named pipe), not a regular file"),
    "a link to a corpus": (_linked, "a symbolic link, never followed"),
    "a link to a corpus' folder": (_linked_folder, "a symbolic link, never followed"),
    "a linked manifest": (_manifest_linked, "a symbolic link, never followed"),
    "a manifest entry not a digest": (
        lambda f, _: (f / MANIFEST).write_text((f / MANIFEST).read_text().replace('"size": ', '"bytes": ')),
        "not a junobench-mined/1 manifest"),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_corpus_is_one_error_line_naming_the_file(mined: Path, tmp_path: Path, capsys, name: str) -> None:
    change, expected = HOSTILE[name]
    folder = tmp_path / "mined"
    shutil.copytree(mined, folder)
    change(folder, mined)
    # the summaries read no id: the sheet and the gallery do
    verbs = [] if name == "an empty figure id" else [["figures", str(folder)]]
    verbs += [["figures", str(folder), "--sample", "2", "--sheet", str(tmp_path / "review.xlsx")],
              ["site", "--source", "sample", "--out", str(tmp_path / "site"), "--figures", str(folder)]]
    for argv in verbs:
        code_, _, err = run_cli(capsys, *argv)
        assert code_ == 1 and "Traceback" not in err, (argv, err)
        assert err.startswith("error: ") and expected in err and str(folder) in err, (argv, err)
    assert not (tmp_path / "review.xlsx").exists()


def test_a_figure_id_twice_is_refused_naming_both_rows(mined: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "mined"
    shutil.copytree(mined, folder)
    rewritten(folder, "figures", with_column("figure", lambda n: ["same"] * n))
    code_, _, err = run_cli(capsys, "figures", str(folder), "--sample", "2", "--sheet", str(tmp_path / "r.xlsx"))
    assert code_ == 1 and "rows 0 and 1: figure 'same' twice" in err and FIGURES in err


@pytest.mark.parametrize("kind", ["<script>alert(1)</script>", "x" * 5000])
def test_a_kind_outside_the_mappings_kinds_is_refused_with_its_row(mined: Path, tmp_path: Path, capsys,
                                                                  kind: str) -> None:
    from openpyxl import load_workbook

    sheet = tmp_path / "review.xlsx"
    assert run_cli(capsys, "figures", str(mined), "--sample", "2", "--sheet", str(sheet))[0] == 0
    book = load_workbook(sheet)
    ws = book["Figures"]
    ws._images = []  # openpyxl cannot save again the pictures of a book it loaded
    ws["H2"], ws["H3"] = "histogram", kind
    book.save(sheet)
    code_, _, err = run_cli(capsys, "figures", str(mined), "--review", str(sheet))
    assert code_ == 1 and f"row 3: kind {kind[:60]!r} is not one of: " in err and str(sheet) in err
    ws["H3"] = "none"
    book.save(sheet)
    assert run_cli(capsys, "figures", str(mined), "--review", str(sheet))[0] == 0


def test_a_decompression_bomb_in_a_corpus_reaches_no_page_and_no_sheet(mined: Path, tmp_path: Path,
                                                                       capsys) -> None:
    from openpyxl import load_workbook
    from test_mine_hostile import bomb_png

    folder = tmp_path / "mined"
    shutil.copytree(mined, folder)
    bomb = {"bytes": bomb_png(30000, 30000), "path": None}
    rewritten(folder, "figures", with_column("image", lambda n: [bomb] * n))
    out = tmp_path / "site"
    assert run_cli(capsys, "site", "--source", "sample", "--out", str(out), "--figures", str(folder))[0] == 0
    assert not [p for p in (out / "img").glob("*") if p.read_bytes() == bomb["bytes"]]
    sheet = tmp_path / "review.xlsx"
    assert run_cli(capsys, "figures", str(folder), "--sample", "2", "--sheet", str(sheet))[0] == 0
    assert load_workbook(sheet)["Figures"]._images == []


def test_a_huge_code_cell_is_cut_on_its_notebooks_page(mined: Path, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "mined"
    shutil.copytree(mined, folder)
    rewritten(folder, "cells", with_column("source", lambda n: ["x = 1  # " + "a" * 2_000_000] * n))
    out = tmp_path / "site"
    assert run_cli(capsys, "site", "--source", "sample", "--out", str(out), "--figures", str(folder))[0] == 0
    pages = list((out / "figures" / "nb").glob("*.html"))
    assert pages and all(p.stat().st_size < 1_000_000 for p in pages)
    assert "more characters not shown" in pages[0].read_text()
