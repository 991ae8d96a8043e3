"""``junobench stats``: the published distributions, filters as in ``ls``, plots."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections import Counter

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest

from junobench.browse import ls
from junobench.errors import JunoBenchError
from junobench.stats import DIMENSIONS, NOT_RECORDED, compute, stats
from junobench.vocab import LIBRARY_LABELS

# Facts of the JunoBench paper (Figure 2, section 3), from ../shared/reference/README.md.
PUBLISHED = {
    "library": {"tensorflow": 15, "torch": 15, "sklearn": 15, "numpy": 15, "pandas": 15,
                "seaborn": 6, "matplotlib": 6, "statsmodels": 2, "torchvision": 1,
                "lightgbm": 1, "NBspecific": 20},
    "root_cause": {"API misuse": 45, "data confusion": 25, "NB specific": 20,
                   "implementation error": 18, "ML model confusion": 2, "library cause": 1},
    "pipeline_stage": {"training": 31, "data preparation": 30, "evaluation/prediction": 21,
                       "data visualization": 20, "model construction": 9},
    "crash_type": {"invalid argument": 21, "tensor shape mismatch": 16, "key error": 11,
                   "value error": 11, "variable not found": 10, "index error": 8,
                   "attribute error": 8, "data value violation": 7, "unsupported broadcast": 5,
                   "type error": 4, "module not found": 3, "runtime error": 3,
                   "feature name mismatch": 2, "io error": 1, "model initialization error": 1},
}



def test_json_gives_the_published_counts_of_the_four_dimensions(reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "stats", "--source", str(reference_snapshot), "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["cases"] == 111
    for dim in DIMENSIONS:
        assert result[dim] == PUBLISHED[dim], dim
    # most frequent first, ties in the published order
    assert list(result["crash_type"]) == list(PUBLISHED["crash_type"])
    # the reference table has no source / Dataset_note columns: those stats are left out
    assert "source" not in result and "dataset_note" not in result and "modification" not in result
    assert sum(result["exception"].values()) == 111
    assert result["exception"]["ValueError"] == 36
    for dim in ("root_cause", "pipeline_stage"):
        table = result[f"{dim}_by_library"]
        assert {v: sum(libs.values()) for v, libs in table.items()} == PUBLISHED[dim]
        per_library = Counter()
        for libs in table.values():
            per_library.update(libs)
        assert per_library == PUBLISHED["library"]
    assert result["root_cause_by_library"]["NB specific"] == {"NBspecific": 20}
    # licences: distinct input datasets; the table's "nodata" placeholder is no dataset
    assert "nodata" not in result["license"]
    assert result["license"]["CC0: Public Domain"] == 19


def test_source_split_and_modifications_appear_when_the_table_has_them(labelled_snapshot):
    result = stats(labelled_snapshot).to_dict()
    assert result["source"] == {"labeled in empirical study": 74, "newly sampled": 37}
    # Dataset_note: "datasets downsampled" 22, "… ; downsampled" 3, "dataset1 downsampled" 1
    assert result["modification"] == {"downsampled": 26, "synthetic": 4}
    assert result["dataset_note"]["datasets downsampled"] == 22
    assert result["dataset_note"]["downloaded within notebook"] == 5
    for dim in DIMENSIONS:
        assert result[dim] == PUBLISHED[dim]


def test_sample_modifications_come_from_the_dataset_metadata(capsys):
    code, out, _ = run_cli(capsys, "stats", "--source", "sample", "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["cases"] == 10
    assert result["modification"] == {"synthetic": 10, "downsampled": 1}
    assert result["license"] == {"CC0: Public Domain": 10}
    assert "source" not in result  # the sample's source column is empty


FILTER_SETS = [
    {"library": "torch"},
    {"library": ["pandas", "numpy"], "root_cause": "data confusion"},
    {"root_cause": "API misuse", "pipeline_stage": ["training", "evaluation/prediction"]},
    {"crash_type": "key error"},
    {"library": "tensorflow/keras"},  # the display name is accepted as by ls
]


@pytest.mark.parametrize("filters", FILTER_SETS, ids=lambda f: ",".join(f))
def test_filters_select_the_same_cases_as_ls(reference_snapshot, filters):
    listed = ls(reference_snapshot, **filters)
    assert listed  # every filter set selects something
    result = stats(reference_snapshot, **filters)
    assert result.cases == len(listed)
    for dim in DIMENSIONS:
        assert result.counts[dim] == dict(Counter(r[dim] for r in listed)), dim
    assert result.counts["exception"] == dict(Counter(r["exception"] for r in listed))


def test_cli_filters_are_the_options_of_ls(reference_snapshot, capsys):
    options = ["--source", str(reference_snapshot), "--library", "pandas", "--library", "numpy",
               "--root-cause", "data confusion", "--stage", "data preparation"]
    code, out, _ = run_cli(capsys, "ls", *options, "--format", "json")
    assert code == 0
    listed = json.loads(out)
    code, out, _ = run_cli(capsys, "stats", *options, "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["cases"] == len(listed) > 0
    assert result["library"] == dict(Counter(r["library"] for r in listed))
    assert result["root_cause"] == {"data confusion": len(listed)}


def test_bad_filter_value_fails_as_in_ls(reference_snapshot, capsys):
    argv = ["--source", str(reference_snapshot), "--root-cause", "API missuse"]
    ls_code, _, ls_err = run_cli(capsys, "ls", *argv)
    code, out, err = run_cli(capsys, "stats", *argv)
    assert code == ls_code == 1
    assert out == ""
    assert err.strip().splitlines()[-1] == ls_err.strip().splitlines()[-1]
    assert "did you mean 'API misuse'" in err
    assert "Traceback" not in err


def test_csv_and_table_formats(reference_snapshot, capsys):
    code, out, _ = run_cli(capsys, "stats", "--source", str(reference_snapshot), "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["statistic", "value", "library", "count"]
    root = {r["value"]: int(r["count"]) for r in rows if r["statistic"] == "root_cause"}
    assert root == PUBLISHED["root_cause"]
    cross = [r for r in rows if r["statistic"] == "pipeline_stage_by_library"]
    assert sum(int(r["count"]) for r in cross) == 111
    assert {"statistic": "pipeline_stage_by_library", "value": "data preparation",
            "library": "pandas", "count": "11"} in cross

    code, out, _ = run_cli(capsys, "stats", "--source", str(reference_snapshot))
    assert code == 0
    assert out.startswith("111 cases\n")
    assert re.search(r"^API misuse\s+45\s+40\.5%$", out, re.M)
    assert "Root cause by library" in out and "ML pipeline stage by library" in out


def test_plot_writes_png_and_svg_per_dimension_with_every_library(reference_snapshot, tmp_path, capsys):
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "stats", "--source", str(reference_snapshot), "--plot", str(out_dir))
    assert code == 0 and out == ""  # the files written are listed on stderr
    expected = {f"{dim}.{fmt}" for dim in DIMENSIONS for fmt in ("png", "svg")}
    assert {p.name for p in out_dir.iterdir()} == expected
    written = [line.split(None, 1)[1] for line in err.splitlines() if line.startswith("wrote ")]
    assert sorted(written) == sorted(str(out_dir / name) for name in expected)
    for dim in DIMENSIONS:
        assert (out_dir / f"{dim}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for dim in ("root_cause", "pipeline_stage"):
        svg = (out_dir / f"{dim}.svg").read_text(encoding="utf-8")
        texts = set(re.findall(r"<!-- (.*?) -->", svg))  # matplotlib names each text drawn
        assert {LIBRARY_LABELS[lib] for lib in PUBLISHED["library"]} <= texts, dim
        assert set(PUBLISHED[dim]) <= texts
    svg = (out_dir / "crash_type.svg").read_text(encoding="utf-8")
    assert "model initialization error" in svg


def test_plot_refuses_a_directory_inside_the_snapshot(tmp_path, capsys):
    """``--plot`` into the snapshot wrote eight files there (export and checkout refuse it)."""
    import shutil

    from snapshot_files import tree_digest

    from junobench.data.snapshot import sample_path

    snapshot = tmp_path / "snap"
    shutil.copytree(sample_path(), snapshot)
    before = tree_digest(snapshot)
    for inside in (snapshot, snapshot / "benchmark" / "pandas_1" / "data", snapshot / "new" / "plots"):
        code, out, err = run_cli(capsys, "stats", "--source", str(snapshot), "--plot", str(inside))
        assert code == 1 and out == "" and "Traceback" not in err
        assert err == (f"error: {inside}: the plot directory is inside the snapshot (nothing in a snapshot "
                       "is ever modified: choose a directory outside it)\n")
    assert tree_digest(snapshot) == before and not (snapshot / "new").exists()


def test_plot_with_json_keeps_stdout_json(tmp_path, capsys):
    code, out, err = run_cli(capsys, "stats", "--source", "sample", "--format", "json",
                             "--plot", str(tmp_path / "p"))
    assert code == 0
    assert json.loads(out)["cases"] == 10
    assert err.count("wrote ") == 8


def test_segmented_chart_legend_lists_every_library_of_the_filtered_cases(reference_snapshot):
    from junobench.plots import plot_dimension

    result = stats(reference_snapshot, pipeline_stage="data visualization")
    fig = plot_dimension(result, "root_cause")
    legend = fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [LIBRARY_LABELS[lib] for lib in result.libraries()]
    assert set(result.libraries()) == {r["library"] for r in ls(reference_snapshot,
                                                              pipeline_stage="data visualization")}


def test_plots_draw_into_given_axes():
    from matplotlib.figure import Figure

    from junobench.plots import plot_dimension

    result = stats("sample")
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert plot_dimension(result, "library", ax=axes[0]) is fig
    assert plot_dimension(result, "pipeline_stage", ax=axes[1]) is fig
    assert len(axes[1].patches) > 0


def test_plot_without_matplotlib_is_one_clear_error(monkeypatch, tmp_path):
    from junobench.plots import save_plots

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(JunoBenchError, match="plotting needs matplotlib") as info:
        save_plots(compute([]), tmp_path / "p")
    assert "junobench[plot]" in str(info.value)


def test_unknown_statistic_to_plot():
    from junobench.plots import plot_dimension

    with pytest.raises(JunoBenchError, match="no statistic 'source'"):
        plot_dimension(compute([]), "source")


def case(case_id: str, **fields):
    base = {"case_id": case_id, "library": case_id.rsplit("_", 1)[0], "root_cause": "API misuse",
            "crash_type": "key error", "pipeline_stage": "training", "source": None,
            "dataset_note": None, "exception": "KeyError", "datasets": []}
    return base | fields


def dataset(title, license_, modifications=(), url=None):
    return {"name": None, "title": title, "url": url, "license": license_,
            "modifications": list(modifications), "files": []}


def test_compute_counts_nulls_licences_and_modifications():
    result = compute([
        case("torch_1", source="newly sampled", datasets=[dataset("A", "MIT"), dataset("B", None)]),
        case("torch_2", root_cause="data confusion", exception=None,
             datasets=[dataset("A", "MIT"), dataset("nodata", "nodata")], dataset_note="synthetic"),
        case("pandas_1", dataset_note="datasets downsampled; externel source",
             datasets=[dataset("C", "CC0", ["downsampled", "synthetic"])]),
    ])
    assert result.cases == 3
    assert result.counts["library"] == {"torch": 2, "pandas": 1}
    assert result.counts["source"] == {"newly sampled": 1, NOT_RECORDED: 2}
    assert result.counts["exception"] == {"KeyError": 2, NOT_RECORDED: 1}
    assert result.counts["license"] == {"CC0": 1, "MIT": 1, NOT_RECORDED: 1}  # A counted once
    # a case counts once per kind, from its metadata and its note
    assert result.counts["modification"] == {"downsampled": 1, "synthetic": 2}
    assert result.counts["dataset_note"] == {"datasets downsampled": 1, "externel source": 1, "synthetic": 1}
    assert result.by_library["root_cause"] == {"API misuse": {"torch": 1, "pandas": 1},
                                               "data confusion": {"torch": 1}}
    empty = compute([])
    assert empty.cases == 0 and empty.counts["library"] == {} and "source" not in empty.counts
