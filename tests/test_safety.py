"""junobench.safety: one atomic-write helper (used by every writer), path containment,
regular files only, text that stays text, kernels without credentials."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from junobench.errors import JunoBenchError
from junobench.safety import atomic
from junobench.safety.env import is_credential, scrub
from junobench.safety.paths import (
    copy_tree,
    inside,
    read_regular,
    relative_name,
    unlisted_files,
)
from junobench.safety.text import csv_cell, markdown_link, markdown_text, printable, safe_url

# --------------------------------------------------------------------------- permissions


def _writers(tmp: Path) -> dict[str, Path]:
    """Write one file with every writer of the project; returns writer → file."""
    from junobench.data.metadata import write_metadata
    from junobench.data.tables import write_table
    from junobench.detection.predictions import write_predictions
    from junobench.detection.tasks import write_tasks
    from junobench.verify.judge import Verdict
    from junobench.verify.report import CaseResult, VerifyReport

    files = {"tasks": tmp / "tasks.jsonl", "truth": tmp / "tasks.truth.jsonl",
             "predictions": tmp / "predictions.jsonl", "table": tmp / "table.xlsx",
             "metadata": tmp / "iris.metadata.json", "report": tmp / "report.json",
             "text": tmp / "plain.txt"}
    write_tasks([{"instance": "torch_1_fixed"}], [{"instance": "torch_1_fixed", "crash": False}],
                files["tasks"])
    write_predictions(files["predictions"], [("torch_1_fixed", [False])])
    write_table(files["table"], [{"a": 1}], ["a"])
    write_metadata(files["metadata"], {"title": "Iris", "url": None, "license": "CC0",
                                       "files": [], "modifications": []})
    VerifyReport([CaseResult("torch_1", Verdict(True, "ok"), Verdict(True, "ok"))]).write(files["report"])
    atomic.write_text(files["text"], "hello\n")
    return files


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_every_writer_gives_files_the_permissions_of_the_umask(tmp_path, mask):
    previous = os.umask(mask)
    try:
        files = _writers(tmp_path)
    finally:
        os.umask(previous)
    for writer, path in files.items():
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, writer
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in files.values())


def test_the_umask_is_read_without_changing_it():
    previous = os.umask(0o027)
    try:
        assert atomic.umask() == 0o027 and atomic.file_mode() == 0o640
        assert atomic.folder_mode() == 0o750 and atomic.umask() == 0o027
    finally:
        os.umask(previous)


def test_no_writer_writes_its_own_temp_files_any_more():
    """One atomic-write helper: the temp-file-then-rename idiom is written once. (The
    journal of a snapshot edit replays renames of files the helper wrote.)"""
    repo = Path(__file__).resolve().parent.parent
    renames = {"junobench/construct/transaction.py"}
    offenders = []
    for path in [*(repo / "junobench").rglob("*.py"), *(repo / "scripts").rglob("*.py")]:
        name = path.relative_to(repo).as_posix()
        if name == "junobench/safety/atomic.py":
            continue
        text = path.read_text(encoding="utf-8")
        idioms = ["mkstemp(", ".replace(path)", "chmod(tmp"]
        if name not in renames:
            idioms += ["os.replace(", "os.rename("]
        offenders += [f"{name}: {idiom}" for idiom in idioms if idiom in text]
    assert offenders == []


def test_a_failed_write_keeps_the_previous_file_and_leaves_nothing(tmp_path):
    target = tmp_path / "result.json"
    atomic.write_text(target, "old\n")
    with pytest.raises(RuntimeError), atomic.atomic_open(target) as handle:
        handle.write("half of the new")
        raise RuntimeError("killed")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_writer_refuses_a_directory_or_a_fifo_and_replaces_a_link_not_its_target(tmp_path):
    with pytest.raises(JunoBenchError, match="is a directory"):
        atomic.write_text(tmp_path, "x")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(JunoBenchError, match="not a regular file"):
        atomic.write_text(fifo, "x")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep")
    link = tmp_path / "link.txt"
    link.symlink_to(elsewhere)
    atomic.write_text(link, "new")
    assert elsewhere.read_text() == "keep" and not link.is_symlink() and link.read_text() == "new"


def test_an_unwritable_place_is_one_clear_error(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(JunoBenchError, match="cannot write") as error:
        atomic.write_text(blocked / "below" / "x.txt", "x")
    assert str(blocked / "below" / "x.txt") in str(error.value)


# --------------------------------------------------------------------------- folders


def _folder(path: Path, content: str) -> Path:
    path.mkdir()
    (path / "a.txt").write_text(content)
    return path


def test_swap_in_exchanges_folders_and_the_old_one_keeps_what_was_not_written(tmp_path):
    out = _folder(tmp_path / "out", "old")
    (out / "user-notes.txt").write_text("mine")
    staging = atomic.staging_folder(out)
    (staging / "a.txt").write_text("new")
    old = atomic.swap_in(staging, out)
    assert (out / "a.txt").read_text() == "new"
    assert old is not None and atomic.remove_files(old, ["a.txt"]) == ["user-notes.txt"]
    assert (old / "user-notes.txt").read_text() == "mine"


def test_swap_in_without_an_atomic_exchange_renames_twice_and_recover_restores(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic, "exchange", lambda a, b: False)
    out = _folder(tmp_path / "out", "old")
    staging = atomic.staging_folder(out)
    (staging / "a.txt").write_text("new")
    old = atomic.swap_in(staging, out)
    assert old is not None and old.name.endswith(".old") and (out / "a.txt").read_text() == "new"

    # a run killed between the two renames: the old folder beside, nothing at the path
    os.rename(out, tmp_path / "gone")
    os.rename(old, out.parent / old.name)
    atomic.recover(out, owned=lambda folder: True)
    assert (out / "a.txt").read_text() == "old"
    assert not any(p.name.startswith(".out.") for p in tmp_path.iterdir())


def test_recover_removes_leftovers_it_recognises_and_keeps_others(tmp_path, caplog):
    out = _folder(tmp_path / "out", "current")
    ours = _folder(tmp_path / ".out.abcd1234.partial", "half")
    theirs = _folder(tmp_path / ".out.efgh5678.old", "someone's")
    (theirs / "thesis.tex").write_text("precious")
    removed = atomic.recover(out, owned=lambda folder: not (folder / "thesis.tex").exists())
    assert removed == [ours] and not ours.exists()
    assert (theirs / "thesis.tex").read_text() == "precious" and "left as it is" in caplog.text
    assert (out / "a.txt").read_text() == "current"


def test_place_never_replaces_a_folder_that_got_content(tmp_path):
    out = tmp_path / "dest"
    out.mkdir()
    staging = atomic.staging_folder(out)
    (out / "arrived.txt").write_text("meanwhile")
    with pytest.raises(JunoBenchError, match="not empty"):
        atomic.place(staging, out)
    assert (out / "arrived.txt").read_text() == "meanwhile"


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../b", "C:\\x", "a\\b", "", "a\x00b",
                                  "..", "\\\\server\\share", 3, None])
def test_names_that_leave_the_folder_are_refused(tmp_path, name):
    assert relative_name(name) is None
    if isinstance(name, str):
        with pytest.raises(JunoBenchError):
            inside(tmp_path, name)


def test_plain_names_are_normalised():
    assert relative_name("./cases//x.parquet") == "cases/x.parquet"


def test_only_regular_files_are_read_and_a_fifo_never_blocks(tmp_path):
    fifo = tmp_path / "nb.ipynb"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO"):
        read_regular(fifo)  # would block forever if it were opened for reading
    with pytest.raises(OSError, match="character device"):
        read_regular("/dev/zero")
    with pytest.raises(OSError, match="directory"):
        read_regular(tmp_path)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100)
    with pytest.raises(OSError, match="larger than"):
        read_regular(big, limit=10)


def test_copy_tree_keeps_inner_links_and_refuses_links_out_and_fifos(tmp_path):
    case = tmp_path / "snap" / "benchmark" / "torch_1"
    (case / "data").mkdir(parents=True)
    (case / "data" / "x.csv").write_text("a\n1\n")
    (case / "data" / "alias.csv").symlink_to("x.csv")
    (case / "shortcut").symlink_to("data")
    copy_tree(case, tmp_path / "copy")
    assert os.readlink(tmp_path / "copy" / "data" / "alias.csv") == "x.csv"
    assert (tmp_path / "copy" / "shortcut" / "x.csv").read_text() == "a\n1\n"

    (case / "data" / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(JunoBenchError, match="link out of the folder") as error:
        copy_tree(case, tmp_path / "copy2", case="torch_1")
    assert "passwd" in str(error.value) and not (tmp_path / "copy2" / "data" / "passwd").exists()
    (case / "data" / "passwd").unlink()
    os.mkfifo(case / "data" / "pipe")
    with pytest.raises(JunoBenchError, match="FIFO"):
        copy_tree(case, tmp_path / "copy3")
    (case / "data" / "pipe").unlink()
    (case / "data" / "loop").symlink_to("loop")
    with pytest.raises(JunoBenchError, match="link loop"):
        copy_tree(case, tmp_path / "copy4")


def test_unlisted_files_names_what_a_writer_did_not_write(tmp_path):
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "x.parquet").write_text("")
    (tmp_path / "README.md").write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("")
    (tmp_path / "link").symlink_to("README.md")
    assert unlisted_files(tmp_path, {"cases/x.parquet", "README.md"}) == [".git", "link"]


# --------------------------------------------------------------------------- text


def test_csv_cells_are_never_formulas_but_numbers_stay_numbers():
    assert csv_cell("=1+1") == "'=1+1" and csv_cell("@SUM(A1)") == "'@SUM(A1)"
    assert csv_cell("+cmd|' /C calc'!A0") == "'+cmd|' /C calc'!A0" and csv_cell("\t=x") == "'\t=x"
    assert csv_cell("-0.25") == "-0.25" and csv_cell("+3e5") == "+3e5" and csv_cell(-1) == -1
    assert csv_cell("a=b") == "a=b"


def test_terminal_text_shows_control_characters_as_escapes():
    assert printable("\x1b]0;title\x07x\r\x9bq\ud800") == "\\x1b]0;title\\x07x\\x0d\\u009bq\\ud800"
    assert printable("two\nlines\tok") == "two\nlines\tok"
    assert json.loads(f'"{printable(chr(0x9b))}"') == chr(0x9b)  # still valid inside JSON


def test_card_text_is_escaped_and_links_only_to_checked_urls():
    assert markdown_text("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert markdown_text("a | b\n# c") == "a \\| b # c"
    assert markdown_link("t", "https://example.org/d?x=1") == "[t](https://example.org/d?x=1)"
    for bad in ("javascript:alert(1)", "https://x.org/a\n<script>", "ftp://x.org", "https:///x",
                "https://x.org/a b", "data:text/html,<b>", None, 3):
        assert safe_url(bad) is None
        assert "](" not in markdown_link("t", bad)


# --------------------------------------------------------------------------- environment


def test_credential_like_variables_are_recognised():
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "KAGGLE_KEY",
                 "KAGGLE_USERNAME", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GITHUB_TOKEN",
                 "MY_SERVICE_SECRET", "api_key", "SSH_AUTH_SOCK", "HF_HOME"):
        assert is_credential(name), name
    for name in ("PATH", "HOME", "LANG", "PYTHONPATH", "OMP_NUM_THREADS", "JUPYTER_PATH", "TERM"):
        assert not is_credential(name), name
    assert scrub({"PATH": "/bin", "HF_TOKEN": "t"}, keep=["HF_TOKEN"]) == {"PATH": "/bin", "HF_TOKEN": "t"}


def test_the_kernel_environment_is_scrubbed(monkeypatch):
    from junobench.envs.kernel import kernel_env

    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("LANG", "C.UTF-8")
    env = kernel_env()
    assert "HF_TOKEN" not in env and "OPENAI_API_KEY" not in env and env["LANG"] == "C.UTF-8"
    assert env["PYTHONHASHSEED"] == "0"
    assert kernel_env(keep=["HF_TOKEN"])["HF_TOKEN"] == "hf_secret"


def test_metadata_naming_a_file_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path):
    from junobench.data.metadata import write_metadata

    target = tmp_path / "iris.metadata.json"
    odd = os.fsdecode(b"iris\xff.csv")  # a name as an archive or a copy may bring it
    with pytest.raises(JunoBenchError, match=r"files/1: 'iris\\udcff\.csv' is not UTF-8 text"):
        write_metadata(target, {"title": "Iris", "url": None, "license": "CC0",
                                "files": ["iris.csv", odd], "modifications": []})
    assert list(tmp_path.iterdir()) == []


def test_names_that_are_not_utf8_are_shown_as_their_bytes_in_problems():
    odd = os.fsdecode(b"data/pi\xffpe")
    error = JunoBenchError("a FIFO", file=odd, case="pandas_1", hint=f"remove {odd}")
    assert str(error) == "data/pi\\xffpe: case pandas_1: a FIFO (remove data/pi\\xffpe)"
    str(error).encode("utf-8")  # every message can be written as UTF-8
