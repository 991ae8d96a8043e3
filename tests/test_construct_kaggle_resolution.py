"""kaggle-metadata on the cases Meta Kaggle makes hard: missing owners, float ids, pinned
versions, competition licences, inputs that are another notebook's output."""

from __future__ import annotations

import copy
from pathlib import Path

from test_construct_kaggle import META_KAGGLE, write_meta_kaggle, write_notebooks

from junobench.cli import main
from junobench.construct import kaggle


def _meta_kaggle(folder: Path) -> Path:
    tables = copy.deepcopy(META_KAGGLE)
    tables["Users"].append([4, "dave", "Dave"])
    # Ids written as floats, as a spreadsheet tool saves them.
    tables["Kernels"].append([104, "4.0", "1041.0", "eda-with-versions", 0])
    tables["KernelVersions"] += [[1040, 104, "first"], [1041, "104.0", "second"]]
    tables["KernelVersionDatasetSources"] += [[6, 1040, 8000], [7, "1041.0", "5001.0"],
                                              [8, 1041, 9999]]
    tables["DatasetVersions"].append([8000, 80, 6, "Lost Owner Data", "lost", "CC BY 4.0", 1])
    tables["Datasets"].append([80, 99, "", 8000])  # user 99 is not in Users
    tables["Competitions"] = [["Id", "Slug", "Title", "LicenseName"],
                              [900, "titanic", "Titanic - Machine Learning from Disaster",
                               "Competition Use and Academic, Non-Commercial Use Only"]]
    tables["KernelVersionKernelSources"] = [["Id", "KernelVersionId", "SourceKernelVersionId"],
                                            [1, 1041, 1002]]
    return write_meta_kaggle(folder, tables)


def _resolve(tmp_path: Path, notebooks: list[str]) -> list[dict]:
    out = tmp_path / "datasets.csv"
    assert main(["construct", "kaggle-metadata",
                 str(write_notebooks(tmp_path / "nbs.csv", notebooks)),
                 "--meta-kaggle", str(_meta_kaggle(tmp_path / "meta")), "--out", str(out)]) == 0
    return kaggle.read_rows(out)


def test_nothing_is_dropped_and_float_ids_match(tmp_path: Path) -> None:
    rows = _resolve(tmp_path, ["dave/eda-with-versions"])
    by_kind = {(r["kind"], r["title"]): r for r in rows}
    wine = by_kind[("dataset", "Red Wine Quality")]
    assert wine["url"] == "https://www.kaggle.com/datasets/bob/red-wine-quality"
    assert wine["version"] == "2"
    unknown = next(r for r in rows if "9999" in (r["note"] or ""))
    assert unknown["url"] == "" and "not in Meta Kaggle's DatasetVersions" in unknown["note"]
    output = by_kind[("notebook output", "v2")]
    assert output["url"] == "https://www.kaggle.com/code/alice/wine-quality/output"
    assert output["handle"] == "code/alice/wine-quality"
    assert len(rows) == 3


def test_a_pinned_version_and_an_unknown_owner(tmp_path: Path) -> None:
    rows = _resolve(tmp_path, [
        "https://www.kaggle.com/code/dave/eda-with-versions?scriptVersionId=1040",
        "https://www.kaggle.com/code/dave/eda-with-versions?scriptVersionId=5"])
    pinned = [r for r in rows if r["notebook"].endswith("=1040")]
    assert [(r["title"], r["license"], r["url"]) for r in pinned] == [
        ("Lost Owner Data", "CC BY 4.0", "")]
    assert "owner (user 99) is not in Meta Kaggle's Users/Organizations" in pinned[0]["note"]
    wrong = [r for r in rows if r["notebook"].endswith("=5")]
    assert "scriptVersionId 5 is not a version of this notebook" in wrong[0]["note"]
    assert {r["title"] for r in wrong} == {"Red Wine Quality", "", "v2"}


def test_competition_licence_and_data_url(tmp_path: Path) -> None:
    rows = _resolve(tmp_path, ["https://www.kaggle.com/code/alice/titanic-eda"])
    assert [(r["kind"], r["url"], r["license"], r["handle"]) for r in rows] == [
        ("competition", "https://www.kaggle.com/competitions/titanic/data",
         "Competition Use and Academic, Non-Commercial Use Only", "competitions/titanic")]
    assert kaggle.handle_of(rows[0]["url"]) == "competitions/titanic"


def test_unresolved_rows_are_not_downloaded(tmp_path: Path) -> None:
    rows = _resolve(tmp_path, ["https://www.kaggle.com/code/dave/eda-with-versions?scriptVersionId=1040"])
    assert rows and all(not r["handle"] for r in rows)
    fetched: list[str] = []
    assert kaggle.download(tmp_path / "datasets.csv", tmp_path / "dest",
                           fetch=lambda handle: Path(fetched.append(handle) or tmp_path)) == []
    assert fetched == []
