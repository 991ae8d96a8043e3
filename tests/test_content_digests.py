"""Resume and the records cache decide from what files hold: an edit that keeps a data
file's size and modification time is seen; unchanged files are not read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from junobench.data import digests as digests_module
from junobench.data.checkout import checkout
from junobench.data.digests import ContentDigests
from junobench.data.snapshot import fingerprint
from junobench.verify.resume import inputs_digest


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JUNOBENCH_CACHE", str(tmp_path / "cache"))


def same_size_edit(path: Path) -> None:
    """Change one byte, keeping the size and the modification time (as `touch -r` does)."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[-2] = ord("7") if data[-2] != ord("7") else ord("8")
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


@pytest.fixture
def snap(tmp_path):
    return checkout(["pandas_1"], "sample", tmp_path / "snap")


def test_a_same_size_edit_of_a_data_file_changes_the_resume_digest_and_the_cache_key(snap):
    case = snap / "benchmark" / "pandas_1"
    before = inputs_digest(case, timeout=60), fingerprint(snap)
    assert (inputs_digest(case, timeout=60), fingerprint(snap)) == before  # stable
    same_size_edit(case / "data" / "passengers.csv")
    after = inputs_digest(case, timeout=60), fingerprint(snap)
    assert after[0] != before[0] and after[1] != before[1]


def test_unchanged_files_are_read_once_and_an_edited_one_again(tmp_path, monkeypatch):
    monkeypatch.setattr(digests_module, "_SETTLED_NS", 0)
    reads: list[str] = []
    real = digests_module._read_digest
    monkeypatch.setattr(digests_module, "_read_digest", lambda p: reads.append(p) or real(p))
    big = tmp_path / "big.csv"
    big.write_bytes(b"a,b\n" + b"1,2\n" * 100_000)

    def file_sha256(path):
        with ContentDigests(tmp_path / "cache") as digests:  # a new memo instance each time
            return digests.sha256(path)

    first = file_sha256(big)
    assert file_sha256(big) == first and len(reads) == 1  # remembered across memo instances
    same_size_edit(big)
    assert file_sha256(big) != first and len(reads) == 2  # the change time moved: read again


def test_a_recent_file_is_not_remembered(tmp_path, monkeypatch):
    """Two writes within one clock tick can leave size and times alike: a file changed in
    the last moments is hashed every time."""
    reads: list[str] = []
    real = digests_module._read_digest
    monkeypatch.setattr(digests_module, "_read_digest", lambda p: reads.append(p) or real(p))
    fresh = tmp_path / "fresh.txt"
    fresh.write_text("x")
    for _ in range(2):
        with ContentDigests(tmp_path / "cache") as digests:
            digests.sha256(fresh)
    assert len(reads) == 2


