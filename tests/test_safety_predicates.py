"""Every predicate of junobench.safety, as tables of what it accepts and what it refuses.

Each row is a case a mutation of the predicate (a comparison flipped, a check removed)
would get wrong; tests/test_safety.py covers the writers and the copying."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from junobench.errors import JunoBenchError
from junobench.safety import grammar
from junobench.safety.atomic import check_file_target, leftover_pattern
from junobench.safety.env import is_credential
from junobench.safety.paths import (
    check_not_linked_out,
    inside,
    is_within,
    kind_of,
    link_inside,
    link_root,
    read_regular,
    relative_name,
    require_regular,
    unlisted_files,
)
from junobench.safety.text import csv_cell, is_formula_like, markdown_link, markdown_text, printable, safe_url

# --------------------------------------------------------------------------- relative names

RELATIVE_ACCEPTED = [
    ("a", "a"), ("a/b.txt", "a/b.txt"), ("./a//b/", "a/b"), ("a/./b", "a/b"), ("..a", "..a"),
    ("a..b/c", "a..b/c"), ("ab:c", "ab:c"), ("é/ü", "é/ü"), ("a b", "a b"),
]
RELATIVE_REFUSED = [
    None, 3, b"a", "", ".", "./", "/", "/etc/passwd", "..", "../x", "a/../../x", "a/..", "a\\b",
    "\\\\server\\share", "C:x", "a:b", "C:/x", "c:", "a\x00b", "a\nb", "a\x1bb", "a\x1fb", "a\x7fb", "\tname",
]


@pytest.mark.parametrize(("name", "normalised"), RELATIVE_ACCEPTED)
def test_relative_name_accepts_and_normalises(name, normalised):
    assert relative_name(name) == normalised


@pytest.mark.parametrize("name", RELATIVE_REFUSED)
def test_relative_name_refuses(name):
    assert relative_name(name) is None


# --------------------------------------------------------------------------- inside()

@pytest.mark.parametrize("parts", [("a",), ("a", "b"), ("a/b", "c.txt"), ("a", "..b")])
def test_inside_joins_relative_parts(tmp_path, parts):
    joined = inside(tmp_path, *parts)
    assert joined == tmp_path.joinpath(*parts) and is_within(joined, tmp_path)


@pytest.mark.parametrize("parts", [
    (), ("",), ("/etc",), ("a", "/etc/passwd"), ("a", "b", "/"), ("..",), ("a", ".."),
    ("a", "../../x"), ("a/../..",), ("C:x",), ("a", "C:x"), ("a", "b\x00"), ("a", "line\nbreak"),
    ("a", "b\\..\\..\\c"), ("a", None),
])
def test_inside_checks_every_part(tmp_path, parts):
    with pytest.raises(JunoBenchError, match=r"leaves|no path"):
        inside(tmp_path, *parts)


# --------------------------------------------------------------------------- is_within

@pytest.fixture
def tree(tmp_path):
    """a/b (a folder), a/bc (its sibling with the same prefix), a/b/f, a link in a/b to a/bc."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "bc").mkdir()
    (tmp_path / "a" / "b" / "f").write_text("x")
    (tmp_path / "a" / "bc" / "g").write_text("y")
    return tmp_path / "a"


@pytest.mark.parametrize(("path", "root", "within"), [
    ("b", "b", True), ("b/f", "b", True), ("b/./f", "b", True), ("b", ".", True),
    ("bc", "b", False), ("bc/g", "b", False), (".", "b", False), ("b/../bc", "b", False),
    ("b/..", "b", False),
])
def test_is_within_compares_whole_components(tree, path, root, within):
    assert is_within(tree / path, tree / root) is within


def test_is_within_the_file_system_root(tree):
    assert is_within(tree / "b", "/") and is_within("/", "/")


def test_is_within_follows_links(tree):
    (tree / "b" / "out").symlink_to(tree / "bc")
    assert not is_within(tree / "b" / "out", tree / "b")
    assert is_within(tree / "b" / "out", tree)


# --------------------------------------------------------------------------- links

@pytest.mark.parametrize(("target", "refused"), [
    ("f", False),                 # a link to a file inside
    ("../b/f", False),            # inside, by a detour
    ("../bc/g", True),            # the sibling folder with the same prefix
    ("../bc", True),
    ("/etc/hostname", True),      # absolute, outside
    ("missing", False),           # broken, but inside
    ("../../nowhere", True),      # broken and outside
])
def test_check_not_linked_out(tree, target, refused):
    link = tree / "b" / "link"
    link.symlink_to(target)
    if refused:
        with pytest.raises(JunoBenchError, match="a link out of the snapshot"):
            check_not_linked_out(link, tree / "b", case="torch_1")
    else:
        check_not_linked_out(link, tree / "b")


