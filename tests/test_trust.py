"""Trust: each defect a hostile user found (issue "Trust"), reproduced, and the behaviour
now required: nothing lost, nothing read or written outside the folder the user named,
text that stays text, no traceback on hostile input."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest
from snapshot_files import tree_digest  # tests/ is on sys.path under pytest

import junobench
from junobench.data.checkout import checkout
from junobench.data.export import MANIFEST, PARQUET, file_digest
from junobench.data.snapshot import sample_path
from junobench.data.tables import read_table, write_table
from junobench.errors import JunoBenchError
from junobench.hub.write_export import export

CASES = PARQUET["cases"]


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A writable copy of the bundled sample (10 cases)."""
    target = tmp_path / "sample"
    shutil.copytree(sample_path(), target)
    return target


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("exported") / "export"
    export(sample_path(), out)
    return out


def one_error(err: str) -> str:
    """The error message of a failed command: one ``error: …`` line (what follows it
    lists details), no traceback. Progress bars of earlier library calls may precede it."""
    assert "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.startswith("error: ")] != [], err
    assert err.count("\nerror: ") + err.startswith("error: ") == 1, err
    return err[err.index("error: "):]


def add_table_row(snapshot: Path, row: dict) -> None:
    desc = read_table(snapshot / "benchmark_desc.xlsx")
    template = desc.records()[0]
    write_table(snapshot / "benchmark_desc.xlsx", [*desc.records(), template | row], desc.columns)


def notebook(snapshot: Path, case_id: str, version: str = "reproduced") -> Path:
    return snapshot / "benchmark" / case_id / f"{case_id}_{version}.ipynb"


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=1))


def error_output(nb: dict) -> dict:
    return next(o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                if o.get("output_type") == "error")


# --------------------------------------------------------------------------- 1. export


def test_export_over_an_earlier_export_refuses_files_it_did_not_write(sample, tmp_path, capsys):
    out = tmp_path / "E"
    export(sample, out)
    (out / "notes.txt").write_text("my notes")
    (out / ".git").mkdir()
    (out / ".git" / "config").write_text("[core]")
    before = tree_digest(out)
    code, _, err = run_cli(capsys, "export", "--source", str(sample), "--out", str(out))
    assert code == 1
    assert "files it did not write" in one_error(err) and ".git" in err and "notes.txt" in err
    assert tree_digest(out) == before  # nothing deleted, the earlier export intact

    (out / "notes.txt").unlink()
    shutil.rmtree(out / ".git")
    code, _, _ = run_cli(capsys, "export", "--source", str(sample), "--out", str(out))
    assert code == 0  # an earlier export, and only that, is replaced


def test_export_refuses_a_directory_that_holds_the_snapshot(tmp_path, capsys):
    snapshot = tmp_path / "work" / "snapshot"
    shutil.copytree(sample_path(), snapshot)
    before = tree_digest(snapshot)
    for out in (tmp_path / "work", tmp_path):
        code, _, err = run_cli(capsys, "export", "--source", str(snapshot), "--out", str(out))
        assert code == 1 and "holds the snapshot" in one_error(err)
    assert tree_digest(snapshot) == before


def test_export_refuses_a_link_as_its_target(exported, tmp_path, capsys):
    link = tmp_path / "link"
    link.symlink_to(exported)
    code, _, err = run_cli(capsys, "export", "--source", "sample", "--out", str(link))
    assert code == 1 and "symbolic link" in one_error(err)


# --------------------------------------------------------------------------- 2. paths from data


def test_checkout_refuses_a_case_id_that_is_a_path(sample, tmp_path, capsys):
    add_table_row(sample, {"nb_name": "../../escaped"})
    (tmp_path / "escaped").mkdir()
    (tmp_path / "escaped" / "secret.txt").write_text("outside the snapshot")
    code, _, err = run_cli(capsys, "checkout", "../../escaped", "--source", str(sample),
                           "--dest", str(tmp_path / "dest"))
    assert code == 1 and "not a case id" in one_error(err)
    assert not (tmp_path / "dest").exists()
    with pytest.raises(JunoBenchError, match="not of the form"):
        junobench.data.layout.case_dir(sample, "../../escaped")
    code, _, err = run_cli(capsys, "ls", "--source", str(sample))  # the loader names it too
    assert code == 1 and "'../../escaped' is not of the form" in err


def test_checkout_copies_links_inside_a_case_as_links_and_refuses_links_out(sample, tmp_path, capsys):
    data = sample / "benchmark" / "pandas_1" / "data"
    data.mkdir(exist_ok=True)
    (data / "etc").symlink_to("/etc")
    code, _, err = run_cli(capsys, "checkout", "pandas_1", "--source", str(sample),
                           "--dest", str(tmp_path / "dest"))
    assert code == 1 and "link out of the folder" in one_error(err)
    assert "benchmark/pandas_1/data/etc" in err and "case pandas_1" in err
    assert not (tmp_path / "dest").exists() and not list(tmp_path.glob(".dest.*"))

    (data / "etc").unlink()
    files = [p for p in data.iterdir() if p.is_file()]
    (data / "alias").symlink_to(files[0].name)
    code, _, _ = run_cli(capsys, "checkout", "pandas_1", "--source", str(sample),
                         "--dest", str(tmp_path / "dest"))
    assert code == 0
    copied = tmp_path / "dest" / "benchmark" / "pandas_1" / "data" / "alias"
    assert copied.is_symlink() and os.readlink(copied) == files[0].name


