"""Export of the reference snapshot: stock datasets reads it, it is deterministic, atomic,
checkable, and its card is computed from the data."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_run import run_cli  # tests/ is on sys.path under pytest
from snapshot_files import tree_digest  # tests/ is on sys.path under pytest

import junobench
from junobench.data.build import build
from junobench.data.export import CARD, CROISSANT, MANIFEST, PARQUET
from junobench.data.records import FEATURES
from junobench.data.tables import read_table, write_table
from junobench.hub.write_export import export

CASES = PARQUET["cases"]

STOCK_LOAD = """
import json, sys
from datasets import load_dataset
out = {}
for config in ("cases", "notebooks"):
    ds = load_dataset(sys.argv[1], config, split="test")
    out[config] = {"features": ds.features.to_dict(), "rows": ds.to_list()}
torch = load_dataset(sys.argv[1], "cases", split="test", filters=[("library", "==", "torch")])
out["torch"] = list(torch["case_id"])
out["default"] = len(load_dataset(sys.argv[1], split="test"))
out["junobench_imported"] = sorted(m for m in sys.modules if m.split(".")[0] == "junobench")
with open(sys.argv[2], "w") as handle:
    json.dump(out, handle)
"""



@pytest.fixture(scope="module")
def exported(reference_snapshot, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "junobench-export"
    result = export(reference_snapshot, out)
    assert result.rows == {"cases": 111, "notebooks": 222}
    return out


def builder_rows(snapshot: Path, config: str) -> list[dict]:
    return json.loads(json.dumps(build(snapshot, config)[0].to_list()))


def test_stock_load_dataset_reads_the_export_row_for_row_without_junobench(
        exported, reference_snapshot, tmp_path):
    result = tmp_path / "loaded.json"
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", STOCK_LOAD, str(exported), str(result)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    loaded = json.loads(result.read_text())
    assert loaded["junobench_imported"] == []
    for config, count in (("cases", 111), ("notebooks", 222)):
        assert len(loaded[config]["rows"]) == count
        assert loaded[config]["rows"] == builder_rows(reference_snapshot, config)
        assert loaded[config]["features"] == FEATURES[config].to_dict()
    torch_cases = [r["case_id"] for r in builder_rows(reference_snapshot, "cases") if r["library"] == "torch"]
    assert len(loaded["torch"]) == 15 and loaded["torch"] == torch_cases
    assert loaded["default"] == 111  # cases is the default config


def test_reexport_is_byte_identical(exported, reference_snapshot, tmp_path):
    again = export(reference_snapshot, tmp_path / "again")
    assert tree_digest(again.out) == tree_digest(exported)
    manifest = json.loads((exported / MANIFEST).read_text())
    # every file is listed: the export's own and the snapshot layout carried beside them
    on_disk = {p.relative_to(exported).as_posix() for p in exported.rglob("*") if p.is_file()} - {MANIFEST}
    assert set(manifest["files"]) == on_disk
    assert {CARD, CROISSANT, *PARQUET.values(), "benchmark_desc.xlsx", "ground_truth_crash_prediction.xlsx"} <= on_disk
    assert len([n for n in on_disk if n.startswith("benchmark/") and n.endswith(".ipynb")]) == 222
    for name, info in manifest["files"].items():
        data = (exported / name).read_bytes()
        assert info == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def test_card_yaml_names_both_configs_and_the_features(exported):
    text = (exported / CARD).read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["pretty_name"] == "JunoBench"
    assert header["license"] == "other"
    assert header["size_categories"] == ["n<1K"]
    assert "text-classification" in header["task_categories"] and "jupyter" in header["tags"]
    configs = {c["config_name"]: c for c in header["configs"]}
    assert configs["cases"]["default"] is True and "default" not in configs["notebooks"]
    for config in ("cases", "notebooks"):
        assert configs[config]["data_files"] == [{"split": "test", "path": PARQUET[config]}]
    assert [i["config_name"] for i in header["dataset_info"]] == ["cases", "notebooks"]


def test_card_body_has_distributions_licences_absences_and_citations(exported):
    text = (exported / CARD).read_text()
    # the paper's figures (reference README), computed from the records
    assert "| API misuse | 45 | 40.5% |" in text
    assert "| training | 31 | 27.9% |" in text
    assert "| NBspecific | 20 | 18.0% |" in text
    assert "| invalid argument | 21 | 18.9% |" in text
    assert "| CC0: Public Domain | 19 | 19 |" in text
    assert "[NSL-KDD](https://www.kaggle.com/datasets/kiranmahesh/nslkdd) | Unknown | NBspecific_5" in text
    assert "- original notebook: absent for all cases" in text
    assert "input datasets: none listed for 2 of 111 cases (numpy_5, torch_3)" in text
    assert "| nodata |" not in text
    assert "filters=[(\"library\", \"==\", \"torch\")]" in text
    assert "eprint        = {2510.18013}" in text and "eprint        = {2602.18537}" in text


def test_card_follows_the_data(snapshot_copy, exported, tmp_path):
    desc = read_table(snapshot_copy / "benchmark_desc.xlsx")
    rows = desc.records()
    for row in rows:
        if row["nb_name"] == "torch_2":
            assert row["label_root_cause"] == "API misuse"
            row["label_root_cause"] = "data confusion"
        if row["nb_name"] == "torch_7":
            assert row["DatasetLicenseName_1"] == "BSD 3-Clause"
            row["DatasetLicenseName_1"] = "MIT"
    write_table(snapshot_copy / "benchmark_desc.xlsx", rows, desc.columns)
    changed = export(snapshot_copy, tmp_path / "changed").out / CARD
    before, after = (exported / CARD).read_text(), changed.read_text()
    assert "| API misuse | 45 | 40.5% |" in before and "| data confusion | 25 | 22.5% |" in before
    assert "| API misuse | 44 | 39.6% |" in after and "| data confusion | 26 | 23.4% |" in after
    assert "| BSD 3-Clause | 1 | 1 |" in before and "BSD 3-Clause" not in after
    assert "| MIT | 6 | 10 |" in before and "| MIT | 7 | 11 |" in after


def test_check_passes_then_names_the_damaged_file(exported, tmp_path, capsys):
    code, out, _ = run_cli(capsys, "check", str(exported))
    assert code == 0 and out.startswith("ok:")

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for name in tree_digest(exported):
        (damaged / name).parent.mkdir(parents=True, exist_ok=True)
        (damaged / name).write_bytes((exported / name).read_bytes())
    data = bytearray((damaged / CASES).read_bytes())
    data[len(data) // 2] ^= 0x01
    (damaged / CASES).write_bytes(bytes(data))
    code, out, _ = run_cli(capsys, "check", str(damaged))
    assert code == 1
    assert f"{damaged}/{CASES}: sha256" in out
    assert "README.md" not in out

    (damaged / CARD).unlink()
    code, out, _ = run_cli(capsys, "check", str(damaged))
    assert code == 1
    assert f"{damaged}/README.md: the dataset card is missing" in out
    assert f"{damaged}/README.md: listed in the manifest but missing" in out


def test_check_reports_a_card_without_configs_and_a_wrong_schema(exported, tmp_path):
    from junobench.data.export import file_digest
    from junobench.hub.check import check

    copy = tmp_path / "copy"
    for name in tree_digest(exported):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((exported / name).read_bytes())
    card = (copy / CARD).read_text().replace("config_name: notebooks", "config_name: notebook")
    (copy / CARD).write_text(card)
    # the notebooks parquet replaced by the cases one, and the manifest made to agree
    (copy / PARQUET["notebooks"]).write_bytes((copy / CASES).read_bytes())
    manifest = json.loads((copy / MANIFEST).read_text())
    for name in (CARD, PARQUET["notebooks"]):
        manifest["files"][name] = file_digest(copy / name)
    (copy / MANIFEST).write_text(json.dumps(manifest))
    problems = [str(p) for p in check(copy)]
    assert "README.md: the card's YAML names no config 'notebooks'" in problems
    assert any(p.startswith(f"{PARQUET['notebooks']}: its columns are not those of the 'notebooks'")
               for p in problems)
    assert f"{PARQUET['notebooks']}: 111 rows, the manifest says 222" in problems

    (copy / CARD).write_text("---\nconfigs: [\n---\n# broken\n")
    assert any(str(p).startswith("README.md: the card's YAML does not parse") for p in check(copy))


def test_failed_export_leaves_the_previous_export_byte_identical(snapshot_copy, tmp_path, capsys):
    out = tmp_path / "E"
    code, _, _ = run_cli(capsys, "export", "--source", str(snapshot_copy), "--out", str(out))
    assert code == 0
    before = tree_digest(out)

    notebook = snapshot_copy / "benchmark/torch_1/torch_1_reproduced.ipynb"
    notebook.write_text('{"cells": [', encoding="utf-8")
    code, _, err = run_cli(capsys, "export", "--source", str(snapshot_copy), "--out", str(out))
    assert code == 1
    assert "torch_1" in err and "Traceback" not in err
    assert tree_digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["E", "snapshot"]


def test_export_interrupted_while_writing_leaves_the_previous_export(exported, reference_snapshot,
                                                                     tmp_path, monkeypatch):
    import junobench.hub.card

    out = tmp_path / "E"
    export(reference_snapshot, out)
    before = tree_digest(out)

    def broken(*args, **kwargs):  # fails after the parquet files are written
        assert any(tmp_path.glob(".E.*.partial/cases/*.parquet"))
        raise RuntimeError("disk full")

    monkeypatch.setattr(junobench.hub.card, "render_card", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        export(reference_snapshot, out)
    assert tree_digest(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["E"]


def test_export_refuses_a_directory_that_is_not_an_export(reference_snapshot, tmp_path, capsys):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    code, _, err = run_cli(capsys, "export", "--source", str(reference_snapshot), "--out", str(out))
    assert code == 1 and "not an earlier export" in err
    assert (out / "thesis.tex").read_text() == "precious"

    code, _, err = run_cli(capsys, "export", "--source", str(reference_snapshot),
                           "--out", str(reference_snapshot / "export"))
    assert code == 1 and "inside the snapshot" in err
    assert not (reference_snapshot / "export").exists()


def test_load_reads_an_export_from_parquet_with_filters(exported, reference_snapshot, caplog):
    assert junobench.load(exported, "cases").to_list() == build(reference_snapshot, "cases")[0].to_list()
    notebooks = junobench.load(exported, "notebooks", library="torch", root_cause="API misuse")
    expected = [r for r in builder_rows(reference_snapshot, "notebooks")
                if r["library"] == "torch" and r["root_cause"] == "API misuse"]
    assert notebooks.to_list() == expected and len(expected) > 0
    assert notebooks.features == FEATURES["notebooks"]
    assert "original notebook not in snapshot for 111 case(s)" in caplog.text
    with pytest.raises(junobench.JunoBenchError, match="did you mean 'API misuse'"):
        junobench.load(exported, root_cause="API missuse")


def test_later_loads_memory_map_an_arrow_copy_made_once(exported, reference_snapshot, tmp_path):
    cache = tmp_path / "cache"
    first = junobench.load(exported, "cases", cache_dir=cache)
    copies = sorted((cache / "exports").rglob("*.arrow"))
    assert [c.name.split("-")[0] for c in copies] == ["cases"]
    made = copies[0].stat().st_mtime_ns
    again = junobench.load(exported, "cases", cache_dir=cache)
    assert [f["filename"] for f in again.cache_files] == [str(copies[0])]  # memory-mapped
    assert copies[0].stat().st_mtime_ns == made  # not rewritten
    assert again.to_list() == first.to_list() == build(reference_snapshot, "cases")[0].to_list()
    torch = junobench.load(exported, "cases", cache_dir=cache, library="torch")
    assert torch.to_list() == [r for r in first.to_list() if r["library"] == "torch"]
    assert torch.features == FEATURES["cases"]


def test_a_new_export_replaces_its_arrow_copy(snapshot_copy, tmp_path):
    out, cache = tmp_path / "E", tmp_path / "cache"
    export(snapshot_copy, out)
    before = junobench.load(out, cache_dir=cache, library="torch", root_cause="data confusion")
    desc = read_table(snapshot_copy / "benchmark_desc.xlsx")
    rows = desc.records()
    for row in rows:
        if row["nb_name"] == "torch_2":
            row["label_root_cause"] = "data confusion"
    write_table(snapshot_copy / "benchmark_desc.xlsx", rows, desc.columns)
    export(snapshot_copy, out)
    after = junobench.load(out, cache_dir=cache, library="torch", root_cause="data confusion")
    assert sorted(after["case_id"]) == sorted([*before["case_id"], "torch_2"])
    assert len(list((cache / "exports").rglob("cases-*.arrow"))) == 1


def test_without_a_writable_cache_the_parquet_is_read(exported, tmp_path):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    dataset = junobench.load(exported, "notebooks", cache_dir=blocked, library="torch")
    assert len(dataset) > 0 and set(dataset["library"]) == {"torch"}
    assert dataset.cache_files == []


def test_a_damaged_cache_copy_is_replaced(exported, tmp_path, caplog):
    cache = tmp_path / "cache"
    expected = junobench.load(exported, "notebooks", cache_dir=cache).to_list()
    (copy,) = (cache / "exports").rglob("notebooks-*.arrow")
    whole = copy.read_bytes()
    first_batch_ends = whole.index(b"\xff\xff\xff\xff", 300)  # the second message's marker
    for damaged in (whole[:300], whole[:first_batch_ends]):  # cut inside, or between batches
        copy.write_bytes(damaged)
        assert junobench.load(exported, "notebooks", cache_dir=cache).to_list() == expected
        assert "damaged cache file removed" in caplog.text and str(copy) in caplog.text
        again = junobench.load(exported, "notebooks", cache_dir=cache)  # made anew
        assert again.to_list() == expected
        assert [f["filename"] for f in again.cache_files] == [str(copy)]


def test_a_damaged_parquet_is_named_and_not_cached(exported, tmp_path):
    damaged = tmp_path / "E"
    shutil.copytree(exported, damaged)
    (damaged / CASES).write_bytes((damaged / CASES).read_bytes()[:500])
    with pytest.raises(junobench.JunoBenchError, match="does not match the export's manifest") as error:
        junobench.load(damaged, cache_dir=tmp_path / "cache")
    assert str(damaged / CASES) in str(error.value) and "junobench check" in str(error.value)
    assert not list((tmp_path / "cache").rglob("*.arrow"))


def test_ls_lists_an_export(exported, capsys):
    code, out, _ = run_cli(capsys, "ls", "--source", str(exported), "--library", "torch", "--format", "json")
    assert code == 0
    assert len(json.loads(out)) == 15