def test_check_not_linked_out_leaves_plain_files_and_folders(tree):
    check_not_linked_out(tree / "b" / "f", tree / "b")
    check_not_linked_out(tree / "bc", tree / "b")  # not a link: not this check's concern


def test_a_link_loop_is_not_inside(tree):
    (tree / "b" / "x").symlink_to("y")
    (tree / "b" / "y").symlink_to("x")
    assert not link_inside(tree / "b" / "x", tree / "b")


@pytest.mark.parametrize(("target", "inside_"), [
    ("f", True), ("../bc/g", False), ("missing", False), ("/etc/hostname", False),
])
def test_link_inside_needs_an_existing_target_inside(tree, target, inside_):
    link = tree / "b" / "link"
    link.symlink_to(target)
    assert link_inside(link, tree / "b") is inside_
    assert not link_inside(tree / "b" / "f", tree / "b")  # not a link at all


def test_link_root_widens_only_to_a_hub_cache_repo(tmp_path):
    repo = tmp_path / "datasets--o--n"
    snapshot = repo / "snapshots" / "rev"
    snapshot.mkdir(parents=True)
    assert link_root(snapshot) == snapshot  # no blobs/ folder: not a cache
    (repo / "blobs").mkdir()
    assert link_root(snapshot) == repo
    other = tmp_path / "x" / "rev"
    other.mkdir(parents=True)
    (tmp_path / "blobs").mkdir()
    assert link_root(other) == other  # parent not named snapshots


# --------------------------------------------------------------------------- regular files

def test_kind_of_names_each_kind():
    assert kind_of(stat.S_IFIFO) == "a FIFO (named pipe)"
    assert kind_of(stat.S_IFDIR) == "a directory"
    assert kind_of(stat.S_IFCHR) == "a character device"
    assert kind_of(stat.S_IFREG) == "not a regular file"


def test_only_regular_files_are_read_within_the_limit(tmp_path):
    (tmp_path / "f").write_bytes(b"12345")
    os.mkfifo(tmp_path / "fifo")
    assert read_regular(tmp_path / "f") == b"12345" and read_regular(tmp_path / "f", limit=5) == b"12345"
    with pytest.raises(OSError, match="larger than 4 bytes"):
        read_regular(tmp_path / "f", limit=4)
    for path in (tmp_path / "fifo", tmp_path, Path("/dev/null")):
        with pytest.raises(OSError, match="not a regular file"):
            read_regular(path)
        with pytest.raises(OSError, match="not a regular file"):
            require_regular(path)
    require_regular(tmp_path / "f")
    with pytest.raises(FileNotFoundError):
        require_regular(tmp_path / "missing")


@pytest.mark.parametrize(("kind", "refused"), [
    ("missing", False), ("file", False), ("link", False), ("dir", True), ("fifo", True),
])
def test_check_file_target(tmp_path, kind, refused):
    path = tmp_path / "out"
    if kind == "file":
        path.write_text("x")
    elif kind == "link":
        path.symlink_to(tmp_path / "elsewhere")
    elif kind == "dir":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    if refused:
        with pytest.raises(JunoBenchError):
            check_file_target(path)
    else:
        assert check_file_target(path) == path


@pytest.mark.parametrize(("name", "matches"), [
    (".out.abcdefgh.partial", True), (".out.ABCD_123.old", True), (".out.abcdefg.old", False),
    (".out.abcdefghi.old", False), ("out.abcdefgh.old", False), (".outx.abcdefgh.old", False),
    (".out.abcdefgh.oldx", False), (".out.abcd-fgh.old", False),
])
def test_leftover_pattern(name, matches):
    assert bool(leftover_pattern(Path("/x/out")).match(name)) is matches


def test_unlisted_files_count_a_link_as_unlisted_even_under_a_listed_name(tmp_path):
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").symlink_to(tmp_path / "real.txt")
    (tmp_path / "d" / "b.txt").write_text("y")
    (tmp_path / "e").symlink_to(tmp_path / "d")
    listed = {"d/a.txt", "d/b.txt", "e/b.txt", "real.txt"}
    assert unlisted_files(tmp_path, listed) == ["d/a.txt", "e"]


# --------------------------------------------------------------------------- text

@pytest.mark.parametrize(("text", "formula"), [
    ("=1+1", True), ("+A1", True), ("-A1", True), ("@SUM(A1)", True), ("\tx", True), ("\rx", True),
    ("-1.5", False), ("+3", False), ("1e5", False), ("-.5", False), ("-1e-3", False), ("plain", False),
    ("a=b", False), ("", False), ("-", True), ("-1.5x", True),
])
def test_formula_like_text(text, formula):
    assert is_formula_like(text) is formula
    assert csv_cell(text) == ("'" + text if formula else text)


