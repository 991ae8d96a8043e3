"""construct kaggle-metadata (Meta Kaggle via DuckDB) and construct download (kagglehub, mirror)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from junobench.cli import main
from junobench.construct import kaggle
from junobench.data.tables import read_table
from junobench.errors import JunoBenchError

#: A hand-made Meta Kaggle: three users, one organisation, four notebooks.
META_KAGGLE = {
    "Users": [["Id", "UserName", "DisplayName"],
              [1, "alice", "Alice"], [2, "bob", "Bob"], [3, "carol", "Carol"]],
    "Organizations": [["Id", "Name", "Slug"], [10, "UCI Machine Learning", "uciml"]],
    "Kernels": [["Id", "AuthorUserId", "CurrentKernelVersionId", "CurrentUrlSlug", "TotalVotes"],
                [100, 1, 1002, "wine-quality", 3],
                [101, 2, "", "cnn-approach", 0],   # no current version: the latest is used
                [102, 3, 1020, "no-inputs", 0],
                [103, 1, 1030, "titanic-eda", 1]],
    "KernelVersions": [["Id", "ScriptId", "Title"], [1001, 100, "v1"], [1002, 100, "v2"],
                       [1010, 101, "v1"], [1011, 101, "v2"], [1020, 102, "v1"], [1030, 103, "v1"]],
    "KernelVersionDatasetSources": [["Id", "KernelVersionId", "SourceDatasetVersionId"],
                                    [1, 1001, 5000], [2, 1002, 5001], [3, 1002, 6000],
                                    [4, 1010, 6000], [5, 1011, 7000]],
    "DatasetVersions": [["Id", "DatasetId", "DatasourceVersionId", "Title", "Slug",
                         "LicenseName", "VersionNumber"],
                        [5000, 50, 1, "Wine Quality", "wine-quality", "CC0: Public Domain", 1],
                        [5001, 50, 2, "Wine Quality", "wine-quality", "CC0: Public Domain", 2],
                        [5002, 50, 3, "Red Wine Quality", "red-wine-quality", "CC0: Public Domain", 3],
                        [6000, 60, 4, "Iris Species", "iris", "Unknown", 1],
                        [7000, 70, 5, "Fashion, MNIST", "fashionmnist", "MIT", 4]],
    "Datasets": [["Id", "OwnerUserId", "OwnerOrganizationId", "CurrentDatasetVersionId"],
                 [50, 2, "", 5002], [60, "", 10, 6000], [70, 3, "", 7000]],
    "KernelVersionCompetitionSources": [["Id", "KernelVersionId", "SourceCompetitionId"],
                                        [1, 1030, 900]],
    "Competitions": [["Id", "Slug", "Title"], [900, "titanic", "Titanic - Machine Learning from Disaster"]],
}


def write_meta_kaggle(folder: Path, tables: dict = META_KAGGLE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(rows)
    return folder


def write_notebooks(path: Path, notebooks: list[str]) -> Path:
    path.write_text("notebook\n" + "".join(f"{n}\n" for n in notebooks), encoding="utf-8")
    return path


def test_resolves_titles_urls_and_licences(tmp_path: Path, capsys) -> None:
    meta = write_meta_kaggle(tmp_path / "meta-kaggle")
    notebooks = write_notebooks(tmp_path / "notebooks.csv", [
        "https://www.kaggle.com/code/alice/wine-quality", "bob/cnn-approach", "carol/no-inputs",
        "https://www.kaggle.com/code/alice/titanic-eda", "dave/not-there"])
    out = tmp_path / "datasets.xlsx"
    assert main(["construct", "kaggle-metadata", str(notebooks), "--meta-kaggle", str(meta),
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"5 notebooks, 4 input datasets; wrote {out}\n"
                            "warning: 1 notebook(s) not found in Meta Kaggle (noted in their rows): "
                            "dave/not-there\n")  # said once
    rows = read_table(out).records()
    found = [(r["notebook"], r["title"], r["url"], r["license"], r["handle"]) for r in rows if r["url"]]
    assert found == [
        ("https://www.kaggle.com/code/alice/wine-quality", "Red Wine Quality",
         "https://www.kaggle.com/datasets/bob/red-wine-quality", "CC0: Public Domain",
         "bob/red-wine-quality"),
        ("https://www.kaggle.com/code/alice/wine-quality", "Iris Species",
         "https://www.kaggle.com/datasets/uciml/iris", "Unknown", "uciml/iris"),  # an organisation's
        ("bob/cnn-approach", "Fashion, MNIST", "https://www.kaggle.com/datasets/carol/fashionmnist",
         "MIT", "carol/fashionmnist"),  # from the latest version, 1011
        ("https://www.kaggle.com/code/alice/titanic-eda", "Titanic - Machine Learning from Disaster",
         "https://www.kaggle.com/competitions/titanic/data", None, "competitions/titanic"),
    ]
    versions = {r["handle"]: r["version"] for r in rows if r["url"]}
    assert versions["bob/red-wine-quality"] == 2  # the version the notebook used
    notes = {r["notebook"]: r["note"] for r in rows if r["note"]}
    assert notes == {"carol/no-inputs": "no input datasets recorded",
                     "dave/not-there": "notebook not found in Meta Kaggle",
                     "https://www.kaggle.com/code/alice/titanic-eda":
                         "Meta Kaggle records no licence for this competition: see its rules"}


def test_missing_tables_and_columns_are_named(tmp_path: Path, capsys) -> None:
    tables = {k: v for k, v in META_KAGGLE.items() if k != "Organizations"}
    tables["DatasetVersions"] = [[c for c in row if c != "LicenseName"] if i == 0 else row[:5] + row[6:]
                                 for i, row in enumerate(META_KAGGLE["DatasetVersions"])]
    meta = write_meta_kaggle(tmp_path / "meta", tables)
    notebooks = write_notebooks(tmp_path / "n.csv", ["alice/wine-quality"])
    assert main(["construct", "kaggle-metadata", str(notebooks), "--meta-kaggle", str(meta),
                 "--out", str(tmp_path / "o.xlsx")]) == 1
    error = capsys.readouterr().err
    assert "Organizations.csv is missing" in error
    assert "DatasetVersions.csv lacks column(s) LicenseName" in error
    assert not (tmp_path / "o.xlsx").exists()


def test_competitions_are_optional(tmp_path: Path) -> None:
    tables = {k: v for k, v in META_KAGGLE.items() if not k.startswith(("Competitions", "KernelVersionComp"))}
    meta = write_meta_kaggle(tmp_path / "meta", tables)
    rows = kaggle.kaggle_metadata(write_notebooks(tmp_path / "n.csv", ["alice/titanic-eda"]), meta,
                                  tmp_path / "o.csv")
    assert rows == [{"notebook": "alice/titanic-eda",
                     "notebook_url": "https://www.kaggle.com/code/alice/titanic-eda",
                     "note": "no input datasets recorded"}]


def test_notebook_references() -> None:
    assert kaggle.notebook_ref("https://www.kaggle.com/kernels/a.b/c-d?scriptVersionId=1") == ("a.b", "c-d")
    assert kaggle.notebook_ref("kaggle.com/code/x/y/") == ("x", "y")
    for bad in ("", "just-a-name", "https://example.com/a/b/c", "https://www.kaggle.com/datasets/a/b"):
        with pytest.raises(ValueError):
            kaggle.notebook_ref(bad)


def test_a_bad_reference_names_its_row(tmp_path: Path, capsys) -> None:
    meta = write_meta_kaggle(tmp_path / "meta")
    notebooks = write_notebooks(tmp_path / "n.csv", ["alice/wine-quality", "not a notebook"])
    assert main(["construct", "kaggle-metadata", str(notebooks), "--meta-kaggle", str(meta),
                 "--out", str(tmp_path / "o.xlsx")]) == 1
    assert "row 3" in capsys.readouterr().err


# --------------------------------------------------------------------------- download


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    root = tmp_path / "mirror"
    (root / "bob" / "red-wine-quality").mkdir(parents=True)
    (root / "bob" / "red-wine-quality" / "winequality-red.csv").write_text("a,b\n1,2\n")
    (root / "uciml" / "iris" / "sub").mkdir(parents=True)
    (root / "uciml" / "iris" / "Iris.csv").write_text("x\n" * 100)
    (root / "uciml" / "iris" / "sub" / "notes.txt").write_bytes(b"\x00\x01binary")
    return root


def _datasets(tmp_path: Path) -> Path:
    table = tmp_path / "datasets.csv"
    table.write_text("notebook,url,handle,version\n"
                     "a,https://www.kaggle.com/datasets/bob/red-wine-quality,,\n"
                     "a,https://www.kaggle.com/datasets/uciml/iris,,\n"
                     "b,https://www.kaggle.com/datasets/uciml/iris/data,,\n", encoding="utf-8")
    return table


def test_download_from_a_mirror_records_hashes_and_resumes(tmp_path: Path, mirror: Path, capsys) -> None:
    dest = tmp_path / "dest"
    argv = ["construct", "download", str(_datasets(tmp_path)), "--dest", str(dest), "--mirror", str(mirror)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # each dataset's line is a status, on stderr
    first = captured.err
    assert first.count("downloaded") == 2  # iris is listed twice, fetched once
    record = json.loads((dest / "uciml" / "iris" / "latest.download.json").read_text())
    assert record["handle"] == "uciml/iris"
    by_path = {f["path"]: f for f in record["files"]}
    assert set(by_path) == {"Iris.csv", "sub/notes.txt"}
    data = (dest / "uciml" / "iris" / "latest" / "sub" / "notes.txt").read_bytes()
    assert by_path["sub/notes.txt"] == {"path": "sub/notes.txt", "size": len(data),
                                        "sha256": hashlib.sha256(data).hexdigest()}
    stamp = (dest / "bob" / "red-wine-quality" / "latest" / "winequality-red.csv").stat().st_mtime_ns

    assert main(argv) == 0  # resumed: both complete, nothing copied again
    assert capsys.readouterr().err.count("already complete") == 2
    assert (dest / "bob" / "red-wine-quality" / "latest" / "winequality-red.csv").stat().st_mtime_ns == stamp

    (dest / "uciml" / "iris" / "latest" / "Iris.csv").write_text("truncated")  # an incomplete download
    assert main(argv) == 0
    again = capsys.readouterr().err
    assert "uciml/iris: downloaded" in again and "bob/red-wine-quality: already complete" in again
    assert (dest / "uciml" / "iris" / "latest" / "Iris.csv").read_text() == "x\n" * 100


def test_each_version_of_a_dataset_has_its_own_folder_and_is_not_fetched_again(
        tmp_path: Path, mirror: Path, capsys) -> None:
    for version, text in (("1", "a\n1\n"), ("2", "a\n1\n2\n")):
        folder = mirror / "bob" / "wine" / "versions" / version
        folder.mkdir(parents=True)
        (folder / "wine.csv").write_text(text)
    table = tmp_path / "d.csv"
    table.write_text("notebook,url,version\n"
                     "a,https://www.kaggle.com/datasets/bob/wine,1\n"
                     "b,https://www.kaggle.com/datasets/bob/wine,2.0\n", encoding="utf-8")
    dest = tmp_path / "dest"
    argv = ["construct", "download", str(table), "--dest", str(dest), "--mirror", str(mirror)]
    assert main(argv) == 0
    assert capsys.readouterr().err.count("downloaded") == 2
    versions = dest / "bob" / "wine" / "versions"
    assert (versions / "1" / "wine.csv").read_text() == "a\n1\n"  # not overwritten by version 2
    assert (versions / "2" / "wine.csv").read_text() == "a\n1\n2\n"
    assert main(argv) == 0  # both there and verified: nothing fetched
    assert capsys.readouterr().err.count("already complete") == 2

    (versions / "1" / "wine.csv").write_text("a\n9\n")  # same size, other bytes: not verified
    assert main(argv) == 0
    out = capsys.readouterr().err
    assert "bob/wine/versions/1: downloaded" in out and "bob/wine/versions/2: already complete" in out
    assert (versions / "1" / "wine.csv").read_text() == "a\n1\n"
    assert sorted(p.name for p in versions.iterdir()) == ["1", "1.download.json", "2",
                                                           "2.download.json"]

    (versions / "1" / "wine.csv").write_text("a\n9\n")
    (versions / "1" / "mine.txt").write_text("notes")  # a file the download did not write
    assert main(argv) == 1
    assert "mine.txt" in capsys.readouterr().err
    assert (versions / "1" / "mine.txt").read_text() == "notes"  # refused, nothing deleted


@pytest.mark.parametrize("version", ["abc", "inf", "nan", "-2", "0", "2.5", "1e300"])
def test_a_bad_version_is_one_clear_error(tmp_path: Path, mirror: Path, version: str, capsys) -> None:
    table = tmp_path / "d.csv"
    table.write_text(f"url,version\nhttps://www.kaggle.com/datasets/bob/wine,{version}\n")
    assert main(["construct", "download", str(table), "--dest", str(tmp_path / "d"),
                 "--mirror", str(mirror)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "row 2" in err and "not a positive whole number" in err


def test_a_table_that_is_not_utf8_is_one_clear_error(tmp_path: Path, mirror: Path, capsys) -> None:
    table = tmp_path / "d.csv"
    table.write_bytes("url\nhttps://www.kaggle.com/datasets/bob/caf\xe9\n".encode("latin-1"))
    assert main(["construct", "download", str(table), "--dest", str(tmp_path / "d"),
                 "--mirror", str(mirror)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not UTF-8" in err and str(table) in err


def test_download_missing_from_the_mirror(tmp_path: Path, mirror: Path, capsys) -> None:
    table = tmp_path / "d.csv"
    table.write_text("url\nhttps://www.kaggle.com/datasets/someone/else\n", encoding="utf-8")
    assert main(["construct", "download", str(table), "--dest", str(tmp_path / "d"),
                 "--mirror", str(mirror)]) == 1
    assert "someone/else is not in the mirror" in capsys.readouterr().err


def test_download_goes_through_kagglehub(tmp_path: Path, mirror: Path, monkeypatch) -> None:
    import kagglehub

    asked = []

    def dataset_download(handle: str, path=None, *, force_download=False, output_dir=None) -> str:
        asked.append(handle)
        owner, slug = handle.split("/")[:2]
        return str(mirror / owner / slug)

    monkeypatch.setattr(kagglehub, "dataset_download", dataset_download)
    table = tmp_path / "d.csv"
    table.write_text("handle,version\nbob/red-wine-quality,2\n", encoding="utf-8")
    done = kaggle.download(table, tmp_path / "dest")
    assert asked == ["bob/red-wine-quality/versions/2"]  # the version the notebook used
    assert [d.folder for d in done] == [tmp_path / "dest/bob/red-wine-quality/versions/2"]
    assert not done[0].skipped


def test_kagglehub_failures_are_one_clear_error(monkeypatch) -> None:
    import kagglehub

    def failing(handle: str, *args, **kwargs) -> str:
        raise RuntimeError("401 Unauthorized: key=abc123secret")

    monkeypatch.setattr(kagglehub, "dataset_download", failing)
    with pytest.raises(JunoBenchError) as caught:
        kaggle.kagglehub_fetch("owner/slug")
    assert "owner/slug" in str(caught.value) and "abc123secret" not in str(caught.value)


def test_handles_are_plain_names(tmp_path: Path, mirror: Path) -> None:
    table = tmp_path / "d.csv"
    table.write_text("handle\n../../etc\n", encoding="utf-8")
    with pytest.raises(JunoBenchError, match="not a Kaggle handle"):
        kaggle.download(table, tmp_path / "dest", mirror=mirror)


def test_download_goes_on_past_a_failure_and_lists_every_one(tmp_path: Path, mirror: Path,
                                                             capsys) -> None:
    table = tmp_path / "d.csv"
    table.write_text("url\nhttps://www.kaggle.com/datasets/someone/else\n"
                     "https://www.kaggle.com/datasets/bob/red-wine-quality\n"
                     "https://www.kaggle.com/datasets/nobody/nothing\n", encoding="utf-8")
    code = main(["construct", "download", str(table), "--dest", str(tmp_path / "d"),
                 "--mirror", str(mirror)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.startswith("bob/red-wine-quality: downloaded")  # after the first failure
    lines = err.splitlines()[1:]
    assert [line.split(":")[0:2] for line in lines[:2]] == [["failed", " someone/else"],
                                                            ["failed", " nobody/nothing"]]
    assert [line for line in lines if line.startswith("error: ")] == [lines[-1]]
    assert lines[-1].startswith("error: 2 of 3 dataset(s) could not be downloaded; the other 1 "
                                "are in ")
    with pytest.raises(kaggle.DownloadFailed) as caught:
        kaggle.download(table, tmp_path / "d", mirror=mirror)
    assert [h for h, _ in caught.value.failures] == ["someone/else", "nobody/nothing"]
    assert [d.handle for d in caught.value.done] == ["bob/red-wine-quality"]
    assert caught.value.done[0].skipped  # the second run keeps what is complete
