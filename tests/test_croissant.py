"""croissant.json: every export carries Croissant 1.0 metadata that mlcroissant validates
offline and reads the records through; its RAI fields and the card name every licence."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from junobench.data.export import CARD, CROISSANT, MANIFEST, PARQUET, file_digest
from junobench.hub.check import check
from junobench.hub.write_export import export

mlc = pytest.importorskip("mlcroissant", reason="the croissant extra is not installed")


@pytest.fixture(scope="module")
def sample_export(tmp_path_factory) -> Path:
    return export("sample", tmp_path_factory.mktemp("croissant") / "export").out


@pytest.fixture(scope="module")
def reference_export(reference_snapshot, tmp_path_factory) -> Path:
    return export(reference_snapshot, tmp_path_factory.mktemp("croissant-ref") / "export").out


def records(path: Path, record_set: str) -> list[dict]:
    logging.getLogger("absl").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return list(mlc.Dataset(jsonld=str(path)).records(record_set))


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def test_mlcroissant_reads_the_rows_of_both_configs(sample_export: Path) -> None:
    cases = records(sample_export / CROISSANT, "cases")
    table = pq.read_table(sample_export / PARQUET["cases"]).to_pylist()
    assert [text(r["cases/case_id"]) for r in cases] == [r["case_id"] for r in table]
    first, row = cases[0], table[0]
    assert text(first["cases/diagnosis"]) == row["diagnosis"]
    assert first["cases/crash_line"] == row["crash_line"]
    assert [text(t) for t in first["cases/traceback"]] == row["traceback"]
    [dataset] = first["cases/datasets"]
    assert text(dataset["cases/datasets/license"]) == row["datasets"][0]["license"]
    order = first["cases/execution_order/reproduced"]
    assert [o["cases/execution_order/reproduced/execution_count"] for o in order] == \
        [o["execution_count"] for o in row["execution_order"]["reproduced"]]

    notebooks = records(sample_export / CROISSANT, "notebooks")
    assert len(notebooks) == pq.read_metadata(sample_export / PARQUET["notebooks"]).num_rows == 20
    assert sum(bool(n["notebooks/crash"]) for n in notebooks) == 10


def test_the_parquet_files_are_named_with_their_sha256(sample_export: Path) -> None:
    data = json.loads((sample_export / CROISSANT).read_text())
    assert data["conformsTo"] == "http://mlcommons.org/croissant/1.0"
    files = {d["contentUrl"]: d["sha256"] for d in data["distribution"]}
    assert files == {PARQUET[c]: file_digest(sample_export / PARQUET[c])["sha256"] for c in PARQUET}
    assert {r["name"] for r in data["recordSet"]} == {"cases", "notebooks"}


def test_rai_fields_and_every_licence(reference_export: Path) -> None:
    data = json.loads((reference_export / CROISSANT).read_text())
    for key in ("rai:dataCollection", "rai:personalSensitiveInformation", "rai:dataBiases",
                "rai:dataLimitations", "rai:dataUseCases", "rai:dataPreprocessingProtocol"):
        assert data[key], key
    assert "111 cases" in data["rai:dataCollection"]
    assert "origin: not recorded 111" in data["rai:dataCollection"]  # no source column here
    assert any("pandas 15" in b for b in data["rai:dataBiases"])
    cases = pq.read_table(reference_export / PARQUET["cases"]).to_pylist()
    licences = {d["license"] for c in cases for d in c["datasets"] if d["title"] != "nodata"}
    assert {lic["name"] for lic in data["license"]} == licences
    based_on = {(d["name"], d["license"]["name"]) for d in data["isBasedOn"]}
    assert ("IMDB Dataset of 50K Movie Reviews", "Allow academic research") in based_on
    cc0 = next(lic for lic in data["license"] if lic["name"] == "CC0: Public Domain")
    assert cc0["identifier"] == "CC0-1.0" and cc0["url"].startswith("https://creativecommons.org/")
    card = (reference_export / CARD).read_text()
    assert all(lic.replace("|", "\\|") in card for lic in licences)
    assert "license_details:" in card
    assert check(reference_export) == []


def rewrite(export_dir: Path, name: str, content: str) -> None:
    """Change one file of an export and its manifest entry, so that only the content is wrong."""
    (export_dir / name).write_text(content, encoding="utf-8")
    manifest = json.loads((export_dir / MANIFEST).read_text())
    manifest["files"][name] = file_digest(export_dir / name)
    (export_dir / MANIFEST).write_text(json.dumps(manifest))


def test_check_names_a_wrong_croissant_or_card(sample_export: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(sample_export, copy)
    data = json.loads((copy / CROISSANT).read_text())
    data["distribution"][0]["sha256"] = "0" * 64
    rewrite(copy, CROISSANT, json.dumps(data))
    [problem] = check(copy)
    assert problem.file == CROISSANT and "sha256" in problem.problem

    del data["recordSet"][1]
    data["distribution"][0]["sha256"] = file_digest(copy / PARQUET["cases"])["sha256"]
    data["recordSet"][0]["field"][0]["source"]["extract"]["column"] = "no_such_column"
    rewrite(copy, CROISSANT, json.dumps(data))
    assert [p.problem for p in check(copy)] == ["has no RecordSet 'notebooks'"]

    shutil.copy(sample_export / CROISSANT, copy / CROISSANT)
    rewrite(copy, CROISSANT, (sample_export / CROISSANT).read_text().replace('"@type": "cr:RecordSet"',
                                                                              '"@type": "cr:Nothing"', 1))
    assert any(p.file == CROISSANT and p.problem.startswith("mlcroissant:") for p in check(copy))

    for hostile in ({**data, "@context": "http://127.0.0.1:9/context.jsonld"}, {**data, "recordSet": 5},
                    {**data, "distribution": "x"}, [1, 2]):
        rewrite(copy, CROISSANT, json.dumps(hostile))
        assert [p.file for p in check(copy)] and all(p.file == CROISSANT for p in check(copy))

    rewrite(copy, CROISSANT, (sample_export / CROISSANT).read_text())
    card = (copy / CARD).read_text().replace("CC0: Public Domain", "some licence")
    rewrite(copy, CARD, card)
    assert [p.problem for p in check(copy)] == [
        "the card does not name the input-dataset licence 'CC0: Public Domain'"]
    (copy / CROISSANT).unlink()
    manifest = json.loads((copy / MANIFEST).read_text())
    del manifest["files"][CROISSANT]
    (copy / MANIFEST).write_text(json.dumps(manifest))
    assert "the Croissant metadata is missing" in [p.problem for p in check(copy)]