def test_checkout_refuses_a_destination_inside_the_snapshot(sample, capsys):
    dest = sample / "benchmark" / "pandas_1" / "copy"
    code, _, err = run_cli(capsys, "checkout", "pandas_1", "--source", str(sample), "--dest", str(dest))
    assert code == 1 and "inside the snapshot" in one_error(err)
    assert not dest.exists()


def test_tasks_refuses_to_write_inside_the_snapshot(sample, tmp_path, capsys):
    before = tree_digest(sample)
    for argv in (["--out", str(sample / "tasks.jsonl")],
                 ["--out", str(tmp_path / "tasks.jsonl"), "--truth-out", str(sample / "benchmark" / "t.jsonl")]):
        code, _, err = run_cli(capsys, "tasks", "--source", str(sample), *argv)
        assert code == 1 and "is inside the snapshot" in one_error(err)
    assert tree_digest(sample) == before and not (tmp_path / "tasks.jsonl").exists()


def test_a_notebook_linked_out_of_the_snapshot_is_not_read(sample, tmp_path, capsys):
    outside = tmp_path / "outside.ipynb"
    shutil.copyfile(notebook(sample, "pandas_1", "fixed"), outside)
    notebook(sample, "pandas_1", "fixed").unlink()
    notebook(sample, "pandas_1", "fixed").symlink_to(outside)
    code, _, err = run_cli(capsys, "ls", "--source", str(sample))
    assert code == 1 and "a link out of the snapshot" in err and "pandas_1_fixed.ipynb" in err


