"""The bundled sample: coverage, layout, metadata, and that its outputs come from runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from junobench import vocab
from junobench.data import layout
from junobench.data.metadata import read_metadata
from junobench.data.notebook import execution_order, find_target, read_notebook
from junobench.data.snapshot import resolve, sample_path
from junobench.data.tables import DESC_COLUMNS, read_desc, read_diagnoses, read_table

REPO = Path(__file__).resolve().parent.parent
SAMPLE = sample_path()


@pytest.fixture(scope="module")
def rows():
    rows, problems = read_desc(SAMPLE)
    assert problems == []
    return {row.case_id: row for row in rows}


def test_resolves_and_lists_at_least_eight_cases(rows):
    assert resolve("sample") == SAMPLE
    assert len(rows) >= 8
    assert sorted(p.name for p in layout.benchmark_dir(SAMPLE).iterdir()) == sorted(rows)


def test_coverage_of_libraries_and_root_causes(rows):
    libraries = {vocab.library_of(c) for c in rows}
    assert {"NBspecific", "pandas", "numpy", "sklearn", "matplotlib", "seaborn"} <= libraries
    assert libraries & {"statsmodels", "lightgbm", "tensorflow", "torch", "torchvision"}
    causes = {row.fields["root_cause"] for row in rows.values()}
    assert causes <= set(vocab.ROOT_CAUSES) and len(causes) >= 4
    for row in rows.values():
        assert row.fields["crash_type"] in vocab.CRASH_TYPES
        assert row.fields["pipeline_stage"] in vocab.PIPELINE_STAGES


def test_notebook_specific_cases(rows):
    crashes = {}
    for case_id in rows:
        if vocab.library_of(case_id) == vocab.NOTEBOOK_SPECIFIC:
            notebook, _ = read_notebook(layout.notebook_path(SAMPLE, case_id, "reproduced"))
            target = notebook.code_cells[notebook.target_index]
            crashes[target.error.ename] = (notebook, target)
    # An undefined variable: the cell defining it did not run.
    notebook, target = crashes["NameError"]
    order = [s.code_cell_index for s in execution_order(notebook.code_cells, target.index)]
    assert order != list(range(target.index + 1))
    # A [reexecute] cell dropping a column: it ran once, and crashes on its second run.
    notebook, target = crashes["KeyError"]
    assert target.reexecute and "drop" in target.source
    order = execution_order(notebook.code_cells, target.index)
    assert [s.code_cell_index for s in order][-2:] == [target.index] * 2
    assert order[-2].execution_count is None


def test_every_case_has_three_notebooks_a_crash_and_a_clean_fix(rows):
    for case_id in rows:
        versions = {v: read_notebook(layout.notebook_path(SAMPLE, case_id, v))[0] for v in vocab.VERSIONS}
        reproduced, fixed, original = versions["reproduced"], versions["fixed"], versions["original"]
        target = reproduced.target_index
        assert target is not None, case_id
        assert original.target_index == target, case_id
        assert fixed.target_index is None, case_id  # no error output anywhere
        assert fixed.code_cells[target].execution_count is not None, case_id
        for notebook in versions.values():
            cells = json.loads(notebook.text)["cells"]
            assert any(c["cell_type"] == "markdown" for c in cells), case_id
            for cell in notebook.code_cells:  # cells that did not run have no output
                raw = [c for c in cells if c["cell_type"] == "code"][cell.index]
                if cell.execution_count is None:
                    assert raw["outputs"] == [], (case_id, cell.index)
        assert "../input/" in "".join(c.source for c in original.code_cells), case_id


def test_tables_have_the_published_columns_and_diagnoses(rows, reference_dir):
    desc = read_table(SAMPLE / layout.DESC_TABLE)
    published = read_table(reference_dir / "junobench-snapshot" / layout.DESC_TABLE).columns
    assert set(published) <= set(desc.columns)
    assert {"source", "Dataset_note"} <= set(desc.columns)
    assert set(DESC_COLUMNS) <= set(desc.columns)
    labels = read_table(reference_dir / "benchmark_labels.xlsx").columns
    assert set(desc.columns) <= set(labels)
    diagnosis = read_table(SAMPLE / layout.DIAGNOSIS_TABLE)
    reference = read_table(reference_dir / "junobench-snapshot" / layout.DIAGNOSIS_TABLE)
    assert diagnosis.columns == reference.columns
    diagnoses = read_diagnoses(SAMPLE)
    for case_id, row in rows.items():
        assert diagnoses.get(f"{case_id}_reproduced"), case_id
        notebook, _ = read_notebook(layout.notebook_path(SAMPLE, case_id, "reproduced"))
        error = notebook.code_cells[notebook.target_index].error
        assert row.fields["ename"] == error.ename.lower()
        assert row.fields["evalue"] == error.evalue
    detection = {r["instance"]: r["detection"] for r in diagnosis.records()}
    assert len(detection) == 2 * len(rows)
    assert all(detection[f"{c}_reproduced"] is True and detection[f"{c}_fixed"] is False for c in rows)


def test_datasets_have_metadata_licences_and_files(rows):
    kinds: set[str] = set()
    for case_id, row in rows.items():
        files = layout.metadata_files(SAMPLE, case_id)
        assert files, case_id
        titles = {d["title"] for d in row.datasets}
        for path in files:
            meta = read_metadata(path, case=case_id)
            assert meta["license"] == "CC0: Public Domain"
            assert meta["title"] in titles
            for name in meta["files"]:
                assert (layout.data_dir(SAMPLE, case_id) / name).is_file()
            kinds |= {m["kind"] for m in meta["modifications"]}
        assert row.datasets and all(d["license"] for d in row.datasets)
    assert {"downsampled", "synthetic"} <= kinds


def test_sample_is_small():
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 2 * 1024 * 1024


def test_sample_loads_as_records(tmp_path):
    import junobench

    cases = junobench.load("sample", cache_dir=tmp_path)
    assert len(cases) >= 8
    for case in cases:
        assert case["original"] and case["reproduced"] and case["fixed"]
        assert case["diagnosis"] and case["datasets"] and case["crash_line"]


@pytest.mark.kernel
@pytest.mark.slow
def test_rebuilding_a_case_reproduces_its_notebooks(tmp_path, sample_env, monkeypatch):
    """build_sample.py runs the notebooks: a rebuild gives the same cells, counts and crash
    (NBspecific_2: its crashing cell runs twice, the build's one irregular execution order)."""
    pytest.importorskip("nbclient")
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import build_sample
    finally:
        sys.path.remove(str(REPO / "scripts"))
    from junobench.envs.create import create_environment, selection_key

    def reuse_only(dest, selection, **options):
        """The build's environment is the suite's sample environment: reused, never remade."""
        assert selection_key(selection, sample_env.manifest["python"]["used"]) == sample_env.manifest["key"]
        return create_environment(dest, selection, **options)

    monkeypatch.setattr(build_sample, "create_environment", reuse_only)
    out = build_sample.build(tmp_path / "rebuilt", ["NBspecific_2"], jobs=2, env_dir=sample_env.path)
    for case_id in ("NBspecific_2",):
        for version in vocab.VERSIONS:
            new = json.loads(layout.notebook_path(out, case_id, version).read_text())
            old = json.loads(layout.notebook_path(SAMPLE, case_id, version).read_text())
            assert shape(new) == shape(old), (case_id, version)
        new_nb, _ = read_notebook(layout.notebook_path(out, case_id, "reproduced"))
        old_nb, _ = read_notebook(layout.notebook_path(SAMPLE, case_id, "reproduced"))
        assert find_target(new_nb.code_cells) == find_target(old_nb.code_cells)
        t = find_target(new_nb.code_cells)
        assert new_nb.code_cells[t].error.ename == old_nb.code_cells[t].error.ename
        assert new_nb.code_cells[t].error.evalue == old_nb.code_cells[t].error.evalue


def shape(notebook: dict) -> list:
    """What must not change between builds: sources, counts and kinds of output."""
    return [(c["cell_type"], "".join(c["source"]), c.get("execution_count"),
             [o["output_type"] for o in c.get("outputs", [])]) for c in notebook["cells"]]