@pytest.mark.parametrize("value", [3, -1.5, None, True])
def test_csv_cells_keep_other_values(value):
    assert csv_cell(value) is value


@pytest.mark.parametrize(("text", "shown"), [
    ("plain", "plain"), ("a\nb\tc", "a\nb\tc"), ("\x1b[31m", "\\x1b[31m"), ("\x07", "\\x07"),
    ("\x7f", "\\u007f"), ("\x9b", "\\u009b"), ("\ud800", "\\ud800"), ("é", "é"),
])
def test_printable(text, shown):
    assert printable(text) == shown


def test_printable_keeps_only_what_it_is_told():
    assert printable("a\nb", keep="") == "a\\x0ab"


@pytest.mark.parametrize(("text", "shown"), [
    ("invoice\u202egnp.exe", "invoice\\u202egnp.exe"),  # right-to-left override
    ("\u2066x\u2069", "\\u2066x\\u2069"), ("a\u200bb", "a\\u200bb"), ("\ufeffbom", "\\ufeffbom"),
    ("line\u2028sep", "line\\u2028sep"), ("nb\u00a0sp", "nb\\u00a0sp"), ("soft\u00adhy", "soft\\u00adhy"),
    ("tag\U000e0041", "tag\\udb40\\udc41"), ("private\ue000", "private\\ue000"),
    ("日本語 ünïcödé 😀", "日本語 ünïcödé 😀"),  # shown as themselves: kept
])
def test_printable_escapes_every_character_not_shown_as_itself(text, shown):
    assert printable(text) == shown
    assert json.loads(f'"{printable(text)}"') == text  # the escape is JSON's: values stay exact


def test_every_format_control_and_separator_character_is_escaped():
    import unicodedata

    for code in range(0x80, 0x110000):
        char = chr(code)
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Co") and printable(char) == char:
            raise AssertionError(f"U+{code:04X} ({unicodedata.category(char)}) is printed as itself")


def test_markdown_and_tables_escape_invisible_characters():
    from junobench.render import render

    assert markdown_text("evil\u202efdp.exe") == "evil fdp.exe"
    assert safe_url("https://example.org/\u202e") is None
    table = render([{"name": "a\u202eb", "n": 1}, {"name": "plain", "n": 2}], "table", ["name", "n"])
    lines = table.splitlines()
    assert "\u202e" not in table and "a\\u202eb" in table
    assert len({line.index(str(n)) for line, n in zip(lines[2:], (1, 2), strict=True)}) == 1  # columns line up


@pytest.mark.parametrize(("text", "escaped"), [
    ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("a & b", "a &amp; b"), ('say "x"', "say &quot;x&quot;"), ("*bold* _x_", "\\*bold\\* _x_"),
    ("[t](u)", "\\[t\\](u)"), ("a|b", "a\\|b"), ("`code`", "\\`code\\`"), ("![i](u)", "\\!\\[i\\](u)"),
    ("two\nlines", "two lines"), ("bell\x07", "bell"), ("~~x~~", "\\~\\~x\\~\\~"), ("a\\b", "a\\\\b"),
])
def test_markdown_text(text, escaped):
    assert markdown_text(text) == escaped


@pytest.mark.parametrize(("url", "safe"), [
    ("https://kaggle.com/x", True), ("http://a.b/c?d=e#f", True), ("HTTPS://A.B", True),
    ("javascript:alert(1)", False), ("data:text/html,x", False), ("ftp://a.b", False),
    ("https://", False), ("https://@evil", False), ("https://a.b/<x>", False), ("https://a b", False),
    ('https://a.b/"', False), ("https://a.b/\x00", False), ("//a.b", False), (None, False),
    ("https://a.b/" + "x" * 3000, False), ("https://a.b/\\x", False),
])
def test_safe_url(url, safe):
    assert (safe_url(url) is not None) is safe and (not safe or safe_url(url) == url)
    link = markdown_link("t", url)
    assert link.startswith("[t](") is safe


def test_markdown_link_escapes_parentheses_in_the_url():
    assert markdown_link("t", "https://a.b/x_(y)") == "[t](https://a.b/x_%28y%29)"


# --------------------------------------------------------------------------- credentials