def test_digests_without_a_writable_cache_are_computed(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("JUNOBENCH_CACHE", str(blocked))
    (tmp_path / "f").write_text("x")
    with ContentDigests() as digests:
        assert digests.sha256(tmp_path / "f") == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"


def test_a_fifo_or_a_link_out_is_not_read(snap, tmp_path):
    case = snap / "benchmark" / "pandas_1"
    os.mkfifo(case / "data" / "pipe")
    (case / "data" / "out.csv").symlink_to("/dev/zero")
    assert fingerprint(snap)  # returns: nothing blocked on the FIFO or read /dev/zero
    with pytest.raises(Exception, match="cannot read the case folder"):
        inputs_digest(case, timeout=60)


@pytest.mark.kernel
def test_verify_runs_a_case_again_after_a_same_size_edit_of_its_data(snap, tmp_path):
    from junobench.verify import verify

    report = tmp_path / "r.json"
    assert verify(source=snap, report=report, progress=False).ok
    seen: list[str] = []
    verify(source=snap, report=report, progress=False, on_case=lambda c: seen.append(c.case_id))
    assert seen == []  # nothing changed: the verdict is kept
    same_size_edit(snap / "benchmark" / "pandas_1" / "data" / "passengers.csv")
    verify(source=snap, report=report, progress=False, on_case=lambda c: seen.append(c.case_id))
    assert seen == ["pandas_1"]


def test_a_snapshot_s_many_files_are_looked_up_in_one_memo_read(tmp_path, monkeypatch):
    monkeypatch.setattr(digests_module, "_SETTLED_NS", 0)
    reads: list[str] = []
    real = digests_module._read_digest
    monkeypatch.setattr(digests_module, "_read_digest", lambda p: reads.append(p) or real(p))
    files = [tmp_path / f"f{i}.txt" for i in range(digests_module._ONE_BY_ONE + 20)]
    for i, path in enumerate(files):
        path.write_text(str(i))
    with ContentDigests() as digests:
        first = [digests.sha256(p) for p in files]
    with ContentDigests() as digests:
        assert [digests.sha256(p) for p in files] == first
    assert len(reads) == len(files)  # each read once, the second pass from the memo
    same_size_edit(files[-1])  # "83" becomes "73": the same size and times
    with ContentDigests() as digests:
        assert digests.sha256(files[-1]) != first[-1]


def test_a_snapshot_s_memo_read_holds_only_its_own_folder(tmp_path, monkeypatch):
    """The memo remembers every folder ever fingerprinted; a snapshot's bulk read takes
    only the digests under it, and files elsewhere are still looked up one by one."""
    monkeypatch.setattr(digests_module, "_SETTLED_NS", 0)
    reads: list[str] = []
    real = digests_module._read_digest
    monkeypatch.setattr(digests_module, "_read_digest", lambda p: reads.append(p) or real(p))
    count = digests_module._ONE_BY_ONE + 10
    folders = {name: tmp_path / name for name in ("snap", "snap2", "other")}  # snap2: same prefix
    files = {name: [folder / f"{'~' if i % 2 else 'a'}{i}.txt" for i in range(count)]  # names sort anywhere
             for name, folder in folders.items()}
    for paths in files.values():
        for i, path in enumerate(paths):
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"{path.parent.name} {i}")
    everything = [p for paths in files.values() for p in paths]
    with ContentDigests() as digests:
        first = [digests.sha256(p) for p in everything]
    with ContentDigests(under=folders["snap"]) as digests:
        assert [digests.sha256(p) for p in files["snap"] + files["snap2"] + files["other"]] == first
        assert digests._known is not None and set(digests._known) == {str(p) for p in files["snap"]}
    assert len(reads) == len(everything)  # the second pass read nothing: all remembered


def test_a_snapshot_named_relatively_has_the_same_key_and_memo(snap, tmp_path, monkeypatch):
    monkeypatch.setattr(digests_module, "_SETTLED_NS", 0)
    reads: list[str] = []
    real = digests_module._read_digest
    monkeypatch.setattr(digests_module, "_read_digest", lambda p: reads.append(p) or real(p))
    key = fingerprint(snap)
    assert reads and all(os.path.isabs(p) for p in reads)
    reads.clear()
    monkeypatch.chdir(snap / "benchmark")
    assert fingerprint("..") == fingerprint(os.path.join("..", "benchmark", "..")) == key
    assert reads == []  # the memo keeps each file under its absolute, normalised path


def test_a_file_named_with_a_byte_that_is_not_utf8_is_digested_every_time(snap, monkeypatch):
    monkeypatch.setattr(digests_module, "_SETTLED_NS", 0)
    case = snap / "benchmark" / "pandas_1"
    odd = case / "data" / os.fsdecode(b"sales\xff.csv")
    odd.write_text("a,b\n1,2\n")
    before = inputs_digest(case, timeout=60), fingerprint(snap)
    assert (inputs_digest(case, timeout=60), fingerprint(snap)) == before
    same_size_edit(odd)  # the memo cannot hold its name: it is read again, and the edit seen
    after = inputs_digest(case, timeout=60), fingerprint(snap)
    assert after[0] != before[0] and after[1] != before[1]
