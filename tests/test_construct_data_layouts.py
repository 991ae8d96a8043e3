"""downsample and synthetic keep what a notebook depends on: paired files and split lists,
root-only archives, several file columns in their folders, codes with leading zeros,
identifiers; and they list the files they wrote in the metadata file."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd
from test_construct_downsample import files_under, make_metadata

from junobench.cli import main
from junobench.construct.downsample import downsample_archive
from junobench.construct.synthetic import synthesize
from junobench.data.metadata import read_metadata


def test_images_take_their_annotations_and_split_lists_along(tmp_path: Path) -> None:
    voc = tmp_path / "VOC2012"
    ids = [f"2007_{i:06d}" for i in range(20)]
    for folder in ("JPEGImages", "Annotations", "ImageSets/Main"):
        (voc / folder).mkdir(parents=True)
    for image_id in ids:
        (voc / "JPEGImages" / f"{image_id}.jpg").write_bytes(b"jpg")
        (voc / "Annotations" / f"{image_id}.xml").write_text("<annotation/>")
    (voc / "ImageSets/Main/train.txt").write_text("".join(f"{i}\n" for i in ids[:12]))
    (voc / "ImageSets/Main/val.txt").write_text("".join(f"{i}  1\n" for i in ids[12:]))
    (voc / "README").write_text("VOC")
    data = tmp_path / "case" / "data"
    data.mkdir(parents=True)
    meta = make_metadata(data / "VOC2012.metadata.json", [])
    assert main(["construct", "downsample", "images", str(voc), "--out", str(data / "VOC2012"),
                 "--fraction", "0.25", "--seed", "1"]) == 0
    kept = files_under(data / "VOC2012")
    images = {Path(k).stem for k in kept if k.startswith("JPEGImages/")}
    annotations = {Path(k).stem for k in kept if k.startswith("Annotations/")}
    assert len(images) == 5 and annotations == images
    listed = set()
    for name in ("train.txt", "val.txt"):
        lines = (data / "VOC2012/ImageSets/Main" / name).read_text().splitlines()
        listed |= {line.split()[0] for line in lines}
    assert listed == images  # no split list names a removed image
    assert "README" in kept
    recorded = read_metadata(meta)
    assert sorted(recorded["files"]) == sorted(f"VOC2012/{k}" for k in kept)
    assert [m["kind"] for m in recorded["modifications"]] == ["downsampled"]


def test_an_archive_of_root_files_is_reduced(tmp_path: Path) -> None:
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(200):
            zf.writestr(f"img_{i}.png", b"x")
    meta = make_metadata(tmp_path / "images.metadata.json", [])
    result = downsample_archive(archive, tmp_path / "images", fraction=0.1, seed=2)
    assert (result.before, result.after) == (200, 20)
    assert len(read_metadata(meta)["files"]) == 20


def test_nothing_removed_is_not_recorded_as_downsampled(tmp_path: Path, caplog) -> None:
    archive = tmp_path / "few.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(3):
            zf.writestr(f"cls/img_{i}.png", b"x")
    meta = make_metadata(tmp_path / "few.metadata.json", [])
    downsample_archive(archive, tmp_path / "few", per_class=10, seed=2)
    recorded = read_metadata(meta)
    assert recorded["modifications"] == [] and len(recorded["files"]) == 3
    assert "nothing was removed" in caplog.text


def test_paired_rows_keep_every_file_column_where_the_notebook_reads_it(tmp_path: Path) -> None:
    case = tmp_path / "source"
    images = case / "archive" / "images_labeled"
    images.mkdir(parents=True)
    rows = []
    for i in range(40):
        for side in ("a", "b"):
            (images / f"{i}{side}.jpg").write_bytes(b"img")
        rows.append({"image1": f"{i}a.jpg", "image2": f"{i}b.jpg", "label": i % 2})
    pd.DataFrame(rows).to_csv(case / "pairs.csv", index=False)
    out = tmp_path / "data" / "pairs"
    out.parent.mkdir()
    make_metadata(tmp_path / "data" / "pairs.metadata.json", [])
    assert main(["construct", "downsample", "paired", str(case / "pairs.csv"), "--out", str(out),
                 "--files-column", "image1", "--files-column", "image2",
                 "--files-root", str(images), "--fraction", "0.25", "--label-column",
                 "label", "--seed", "4"]) == 0
    kept = pd.read_csv(out / "pairs.csv")
    assert len(kept) == 10
    for _, row in kept.iterrows():  # both images of every kept pair, at the notebook's path
        assert (out / "archive/images_labeled" / row["image1"]).is_file()
        assert (out / "archive/images_labeled" / row["image2"]).is_file()
    assert len(files_under(out / "archive/images_labeled")) == 20


def test_synthetic_keeps_codes_and_identifiers(tmp_path: Path) -> None:
    table = tmp_path / "customers.csv"
    table.write_text("id,zip,spend\n" + "".join(
        f"{i},{i % 7:05d},{i * 1.5}\n" for i in range(1, 61)), encoding="utf-8")
    meta = make_metadata(tmp_path / "customers_synthetic.metadata.json", [])
    out = tmp_path / "customers_synthetic.csv"
    assert main(["construct", "synthetic", str(table), "--out", str(out), "--seed", "3"]) == 0
    fake = pd.read_csv(out, dtype=str)
    original = pd.read_csv(table, dtype=str)
    assert set(fake["zip"]) <= set(original["zip"]) and all(len(z) == 5 for z in fake["zip"])
    assert fake["id"].is_unique and len(fake) == 60
    assert read_metadata(meta)["files"] == ["customers_synthetic.csv"]
    frame = pd.DataFrame({"code": ["A1", "B2", "C3", "D4"], "x": [1, 1, 2, 2]})
    fake_frame, report = synthesize(frame, seed=0)
    assert fake_frame["code"].is_unique and not set(fake_frame["code"]) & set(frame["code"])
    assert all(len(c) == 2 and c[0].isupper() and c[1].isdigit() for c in fake_frame["code"])
    assert "identifier" in report.columns["code"]