@pytest.mark.parametrize(("name", "credential"), [
    ("HF_TOKEN", True), ("hf_home", True), ("OPENAI_API_KEY", True), ("MY_SECRET", True),
    ("DB_PASSWORD", True), ("aws_access_key_id", True), ("GH_TOKEN", True), ("SSH_AUTH_SOCK", True),
    ("KAGGLE_USERNAME", True), ("X_AUTH_HEADER", True), ("API_KEYS", True), ("GPG_AGENT_INFO", True),
    ("PATH", False), ("HOME", False), ("KEYBOARD", False), ("TOKENIZERS_PARALLELISM", False),
    ("MONKEY_BUSINESS", False), ("SSH_AGENT_PID", False), ("PYTHONHASHSEED", False),
])
def test_credential_names(name, credential):
    assert is_credential(name) is credential


# --------------------------------------------------------------------------- grammars

GRAMMAR = {
    grammar.is_image_reference: (
        ["python:3.10-slim", "python", "library/python:3", "ghcr.io/o/n:tag", "localhost:5000/a/b",
         "a-b.c/d__e/f:1.0", "yarinamomo/kaggle_python_env@sha256:" + "7" * 64,
         "python:3.10@sha256:" + "a" * 64, "a" * 255],
        ["", "Python:3.10", "python:3.10\nRUN id", "python:3.10 AS x", "python;id", "python:$(id)",
         "-python", "python:", "python:-x", "a/../b", "a//b", "python@sha256:xyz", "python:3.10\r",
         "a" * 256, "python:" + "t" * 129, " python", None, 3],
    ),
    grammar.is_iso_date: (
        ["2025-07-01", "2024-02-29", "2025-07-01T00:00:00Z", "2025-07-01T12:30:00+02:00",
         "2025-07-01T12:30:00.5Z"],
        ["", "2025-7-1", "2025-13-01", "2023-02-29", "2025-07-01; curl x", "2025-07-01\nRUN id",
         "2025-07-01 --index-url x", "20250701", "tomorrow", "2025-07-01T25:00:00Z", None],
    ),
    grammar.is_environment_name: (
        ["junobench-2025", "a", "x.y_z-1", "A" * 100],
        ["", "-x", "x-", "a b", "a\nb", "a/b", "..", "a;b", "a" * 101, "é", None],
    ),
    grammar.is_python_version: (["3.10", "3.9", "3.100"], ["3", "3.10.1", "2.7", "3.x", " 3.10", "3.1000", ""]),
    grammar.is_distribution_name: (
        ["pandas", "scikit-learn", "zope.interface", "a", "A_b"],
        ["", "-a", "a-", "a b", "a/b", "a==1", "a;b", "é"],
    ),
    grammar.is_version: (
        ["1", "2.1.4", "1.0.post1", "2.0rc1", "1!2.0", "1.0+local.1", "0.0.33"],
        ["", "1.*", " 1.0", "1.0 ", "one", "1.0; x", "1.0\n", "1.0 --index-url", None],
    ),
}


@pytest.mark.parametrize(("predicate", "value", "accepted"), [
    pytest.param(p, v, ok, id=f"{p.__name__}-{v!r}"[:60])
    for p, (good, bad) in GRAMMAR.items() for ok, values in ((True, good), (False, bad)) for v in values
])
def test_grammars(predicate, value, accepted):
    assert predicate(value) is accepted
    if accepted:
        assert grammar.check(value, predicate, field="f") == value
    else:
        with pytest.raises(JunoBenchError, match=r"environment\.json: f must be"):
            grammar.check(value, predicate, field="f", file="environment.json")


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_a_file_that_holds_more_than_its_size_says_is_read_to_its_end():
    """A regular file may hold more than its ``stat`` size (it grew, or it is generated,
    as /proc files are): the read goes on to the end of the file."""
    path = Path("/proc/self/status")
    assert path.stat().st_size == 0
    data = read_regular(path)
    assert data.startswith(b"Name:") and b"\nPid:" in data


def test_a_file_a_notebook_could_write_is_read_without_links_blocking_or_bounds(tmp_path):
    from junobench.safety.paths import NotRegularFile, read_untrusted

    secret = tmp_path / "token"
    secret.write_text("hf_secret")
    plain = tmp_path / "plain"
    plain.write_bytes(b"0123456789")
    assert read_untrusted(plain, limit=4) == b"0123"
    assert read_untrusted(plain, limit=4, tail=True) == b"6789"
    (tmp_path / "link").symlink_to(secret)
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would never return
    for name in ("link", "zero"):
        with pytest.raises(OSError):  # ELOOP: the link is not followed
            read_untrusted(tmp_path / name, limit=1 << 30)
    with pytest.raises(NotRegularFile):
        read_untrusted(tmp_path / "fifo", limit=64)
