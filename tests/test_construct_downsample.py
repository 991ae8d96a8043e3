"""construct downsample: images, archives (safely), tables, paired tables; recorded in metadata."""

from __future__ import annotations

import io
import json
import stat
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from junobench.cli import main
from junobench.construct.downsample import downsample_archive, downsample_images
from junobench.data.metadata import read_metadata, write_metadata
from junobench.errors import JunoBenchError


def make_metadata(path: Path, files: list[str]) -> Path:
    write_metadata(path, {"title": "Test data", "url": "https://www.kaggle.com/datasets/o/s",
                          "license": "CC0: Public Domain", "files": files, "modifications": []})
    return path


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- images


@pytest.fixture
def images(tmp_path: Path) -> Path:
    root = tmp_path / "source" / "flowers"
    for label, count in (("daisy", 6), ("rose", 4), ("tulip", 1)):
        (root / label).mkdir(parents=True)
        for i in range(count):
            (root / label / f"{label}_{i}.jpg").write_bytes(bytes([i]) * (100 + i))
    (root / "labels.csv").write_text("file,label\n")
    return root


def test_images_keep_k_per_class_seeded_and_recorded(images: Path, tmp_path: Path, capsys) -> None:
    data = tmp_path / "case" / "data"
    data.mkdir(parents=True)
    meta = make_metadata(data / "flowers.metadata.json", ["flowers"])
    out = data / "flowers"
    assert main(["construct", "downsample", "images", str(images), "--out", str(out),
                 "--per-class", "3", "--seed", "5"]) == 0
    kept = files_under(out)
    assert {k.split("/")[0] for k in kept} == {"daisy", "rose", "tulip", "labels.csv"}
    assert sum(k.startswith("daisy/") for k in kept) == 3
    assert sum(k.startswith("rose/") for k in kept) == 3
    assert sum(k.startswith("tulip/") for k in kept) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "kept 7 of 11 files" in captured.err

    again = downsample_images(images, tmp_path / "again", per_class=3, seed=5, record=False)
    assert files_under(again.out) == kept
    other = downsample_images(images, tmp_path / "other", per_class=3, seed=6, record=False)
    assert files_under(other.out) != kept

    entry = read_metadata(meta)["modifications"][-1]
    assert entry["kind"] == "downsampled" and entry["seed"] == 5 and entry["per_class"] == 3
    assert entry["before"]["files"] == 11 and entry["after"]["files"] == 7
    assert entry["ratio"] == round(7 / 11, 6)
    assert entry["before"]["bytes"] > entry["after"]["bytes"] > 0
    assert entry["source"] == "flowers" and "downsample images" in entry["tool"]


def test_a_fraction_keeps_at_least_one_per_class(images: Path, tmp_path: Path) -> None:
    result = downsample_images(images, tmp_path / "out", fraction=0.5, seed=1, record=False)
    assert result.classes == {"daisy": (6, 3), "rose": (4, 2), "tulip": (1, 1)}