def _tampered(exported: Path, tmp_path: Path, name: str, files: dict) -> Path:
    copy = tmp_path / name
    shutil.copytree(exported, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["files"].update(files)
    (copy / MANIFEST).write_text(json.dumps(manifest))
    return copy


@pytest.mark.parametrize("entry", ["/etc/passwd", "../outside.txt", "cases/../../outside.txt",
                                   "notes.txt"])
def test_check_push_and_load_refuse_manifest_paths_outside_the_export(exported, tmp_path, capsys, entry):
    (tmp_path / "outside.txt").write_text("not part of the export")
    (tmp_path / "notes.txt").write_text("not part of the export")
    target = Path(entry) if entry.startswith("/") else tmp_path / Path(entry).name
    copy = _tampered(exported, tmp_path, "copy", {entry: file_digest(target)})
    if entry == "notes.txt":
        shutil.copyfile(tmp_path / "notes.txt", copy / "notes.txt")  # present and hashed, yet unlisted
    code, out, _ = run_cli(capsys, "check", str(copy))
    assert code == 1 and entry in out and "not a" in out
    code, _, err = run_cli(capsys, "push", str(copy), "--repo-id", "someone/x", "--dry-run")
    assert code == 1 and entry in one_error(err)
    with pytest.raises(JunoBenchError, match="manifest is malformed"):
        junobench.load(copy)


def test_a_parquet_linked_out_of_the_export_is_refused(exported, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    elsewhere = tmp_path / "elsewhere.parquet"
    shutil.move(copy / CASES, elsewhere)
    (copy / CASES).symlink_to(elsewhere)
    code, out, _ = run_cli(capsys, "check", str(copy))
    assert code == 1 and "a link out of the export" in out


# --------------------------------------------------------------------------- 3. text stays text


FORMULAS = ["=1+1", "=HYPERLINK(\"http://evil.example\",\"click\")", "+SUM(A1:A2)", "-2+3", "@cmd",
            "_x0041_ stays", "tab\tand\x01control"]


def test_written_tables_keep_formula_like_text_as_text(tmp_path):
    from openpyxl import load_workbook

    path = tmp_path / "t.xlsx"
    write_table(path, [{"value": v} for v in FORMULAS], ["value"])
    assert [r[0] for r in read_table(path).rows] == FORMULAS  # read back unchanged
    sheet = load_workbook(path).active
    assert all(cell.data_type == "s" for (cell,) in sheet.iter_rows(min_row=2))  # no formula cells


def test_checkout_copies_a_formula_like_cell_as_text(sample, tmp_path):
    desc = read_table(sample / "benchmark_desc.xlsx")
    rows = [r | {"NotebookUrl": '=HYPERLINK("http://evil.example")'} if r["nb_name"] == "pandas_1"
            else r for r in desc.records()]
    write_table(sample / "benchmark_desc.xlsx", rows, desc.columns)
    junobench.data.checkout.checkout(["pandas_1"], sample, tmp_path / "dest")
    copied = read_table(tmp_path / "dest" / "benchmark_desc.xlsx").records()
    assert copied[0]["NotebookUrl"] == '=HYPERLINK("http://evil.example")'


def test_csv_output_is_never_a_formula(sample, capsys):
    desc = read_table(sample / "benchmark_desc.xlsx")
    rows = [r | {"label_root_cause": "=cmd|' /C calc'!A0"} if r["nb_name"] == "pandas_1" else r
            for r in desc.records()]
    write_table(sample / "benchmark_desc.xlsx", rows, desc.columns)
    code, out, _ = run_cli(capsys, "ls", "--source", str(sample), "--format", "csv")
    assert code == 0
    assert "'=cmd|' /C calc'!A0" in out and ",=cmd" not in out


def _crashing_with(sample: Path, case_id: str, ename: str, evalue: str) -> None:
    def change(nb):
        output = error_output(nb)
        output["ename"], output["evalue"] = ename, evalue
    edit_json(notebook(sample, case_id), change)


def test_ls_and_show_escape_control_characters(sample, capsys):
    _crashing_with(sample, "pandas_1", "Key\x1b[2JError", "\x1b]0;pwned\x07\x9b31m boom")
    for argv in (["ls"], ["show", "pandas_1"], ["show", "pandas_1", "--format", "json"],
                 ["ls", "--format", "csv"], ["ls", "--format", "json"]):
        code, out, _ = run_cli(capsys, *argv, "--source", str(sample))
        assert code == 0
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
        assert "Key\\x1b[2JError" in out or "Key\\u001b[2JError" in out
    code, out, _ = run_cli(capsys, "show", "pandas_1", "--format", "json", "--source", str(sample))
    assert json.loads(out)["evalue"] == "\x1b]0;pwned\x07\x9b31m boom"  # still the exact value


def test_show_prints_each_label_on_its_own_line(sample, capsys):
    """A line break in a label would print a line of its own, which can pose as another
    field; it is shown as an escape, as ``ls`` shows every control character."""
    desc = read_table(sample / "benchmark_desc.xlsx")
    forged = "data confusion\n  bug kind        not an ML bug\r"
    rows = [r | {"label_root_cause": forged} if r["nb_name"] == "pandas_1" else r for r in desc.records()]
    write_table(sample / "benchmark_desc.xlsx", rows, desc.columns)
    code, out, _ = run_cli(capsys, "show", "pandas_1", "--source", str(sample))
    assert code == 0 and "\r" not in out
    assert "  root cause      data confusion\\x0a  bug kind        not an ML bug\\x0d\n" in out
    assert not [line for line in out.splitlines() if line.startswith("  bug kind        not")]


def test_the_card_escapes_text_and_links_only_to_checked_urls(sample, tmp_path):
    metadata = next((sample / "benchmark").glob("*/data/*.metadata.json"))
    edit_json(metadata, lambda m: m.update(
        title="<img src=x onerror=alert(1)> [click](javascript:alert(1))",
        url="https://example.org/d\n<script>alert(1)</script>"))
    export(sample, tmp_path / "E")
    card = (tmp_path / "E" / "README.md").read_text()
    assert "<img" not in card and "<script" not in card
    assert "&lt;img src=x onerror=alert(1)&gt; \\[click\\](javascript:alert(1))" in card  # text, not a link
    assert "example.org/d" not in card  # an invalid URL is not linked


# --------------------------------------------------------------------------- 4. integrity on load


def _flip_a_byte(path: Path) -> None:
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime


def test_loading_an_export_checks_the_parquet_against_its_manifest(exported, tmp_path):
    copy = tmp_path / "E"
    shutil.copytree(exported, copy)
    cache = tmp_path / "cache"
    assert len(junobench.load(copy, cache_dir=cache)) == 10  # the Arrow copy is made
    _flip_a_byte(copy / CASES)
    for cache_dir in (cache, tmp_path / "no-cache", None):
        with pytest.raises(JunoBenchError, match="does not match the export's manifest") as error:
            junobench.load(copy, cache_dir=cache_dir)
        assert str(copy / CASES) in str(error.value) and "junobench check" in str(error.value)


def test_an_edit_that_keeps_size_and_mtime_is_not_served_from_the_cache(sample):
    def fixed_text() -> str:
        cases = junobench.load(sample, "cases")
        return dict(zip(cases["case_id"], cases["fixed"], strict=True))["pandas_1"]

    before = fixed_text()
    path = notebook(sample, "pandas_1", "fixed")
    stat = path.stat()
    text = path.read_text()
    target = json.loads(text)
    sources = [c for c in target["cells"] if c["cell_type"] == "code" and c["source"]]
    old = sources[-1]["source"] if isinstance(sources[-1]["source"], str) else "".join(sources[-1]["source"])
    new = old[:-1] + ("X" if old[-1] != "X" else "Y")
    edited = text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1], 1)
    assert len(edited.encode()) == len(text.encode()) and edited != text
    path.write_text(edited)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as touch -r / cp -p / rsync -a leave it
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    after = fixed_text()
    assert before == text and after == edited


# --------------------------------------------------------------------------- 5. regular files, archives