def test_nothing_is_written_without_a_metadata_file(images: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "nowhere" / "flowers"
    assert main(["construct", "downsample", "images", str(images), "--out", str(out),
                 "--fraction", "0.5"]) == 1
    assert "flowers.metadata.json" in capsys.readouterr().err
    assert not out.exists()


def test_amounts_are_checked(images: Path, tmp_path: Path) -> None:
    for kwargs in ({"fraction": 0.0}, {"fraction": 1.5}, {"per_class": 0}, {},
                   {"fraction": 0.5, "per_class": 2}):
        with pytest.raises(JunoBenchError):
            downsample_images(images, tmp_path / "o", record=False, **kwargs)


def test_a_non_empty_destination_is_not_touched(images: Path, tmp_path: Path) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(JunoBenchError, match="not empty"):
        downsample_images(images, out, per_class=1, record=False)
    assert files_under(out) == {"keep.txt"}


# --------------------------------------------------------------------------- archives


def _zip(path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return path


def _tar(path: Path, entries: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        for info, data in entries:
            info.size = len(data) if info.isfile() else 0
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def _tarinfo(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def _symlink(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def _class_entries() -> list[tuple[str, bytes]]:
    entries = [(f"train/img_{i}.png", bytes([i]) * 50) for i in range(10)]
    entries += [(f"test/img_{i}.png", bytes([i]) * 30) for i in range(4)]
    return [*entries, ("README.txt", b"about")]


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_archives_are_sampled_per_top_level_folder(kind: str, tmp_path: Path) -> None:
    entries = _class_entries()
    if kind == "zip":
        source = _zip(tmp_path / "data.zip", [*entries, _symlink("train/alias.png", "img_0.png")])
    else:
        source = _tar(tmp_path / "data.tar.gz", [(_tarinfo(n), d) for n, d in entries]
                      + [(_tarinfo("train/alias.png", tarfile.SYMTYPE, "img_0.png"), b"")])
    data = tmp_path / "case" / "data"
    data.mkdir(parents=True)
    meta = make_metadata(data / "images.metadata.json", ["images"])
    result = downsample_archive(source, data / "images", fraction=0.5, seed=3)
    kept = files_under(data / "images")
    assert sum(k.startswith("train/") for k in kept) == 5
    assert sum(k.startswith("test/") for k in kept) == 2
    assert "README.txt" in kept and "train/alias.png" not in kept  # a safe link is skipped
    assert result.classes == {"train": (10, 5), "test": (4, 2), "(root)": (1, 1)}
    again = downsample_archive(source, tmp_path / "again", fraction=0.5, seed=3, record=False)
    assert files_under(again.out) == kept
    entry = read_metadata(meta)["modifications"][-1]
    assert entry["before"] == {"files": 15, "bytes": 10 * 50 + 4 * 30 + 5}
    assert entry["after"]["files"] == 8 and entry["seed"] == 3


def _zip_bomb(path: Path) -> Path:
    return _zip(path, [("a/ok.txt", b"fine"), ("a/zeros.bin", b"\0" * 3_000_000)])


def _tar_bomb(path: Path) -> Path:
    return _tar(path, [(_tarinfo("a/ok.txt"), b"fine"), (_tarinfo("a/zeros.bin"), b"\0" * 3_000_000)])


UNSAFE = {
    "zip-dotdot": (lambda p: _zip(p / "x.zip", [("a/ok.txt", b"ok"), ("../evil.txt", b"pwned")]),
                   "../evil.txt"),
    "zip-absolute": (lambda p: _zip(p / "x.zip", [("a/ok.txt", b"ok"), (zipfile.ZipInfo("/tmp/abs_evil.txt"), b"x")]),
                     "/tmp/abs_evil.txt"),
    "zip-symlink": (lambda p: _zip(p / "x.zip", [("a/ok.txt", b"ok"), _symlink("a/link", "../../outside")]),
                    "a/link"),
    "zip-bomb": (lambda p: _zip_bomb(p / "bomb.zip"), "a/zeros.bin"),
    "tar-dotdot": (lambda p: _tar(p / "x.tar", [(_tarinfo("a/ok.txt"), b"ok"),
                                                (_tarinfo("a/../../evil.txt"), b"pwned")], "w"),
                   "a/../../evil.txt"),
    "tar-absolute": (lambda p: _tar(p / "x.tgz", [(_tarinfo("/tmp/abs_evil.txt"), b"x")]), "/tmp/abs_evil.txt"),
    "tar-symlink": (lambda p: _tar(p / "x.tgz", [(_tarinfo("a/ok.txt"), b"ok"),
                                                 (_tarinfo("a/link", tarfile.SYMTYPE, "/etc/passwd"), b"")]),
                    "a/link"),
    "tar-hardlink": (lambda p: _tar(p / "x.tgz", [(_tarinfo("a/hard", tarfile.LNKTYPE, "../../x"), b"")]),
                     "a/hard"),
    "tar-bomb": (lambda p: _tar_bomb(p / "bomb.tar.gz"), "a/zeros.bin"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_unsafe_archives_are_refused(case: str, tmp_path: Path, capsys) -> None:
    make, member = UNSAFE[case]
    work = tmp_path / "work"
    work.mkdir()
    source = make(work)
    assert source.stat().st_size < 100_000  # the bombs are tiny
    before = files_under(tmp_path)
    out = tmp_path / "dest" / "data"
    code = main(["construct", "downsample", "archive", str(source), "--out", str(out),
                 "--fraction", "1", "--max-size", "1000000", "--no-metadata"])
    assert code == 1
    error = capsys.readouterr().err
    assert f"member {member!r}" in error and "refusing the archive" in error
    assert files_under(tmp_path) == before  # nothing written anywhere
    assert not out.exists()
    assert not Path("/tmp/abs_evil.txt").exists()


def test_actual_size_is_capped_too(tmp_path: Path) -> None:
    """A member whose data runs past the cap during extraction is refused (declared sizes
    under the cap: two members of 600 kB with a 1 MB cap on their total written size)."""
    source = _zip(tmp_path / "big.zip", [("a/one.bin", b"\1" * 600_000), ("a/two.bin", b"\2" * 600_000)])
    with pytest.raises(JunoBenchError, match="cap"):
        downsample_archive(source, tmp_path / "out", fraction=1, max_bytes=1_000_000, record=False)
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- tables


@pytest.fixture
def labelled_csv(tmp_path: Path) -> Path:
    rows = ["id,label,value"]
    rows += [f"{i},{label},{i * 1.5:.2f}" for i, label in
             enumerate(["normal"] * 60 + ["attack"] * 30 + ["probe"] * 10)]
    path = tmp_path / "source" / "kdd.csv"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(rows) + "\n")
    return path


def test_tables_are_stratified_and_keep_their_text(labelled_csv: Path, tmp_path: Path) -> None:
    data = tmp_path / "case" / "data"
    data.mkdir(parents=True)
    meta = make_metadata(data / "kdd.metadata.json", ["kdd.csv"])
    out = data / "kdd.csv"
    assert main(["construct", "downsample", "table", str(labelled_csv), "--out", str(out),
                 "--fraction", "0.1", "--label-column", "label", "--seed", "42"]) == 0
    original = labelled_csv.read_text().splitlines()
    kept = out.read_text().splitlines()
    assert kept[0] == original[0]
    assert [line for line in original[1:] if line in set(kept[1:])] == kept[1:]  # same order
    labels = [line.split(",")[1] for line in kept[1:]]
    assert (labels.count("normal"), labels.count("attack"), labels.count("probe")) == (6, 3, 1)
    entry = read_metadata(meta)["modifications"][-1]
    assert entry["before"]["rows"] == 100 and entry["after"]["rows"] == 10 and entry["ratio"] == 0.1
    assert "'label'" in entry["method"]


def test_parquet_tables_keep_their_schema(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": range(40), "y": [i % 4 for i in range(40)],
                          "when": pd.date_range("2024-01-01", periods=40)})
    source = tmp_path / "t.parquet"
    frame.to_parquet(source)
    out = tmp_path / "small.parquet"
    assert main(["construct", "downsample", "table", str(source), "--out", str(out),
                 "--per-class", "2", "--label-column", "y", "--no-metadata"]) == 0
    small = pd.read_parquet(out)
    assert list(small.dtypes) == list(frame.dtypes) and len(small) == 8
    assert small["y"].value_counts().to_dict() == {0: 2, 1: 2, 2: 2, 3: 2}


def test_unknown_label_column_is_named(labelled_csv: Path, tmp_path: Path, capsys) -> None:
    assert main(["construct", "downsample", "table", str(labelled_csv), "--out", str(tmp_path / "o.csv"),
                 "--fraction", "0.5", "--label-column", "nope", "--no-metadata"]) == 1
    assert "'nope'" in capsys.readouterr().err


# --------------------------------------------------------------------------- paired


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    root = tmp_path / "source"
    (root / "images").mkdir(parents=True)
    lines = ["image,label"]
    for i in range(20):
        (root / "images" / f"p{i}.jpg").write_bytes(bytes([i]) * 10)
        lines.append(f"images/p{i}.jpg,{'same' if i % 2 else 'different'}")
    (root / "images" / "unreferenced.jpg").write_bytes(b"x")
    (root / "pairs.csv").write_text("\n".join(lines) + "\n")
    return root / "pairs.csv"


def test_paired_tables_keep_exactly_the_referenced_files(pairs: Path, tmp_path: Path) -> None:
    data = tmp_path / "case" / "data"
    data.mkdir(parents=True)
    meta = make_metadata(data / "pairs.metadata.json", ["pairs"])
    out = data / "pairs"
    assert main(["construct", "downsample", "paired", str(pairs), "--out", str(out),
                 "--fraction", "0.3", "--files-column", "image", "--label-column", "label",
                 "--seed", "1"]) == 0
    table = pd.read_csv(out / "pairs.csv")
    assert len(table) == 6 and table["label"].value_counts().to_dict() == {"different": 3, "same": 3}
    assert files_under(out) == {"pairs.csv", *table["image"]}
    entry = read_metadata(meta)["modifications"][-1]
    assert entry["before"]["files"] == 20 and entry["after"]["files"] == 6
    assert entry["before"]["rows"] == 20 and entry["after"]["rows"] == 6


def test_paired_references_must_stay_inside(pairs: Path, tmp_path: Path, capsys) -> None:
    text = pairs.read_text().replace("images/p3.jpg", "../outside.jpg").replace("images/p4.jpg", "images/gone.jpg")
    pairs.write_text(text)
    assert main(["construct", "downsample", "paired", str(pairs), "--out", str(tmp_path / "o"),
                 "--fraction", "0.5", "--files-column", "image", "--no-metadata"]) == 1
    error = capsys.readouterr().err
    assert "row 5, image: '../outside.jpg'" in error
    assert "row 6, image: 'images/gone.jpg' not found" in error
    assert not (tmp_path / "o").exists()


def test_metadata_file_is_json_after_recording(labelled_csv: Path, tmp_path: Path) -> None:
    meta = make_metadata(tmp_path / "custom.metadata.json", ["kdd.csv"])
    assert main(["construct", "downsample", "table", str(labelled_csv), "--out", str(tmp_path / "kdd.csv"),
                 "--per-class", "1", "--label-column", "label", "--metadata", str(meta)]) == 0
    assert json.loads(meta.read_text())["modifications"][0]["per_class"] == 1