def test_a_fifo_or_a_device_named_like_a_notebook_is_refused_without_hanging(sample):
    os.mkfifo(sample / "benchmark" / "pandas_1" / "pandas_1_original.fifo")  # not a notebook name: ignored
    notebook(sample, "pandas_1", "fixed").unlink()
    os.mkfifo(notebook(sample, "pandas_1", "fixed"))
    notebook(sample, "numpy_1", "fixed").unlink()
    notebook(sample, "numpy_1", "fixed").symlink_to("/dev/zero")
    metadata = next((sample / "benchmark" / "sklearn_1" / "data").glob("*.metadata.json"))
    metadata.unlink()
    os.mkfifo(metadata)
    result = subprocess.run([sys.executable, "-m", "junobench", "ls", "--source", str(sample)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 1
    err = one_error(result.stderr)
    assert "pandas_1_fixed.ipynb" in err and "FIFO" in err
    assert "numpy_1_fixed.ipynb" in err and "device" in err
    assert metadata.name in err


def test_a_metadata_file_named_with_a_byte_that_is_not_utf8_is_a_problem_of_its_case(sample, capsys):
    data = sample / "benchmark" / "pandas_1" / "data"
    original = next(data.glob("*.metadata.json"))
    odd = data / os.fsdecode(b"pass\xffengers.metadata.json")  # its name would be a dataset's name
    shutil.copyfile(original, odd)
    for verb in (["ls", "--source", str(sample)], ["validate", str(sample)]):
        code, out, err = run_cli(capsys, *verb)  # validate reports on stdout, ls fails on stderr
        assert code == 1 and "Traceback" not in out + err
        said = out + err
        assert "not UTF-8 text" in said and "pandas_1" in said and "engers.metadata.json" in said
    code, out, _ = run_cli(capsys, "ls", "--source", str(sample), "--skip-invalid")
    assert code == 0 and "pandas_1" not in out.split() and "pandas_2" in out.split()


def test_a_refused_file_named_with_a_byte_that_is_not_utf8_is_named_in_valid_json(tmp_path, capsys):
    pytest.importorskip("nbclient", reason="verify needs the run extra")
    snap = checkout(["pandas_1"], "sample", tmp_path / "snap")
    os.mkfifo(snap / "benchmark" / "pandas_1" / "data" / os.fsdecode(b"pi\xffpe"))
    report = tmp_path / "report.json"
    code, out, err = run_cli(capsys, "verify", "--source", str(snap), "--report", str(report),
                             "--format", "json", "--no-progress")
    assert code == 1 and "Traceback" not in err
    printed, written = json.loads(out), json.loads(report.read_text(encoding="utf-8"))
    reason = written["cases"]["pandas_1"]["reproduced"]["reason"]
    assert reason.startswith("input error: ") and "pi\\xffpe" in reason and "FIFO" in reason

    def texts(value):
        if isinstance(value, dict):
            return [t for v in value.values() for t in texts(v)]
        return [t for v in value for t in texts(v)] if isinstance(value, list) else [value]

    assert reason in texts(printed)  # stdout holds the same verdict, as valid JSON


def test_a_case_table_that_is_a_decompression_bomb_is_refused_before_it_is_read(sample, capsys):
    table = sample / "benchmark_desc.xlsx"
    with zipfile.ZipFile(table) as original:
        members = {info.filename: original.read(info) for info in original.infolist()}
    sheet = members["xl/worksheets/sheet1.xml"].decode()
    end = sheet.index("</sheetData>")
    row = '<row><c t="inlineStr"><is><t>' + "y" * 1000 + "</t></is></c></row>"
    padded = sheet[:end] + row * 60_000 + sheet[end:]  # 60 MB of rows
    members["xl/worksheets/sheet1.xml"] = padded.encode()
    with zipfile.ZipFile(table, "w", zipfile.ZIP_DEFLATED) as bomb:
        for name, data in members.items():
            bomb.writestr(name, data)
    assert table.stat().st_size < 1 << 20  # the 60 MB sheet compresses to a few hundred KB
    for verb in (["ls", "--source", str(sample)], ["validate", str(sample)]):
        code, out, err = run_cli(capsys, *verb)
        said = out + err
        assert code == 1 and "Traceback" not in said and "empty nb_name" not in said  # never parsed
        assert "benchmark_desc.xlsx" in said and "decompression bomb" in said


def test_a_case_table_with_one_value_far_from_the_others_is_refused_before_it_is_read(sample):
    """The reader allocates a sheet's whole box before it gives a value: one value at
    XFD1048576 asked for 512 GiB and aborted the process (no error line, exit -6)."""
    table = sample / "benchmark_desc.xlsx"
    with zipfile.ZipFile(table) as original:
        members = {info.filename: original.read(info) for info in original.infolist()}
    sheet = members["xl/worksheets/sheet1.xml"].decode()
    far = '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>x</t></is></c></row>'
    empty = '<row r="1048576"><c r="XFD1048576" s="0"/></row>'
    start, end = sheet.index("<sheetData>") + len("<sheetData>"), sheet.index("</sheetData>")
    for xml, refused in ((sheet[:end] + empty + sheet[end:], False),
                         (sheet[:end] + far + sheet[end:], True),
                         (sheet[:start] + far + sheet[end:], True)):  # alone: read padded from A1
        members["xl/worksheets/sheet1.xml"] = xml.encode()
        with zipfile.ZipFile(table, "w", zipfile.ZIP_DEFLATED) as edited:
            for name, data in members.items():
                edited.writestr(name, data)
        for verb in ("validate", "ls --source"):  # a process of its own: the abort would end pytest's
            result = subprocess.run([sys.executable, "-m", "junobench", *verb.split(), str(sample)],
                                    capture_output=True, text=True, timeout=300, check=False)
            said = result.stdout + result.stderr
            if not refused:  # an empty cell holds no value: the table reads as before
                assert result.returncode == 0, said
                continue
            assert result.returncode == 1 and "Traceback" not in said, said
            assert "benchmark_desc.xlsx" in said and "17,179,869,184 cells from A1" in said


def test_a_case_table_whose_sheet_is_damaged_inside_the_zip_is_one_clear_error(sample, capsys):
    table = sample / "benchmark_desc.xlsx"
    data = bytearray(table.read_bytes())
    with zipfile.ZipFile(table) as archive:
        info = archive.getinfo("xl/worksheets/sheet1.xml")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)  # its deflated bytes
    data[start + 50:start + 400] = bytes(b ^ 0x55 for b in data[start + 50:start + 400])
    table.write_bytes(data)
    code, _, err = run_cli(capsys, "ls", "--source", str(sample))
    assert code == 1 and "benchmark_desc.xlsx" in one_error(err) and "damaged" in err


@pytest.mark.parametrize("reference", ["A" + "9" * 5000, "A" + "9" * 12, "ABCD1"])
def test_a_cell_reference_past_any_sheet_is_refused_naming_it(sample, capsys, reference):
    """Past row 1,048,576 or column XFD no sheet has a cell (and 5,000 digits are more than
    Python converts to a number)."""
    table = sample / "benchmark_desc.xlsx"
    with zipfile.ZipFile(table) as original:
        members = {info.filename: original.read(info) for info in original.infolist()}
    sheet = members["xl/worksheets/sheet1.xml"].decode()
    end = sheet.index("</sheetData>")
    members["xl/worksheets/sheet1.xml"] = (sheet[:end] + f'<row><c r="{reference}" t="inlineStr"><is><t>x</t>'
                                           "</is></c></row>" + sheet[end:]).encode()
    with zipfile.ZipFile(table, "w", zipfile.ZIP_DEFLATED) as edited:
        for name, data in members.items():
            edited.writestr(name, data)
    code, _, err = run_cli(capsys, "ls", "--source", str(sample))
    assert code == 1 and "benchmark_desc.xlsx" in one_error(err)
    assert "a cell or row reference past the last row or column a sheet has" in err


def test_a_metadata_file_listing_a_name_too_long_for_the_file_system_lists_a_missing_file(sample, capsys):
    path = next((sample / "benchmark" / "pandas_1" / "data").glob("*.metadata.json"))
    edit_json(path, lambda meta: meta.update(files=["a" * 5000]))  # stat: ENAMETOOLONG
    code, out, err = run_cli(capsys, "validate", str(sample))
    assert code == 1 and "Traceback" not in out + err
    assert "case pandas_1: lists 'aaa" in out and "which is not in data/" in out
    code, _, err = run_cli(capsys, "ls", "--source", str(sample))
    assert code == 0 and "input data not in snapshot for 1 case(s): pandas_1" in err


def test_a_snapshot_or_export_whose_path_is_not_utf8_is_one_clear_error(exported, tmp_path, capsys):
    root = tmp_path / os.fsdecode(b"snap\xff")
    shutil.copytree(sample_path(), root)
    elsewhere = tmp_path / os.fsdecode(b"export\xff")
    shutil.copytree(exported, elsewhere)
    for verb in (["ls", "--source", str(root)], ["stats", "--source", str(root)], ["validate", str(root)],
                 ["export", "--source", "sample", "--out", str(tmp_path / os.fsdecode(b"out\xff"))],
                 ["checkout", "pandas_1", "--source", "sample", "--dest", str(tmp_path / os.fsdecode(b"out\xff"))],
                 ["check", str(elsewhere)], ["ls", "--source", str(elsewhere)]):
        code, _, err = run_cli(capsys, *verb)
        assert code == 1 and "\\xff: the folder's path is not UTF-8 text" in one_error(err), verb
    assert not (tmp_path / os.fsdecode(b"out\xff")).exists()


def test_a_notebook_past_the_size_cap_is_refused_before_it_is_read(sample, capsys, monkeypatch):
    from junobench.data import notebook as notebook_module

    monkeypatch.setattr(notebook_module, "MAX_NOTEBOOK_BYTES", 1 << 20)  # 1 GiB as shipped
    big = notebook(sample, "pandas_1", "fixed")
    with big.open("r+b") as handle:  # a sparse tail: as large as asked, nothing on disk
        handle.truncate((1 << 20) + 1)
    reads = []
    real = notebook_module.read_regular
    monkeypatch.setattr(notebook_module, "read_regular", lambda p, **k: reads.append(str(p)) or real(p, **k))
    code, _, err = run_cli(capsys, "ls", "--source", str(sample))
    assert code == 1 and "pandas_1_fixed.ipynb" in one_error(err)
    assert "the notebook is larger than 1.0 MiB" in err
    assert str(big) in reads  # asked for, and refused by its size before any byte was read


def test_a_fifo_as_the_case_table_is_refused_without_hanging(sample):
    (sample / "benchmark_desc.xlsx").unlink()
    os.mkfifo(sample / "benchmark_desc.xlsx")
    for verb in ("validate", "ls --source"):
        result = subprocess.run([sys.executable, "-m", "junobench", *verb.split(), str(sample)],
                                capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 1 and "FIFO" in result.stdout + result.stderr


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _tgz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _downsample(capsys, archive: Path, out: Path, *options: str) -> tuple[int, str]:
    code, _, err = run_cli(capsys, "construct", "downsample", "archive", str(archive), "--out", str(out),
                           "--fraction", "1", "--no-metadata", *options)
    return code, err


@pytest.mark.slow
def test_an_archive_of_many_empty_members_is_refused_before_anything_is_written(tmp_path, capsys):
    archive = tmp_path / "many.tgz"
    template = bytes(tarfile.TarInfo("x").tobuf(format=tarfile.USTAR_FORMAT))
    with gzip.open(archive, "wb") as tar:  # 100,001 empty files, headers made directly (fast)
        for i in range(100_001):
            header = bytearray(template)
            header[0:100] = f"class{i % 2}/f{i}".encode().ljust(100, b"\0")
            header[148:156] = b" " * 8
            header[148:156] = b"%06o\0 " % sum(header)
            tar.write(header)
        tar.write(bytes(1024))
    assert archive.stat().st_size < 2 << 20  # about a megabyte
    code, err = _downsample(capsys, archive, tmp_path / "out")
    assert code == 1 and "more than 100,000 members" in one_error(err)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_the_member_count_cap_is_settable(tmp_path, capsys):
    archive = _zip(tmp_path / "a.zip", {f"c/{i}.txt": b"x" for i in range(10)})
    code, err = _downsample(capsys, archive, tmp_path / "out", "--max-members", "9")
    assert code == 1 and "more than 9 members" in one_error(err)
    code, _ = _downsample(capsys, archive, tmp_path / "out", "--max-members", "10")
    assert code == 0 and len(list((tmp_path / "out" / "c").iterdir())) == 10


@pytest.mark.parametrize("make", [_zip, _tgz], ids=["zip", "tgz"])
def test_a_member_compressed_a_thousand_to_one_is_refused(tmp_path, capsys, make):
    zeros = bytes(64 << 20)
    archive = make(tmp_path / f"bomb.{'zip' if make is _zip else 'tgz'}",
                   {"a/readme.txt": b"hello", "a/zeros.bin": zeros})
    assert archive.stat().st_size < 1 << 20
    code, err = _downsample(capsys, archive, tmp_path / "out")
    assert code == 1 and "compresses" in one_error(err) and "a/zeros.bin" in err
    assert not (tmp_path / "out").exists()


def test_a_truncated_tgz_is_one_clear_error(tmp_path, capsys):
    archive = _tgz(tmp_path / "a.tgz", {f"c/{i}.txt": os.urandom(2000) for i in range(20)})
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    code, err = _downsample(capsys, cut, tmp_path / "out")
    assert code == 1 and "damaged or cut short" in one_error(err) and str(cut) in err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- 6. one error line


def _with_lone_surrogate(path: Path, change) -> None:
    """Edit a JSON file so that a string holds ``\\ud800``, an escape JSON allows but
    that is no character (a lone surrogate)."""
    edit_json(path, change)
    path.write_text(path.read_text().replace("SURROGATE", "\\ud800"))


def _surrogate_in_source(sample: Path) -> None:
    def change(nb):
        next(c for c in nb["cells"] if c["cell_type"] == "code")["source"] = "x = 'SURROGATE'"
    _with_lone_surrogate(notebook(sample, "pandas_1", "fixed"), change)


def _surrogate_in_ename(sample: Path) -> None:
    _with_lone_surrogate(notebook(sample, "pandas_1"),
                         lambda nb: error_output(nb).update(ename="KeySURROGATEError"))


def _surrogate_in_title(sample: Path) -> None:
    path = next((sample / "benchmark" / "pandas_1" / "data").glob("*.metadata.json"))
    _with_lone_surrogate(path, lambda meta: meta.update(title="Titanic SURROGATE"))


def _count_beyond_int32(sample: Path) -> None:
    def change(nb):
        next(c for c in nb["cells"] if c.get("execution_count"))["execution_count"] = 2**31
    edit_json(notebook(sample, "pandas_1", "fixed"), change)


def _symlink_loop_notebook(sample: Path) -> None:
    notebook(sample, "pandas_1", "fixed").unlink()
    notebook(sample, "pandas_1", "fixed").symlink_to(notebook(sample, "pandas_1", "fixed").name)


def _symlink_loop_folder(sample: Path) -> None:
    folder = sample / "benchmark" / "pandas_1"
    shutil.rmtree(folder)
    folder.symlink_to("pandas_1")


def _deep_metadata(sample: Path) -> None:
    path = next((sample / "benchmark" / "pandas_1" / "data").glob("*.metadata.json"))
    path.write_text('{"title": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _huge_int_metadata(sample: Path) -> None:
    path = next((sample / "benchmark" / "pandas_1" / "data").glob("*.metadata.json"))
    path.write_text('{"title": ' + "9" * 50_000 + "}")


HOSTILE_SNAPSHOTS = {
    "lone surrogate in a cell": (_surrogate_in_source, "lone surrogate"),
    "lone surrogate in ename": (_surrogate_in_ename, "lone surrogate"),
    "lone surrogate in a title": (_surrogate_in_title, "lone surrogate"),
    "execution count past int32": (_count_beyond_int32, "execution_count 2147483648"),
    "symlink loop as a notebook": (_symlink_loop_notebook, "symbolic links"),
    "symlink loop as a case folder": (_symlink_loop_folder, "case pandas_1"),
    "deeply nested metadata": (_deep_metadata, "nested too deeply"),
    "huge integer in metadata": (_huge_int_metadata, "not valid JSON"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_SNAPSHOTS))
def test_hostile_snapshots_end_in_an_error_naming_file_and_case(sample, capsys, kind):
    damage, problem = HOSTILE_SNAPSHOTS[kind]
    damage(sample)
    for verb in (["ls"], ["build"], ["export", "--out", str(sample.parent / "E")]):
        code, out, err = run_cli(capsys, *verb, "--source", str(sample))
        assert code == 1 and out == ""
        assert problem in one_error(err) and "pandas_1" in err
    code, out, err = run_cli(capsys, "ls", "--source", str(sample), "--skip-invalid", "--format", "json")
    assert code == 0 and len(json.loads(out)) == 9 and "pandas_1" in err


def test_a_crash_line_past_int32_is_unknown_not_a_crash(sample):
    def change(nb):
        output = error_output(nb)
        output["traceback"] = ["KeyError   Traceback (most recent call last)",
                               f"Cell In[3], line {2**40}\n----> 1 x\n", "KeyError: 1"]
    edit_json(notebook(sample, "pandas_1"), change)
    cases = junobench.load(sample)
    assert dict(zip(cases["case_id"], cases["crash_line"], strict=True))["pandas_1"] is None


def test_a_table_without_cases_and_a_snapshot_without_a_valid_case(sample, capsys):
    desc = read_table(sample / "benchmark_desc.xlsx")
    header_only = sample.parent / "header-only"
    shutil.copytree(sample, header_only)
    write_table(header_only / "benchmark_desc.xlsx", [], desc.columns)
    code, _, err = run_cli(capsys, "ls", "--source", str(header_only))
    assert code == 1 and "the case table lists no cases" in one_error(err)

    for path in (sample / "benchmark").glob("*/*_fixed.ipynb"):
        path.write_text("{")
    code, _, err = run_cli(capsys, "export", "--source", str(sample), "--out", str(sample.parent / "E"),
                           "--skip-invalid")
    assert code == 1 and "no valid case left: all 10 case(s)" in one_error(err)


def test_malformed_rows_or_report_in_the_manifest(exported, tmp_path, capsys):
    for name, change in (("rows", {"cases": "ten"}), ("report", {"problems": [{"x": 1}]}),
                         ("report", ["not", "a", "dict"]), ("rows", {"cases": -1}), ("version", [1]),
                         ("data", [1]), ("data", {"pandas_1": {"a.csv": "not a digest"}}),
                         ("data", {"pandas_1": ["a.csv"]})):
        copy = tmp_path / f"E-{name}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(exported, copy)
        manifest = json.loads((copy / MANIFEST).read_text())
        manifest[name] = change
        (copy / MANIFEST).write_text(json.dumps(manifest))
        code, out, _ = run_cli(capsys, "check", str(copy))
        assert code == 1 and f"'{name}" in out
        code, _, err = run_cli(capsys, "ls", "--source", str(copy))
        assert code == 1 and "manifest is malformed" in one_error(err)
    (copy / MANIFEST).write_text("[" * 50_000)
    code, _, err = run_cli(capsys, "ls", "--source", str(copy))
    assert code == 1 and "nested too deeply" in one_error(err)


def test_outputs_that_are_directories_are_refused_before_any_work(tmp_path, capsys):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for argv in (["verify", "--source", "sample", "--report", str(folder)],
                 ["runtime-info", "--source", "sample", "--out", str(folder)],
                 ["tasks", "--source", "sample", "--out", str(folder)],
                 ["export", "--source", "sample", "--out", str(tmp_path / "a-file")]):
        (tmp_path / "a-file").write_text("keep")
        code, _, err = run_cli(capsys, *argv)
        assert code == 1, argv
        one_error(err)
    assert (tmp_path / "a-file").read_text() == "keep" and list(folder.iterdir()) == []


def test_a_card_template_that_is_not_jinja_is_one_clear_error(tmp_path, capsys):
    template = tmp_path / "card.md"
    template.write_text("---\n{{ card_data }}\n---\n# {% for x in %}\n")
    code, _, err = run_cli(capsys, "export", "--source", "sample", "--out", str(tmp_path / "E"),
                           "--template", str(template))
    assert code == 1 and "not a valid Jinja template" in one_error(err) and str(template) in err
    assert not (tmp_path / "E").exists()


def test_synthetic_tables_with_infinities_huge_floats_and_far_dates(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("x,d,y\n1.5,2020-01-01,inf\ninf,9999-12-31,-inf\n1e308,0001-01-01,inf\n"
                     "-1e308,2020-02-02,-inf\n")
    code, _, err = run_cli(capsys, "construct", "synthetic", str(table), "--out", str(tmp_path / "s.csv"),
                           "--seed", "3", "--no-metadata")
    assert code == 0, err
    import pandas as pd

    fake = pd.read_csv(tmp_path / "s.csv")
    assert len(fake) == 4 and fake["x"].between(-1e308, float("inf")).all()
    assert set(fake["y"]) <= {float("inf"), float("-inf")}


# --------------------------------------------------------------------------- 7. kernels


@pytest.mark.kernel
def test_notebook_code_does_not_see_credentials_unless_passed(monkeypatch):
    import nbformat

    from junobench.data.notebook import Step
    from junobench.verify.runner import replay, run_sync

    monkeypatch.setenv("HF_TOKEN", "hf_not_for_notebooks")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-notebooks")
    monkeypatch.setenv("KAGGLE_KEY", "kaggle-not-for-notebooks")
    code = "import os; print(sorted(k for k in os.environ if k in ('HF_TOKEN', 'OPENAI_API_KEY', " \
           "'KAGGLE_KEY', 'PATH')))"

    def seen(pass_env):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        log = run_sync(replay(nb, [Step(0, 1)], cwd=".", timeout=120, pass_env=pass_env))
        assert log.failure is None, log.failure
        return nb.cells[0].outputs[0]["text"].strip()

    assert seen(()) == "['PATH']"
    assert seen(["HF_TOKEN"]) == "['HF_TOKEN', 'PATH']"


# --------------------------------------------------------------------------- 8. download, validate


def test_validate_warns_on_conflicting_diagnoses_and_a_disagreeing_exception(reference_snapshot, tmp_path,
                                                                             capsys):
    code, out, err = run_cli(capsys, "validate", str(reference_snapshot))
    assert code == 0 and "valid" in out
    assert ("warning: the reproduced notebook crashes with TypeError, but benchmark_desc.xlsx "
            "records 'valueerror' (ename): tensorflow_13\n") in err
    assert err.count("crashes with") == 1  # the other 110 agree with the table

    snapshot = tmp_path / "snapshot"
    shutil.copytree(reference_snapshot, snapshot)
    diagnoses = read_table(snapshot / "ground_truth_crash_prediction.xlsx")
    rows = diagnoses.records()
    first = next(r for r in rows if r["diagnosis"])
    write_table(snapshot / "ground_truth_crash_prediction.xlsx",
                [*rows, first | {"diagnosis": "a different diagnosis"}, dict(first)], diagnoses.columns)
    code, out, err = run_cli(capsys, "validate", str(snapshot))
    assert code == 0 and f"instance {first['instance']!r} has different diagnoses in rows" in err
    code, out, err = run_cli(capsys, "validate", str(snapshot), "--strict")
    assert code == 1 and "different diagnoses" in out and "case tensorflow_13" in out


@pytest.mark.parametrize("make", ["link out", "fifo"])
def test_validate_reports_every_file_an_export_would_refuse(tmp_path, capsys, make):
    """`validate` says "valid" only of a snapshot `export` takes: a data file that links out
    of the snapshot, or is a FIFO, is a problem of both."""
    from junobench.cli import main
    from junobench.data.validate import validate

    snapshot = tmp_path / "snap"
    assert main(["checkout", "--source", "sample", "--dest", str(snapshot), "pandas_1"]) == 0
    data = snapshot / "benchmark/pandas_1/data/passengers.csv"
    data.unlink()
    if make == "fifo":
        os.mkfifo(data)
    else:
        data.symlink_to("/etc/hostname")
    problems = validate(snapshot)
    assert [(p.file, p.case) for p in problems] == [("benchmark/pandas_1/data/passengers.csv", "pandas_1")]
    assert "not exported" in problems[0].problem
    capsys.readouterr()
    assert main(["export", "--source", str(snapshot), "--out", str(tmp_path / "out")]) == 1
    assert problems[0].problem in capsys.readouterr().err
