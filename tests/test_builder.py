"""The builder: the Arrow-batch writing path and parallel preparation give exactly the
records of datasets' stock per-example path; the two datasets internals it relies on."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import pytest

from junobench import vocab
from junobench.data.build import build
from junobench.data.records import JunoBench
from junobench.data.schema import LABEL_FIELDS
from junobench.data.snapshot import fingerprint, sample_path


def notebook_rows(case: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The two ``notebooks`` records of a ``cases`` record, row by row (the reference the
    builder's column-wise table is held to)."""
    labels = {key: case[key] for key in LABEL_FIELDS}
    for version in vocab.EVALUATED_VERSIONS:
        runs = case["execution_order"][version]
        crash = version == "reproduced"
        yield {
            "instance": vocab.instance_id(case["case_id"], version),
            "case_id": case["case_id"],
            "version": version,
            "crash": crash,
            **labels,
            "exception": case["exception"] if crash else None,
            "executed_cells": runs[:-1],
            "target_cell": runs[-1],
            "diagnosis": case["diagnosis"] if crash else None,
        }


class StockJunoBench(datasets.GeneratorBasedBuilder, JunoBench):
    """The same configs and splits, but the records made one by one as dicts (folders
    parsed in this process, notebooks rows derived row-wise) and written example by
    example by datasets' GeneratorBasedBuilder."""

    def _generate_examples(self, **kwargs: Any) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.config.name == "cases":
            records = (record for part in self._case_parts(**kwargs) for record in part)
            yield from enumerate(records)
            return
        key = 0
        for _, cases in self._case_batches(**kwargs):
            for case in cases.to_pylist():
                for row in notebook_rows(case):
                    yield key, row
                    key += 1


def prepare(cls: type[JunoBench], root, config: str, cache_dir, num_proc: int | None = None):
    builder = cls(config_name=config, snapshot=str(root), fingerprint=fingerprint(root),
                  cache_dir=str(cache_dir), dataset_name="junobench")
    builder.download_and_prepare(num_proc=num_proc)
    return builder.as_dataset(split="test").data.table


@pytest.mark.parametrize("config", ["cases", "notebooks"])
def test_arrow_batches_equal_the_stock_example_path(reference_snapshot, tmp_path, config):
    ours = prepare(JunoBench, reference_snapshot, config, tmp_path / "ours")
    stock = prepare(StockJunoBench, reference_snapshot, config, tmp_path / "stock")
    assert ours.schema == stock.schema
    assert ours.num_rows == stock.num_rows > 0
    assert ours.equals(stock)


def test_parallel_preparation_gives_the_same_records(reference_snapshot, tmp_path):
    single_cases, _ = build(reference_snapshot, "cases", cache_dir=tmp_path / "one", num_proc=1)
    single = build(reference_snapshot, "notebooks", cache_dir=tmp_path / "one", num_proc=1)[0]
    parallel = build(reference_snapshot, "notebooks", cache_dir=tmp_path / "two", num_proc=2)[0]
    parallel_cases = build(reference_snapshot, "cases", cache_dir=tmp_path / "two", num_proc=2)[0]
    assert parallel.data.table.equals(single.data.table)
    assert parallel_cases.data.table.equals(single_cases.data.table)
    assert parallel_cases["case_id"] == single_cases["case_id"]  # table order kept


def test_datasets_leaves_the_builder_module_alone(tmp_path):
    """datasets rewrites a builder's module for streaming unless the module says it is done
    (``_patched_for_streaming``, records.py): our builder's ``Path`` and ``open`` stay the
    standard ones and SciPy is not imported, while a module without the flag is rewritten.
    Fails if datasets renames or drops the flag."""
    (tmp_path / "plain_builder.py").write_text(textwrap.dedent("""
        from pathlib import Path
        import datasets

        class Plain(datasets.ArrowBasedBuilder):
            def _info(self):
                return datasets.DatasetInfo()
    """))
    script = textwrap.dedent("""
        import pathlib, sys
        from junobench.data import records

        sample, cache = sys.argv[1:]
        records.JunoBench(config_name="cases", snapshot=sample, fingerprint="x", cache_dir=cache)
        assert records.Path is pathlib.Path, "datasets rewrote Path in the records module"
        assert "open" not in vars(records), "datasets rewrote open in the records module"
        assert "scipy" not in sys.modules, "building imported SciPy"

        import plain_builder
        plain_builder.Plain(cache_dir=cache)
        assert plain_builder.Path is not pathlib.Path, "datasets no longer rewrites builder modules"
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script, str(sample_path()), str(tmp_path / "cache")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_prepared_folder_is_where_datasets_moves_from(tmp_path):
    """``_output_dir`` (records.py): the folder datasets prepares and then moves to the
    cache folder: the build report written there arrives beside the records. Fails if
    datasets drops or renames the attribute."""
    from junobench.data.records import read_report
    from junobench.data.snapshot import sample_path

    builder = JunoBench(config_name="cases", snapshot=str(sample_path()), fingerprint="x",
                        cache_dir=str(tmp_path / "cache"))
    assert isinstance(builder._output_dir, str)
    assert builder.cache_root == str(tmp_path / "cache")
    builder.download_and_prepare()
    assert builder._output_dir == builder.cache_dir
    assert read_report(builder.cache_dir)["skipped"] == []


def test_parallel_parsing_forks_its_workers_before_the_caller_starts_threads(tmp_path):
    # records start the tables' reading thread right after asking for the shards: the
    # workers must exist by then (a fork beside a running thread can inherit a held lock)
    import multiprocessing
    import os

    from junobench.data.preparation import folder_shards
    from junobench.data.records import FOLDER_SCHEMA

    root = str(sample_path())
    ids = sorted(name for name in os.listdir(os.path.join(root, "benchmark")))
    before = set(multiprocessing.active_children())
    shards = folder_shards(root, [ids[:3], ids[3:]], workers=2, schema=FOLDER_SCHEMA, spool=str(tmp_path))
    assert len(set(multiprocessing.active_children()) - before) == 2
    parsed = list(shards)
    assert [row["case_id"] for shard in parsed for row in shard.records.to_pylist()] == ids


def _spools(cache) -> list[str]:
    return sorted(p.name for p in cache.glob("junobench-spool-*"))


def test_a_first_preparation_reads_each_file_once_for_its_records_and_its_key(
        reference_snapshot, tmp_path, monkeypatch):
    """The first preparation of a snapshot folder into a cache starts its worker processes
    at once; they parse the case folders and digest their files from the same reads, and
    the cache key made of their digests is the one a walk of the snapshot gives. A later
    preparation, with records noted, computes the key first and starts no process."""
    import multiprocessing

    from junobench.data import build as build_module
    from junobench.data import digests as digests_module
    from junobench.data import preparation

    keys: list[tuple[str, int]] = []  # who computed a key, and how many folders workers gave
    pools: list[object] = []

    def watched(module):
        def key(root, **given):
            keys.append((module, len(given.get("folders") or {})))
            return fingerprint(root, **given)
        return key

    class CountedShards(preparation.ParallelShards):
        def __init__(self, *args):
            pools.append(self)
            super().__init__(*args)

    monkeypatch.setattr(build_module, "fingerprint", watched("build"))
    monkeypatch.setattr(preparation, "fingerprint", watched("workers"))
    monkeypatch.setattr(preparation, "ParallelShards", CountedShards)
    single = build(reference_snapshot, "cases", cache_dir=tmp_path / "one", num_proc=1)[0]
    early = build(reference_snapshot, "cases", cache_dir=tmp_path / "two", num_proc=2)[0]
    assert keys == [("build", 0), ("workers", 111)]
    assert len(pools) == 1  # the builder used the processes started before the key
    assert early.data.table.equals(single.data.table)
    # the same key: the records lie at the same place in each cache
    assert Path(early.cache_files[0]["filename"]).relative_to(tmp_path / "two") == \
        Path(single.cache_files[0]["filename"]).relative_to(tmp_path / "one")
    again = build(reference_snapshot, "cases", cache_dir=tmp_path / "two", num_proc=2)[0]
    assert keys[2:] == [("build", 0)] and len(pools) == 1
    assert again.data.table.equals(single.data.table)
    assert multiprocessing.active_children() == []
    assert _spools(tmp_path / "two") == []
    # the workers' digests went into the memo: a walk of the snapshot reads no file now
    monkeypatch.setattr(digests_module, "_read_digest", lambda path: pytest.fail(f"read {path}"))
    assert fingerprint(reference_snapshot) == fingerprint(reference_snapshot, folders={})


def test_the_workers_fingerprint_entries_are_the_walk_s(tmp_path, monkeypatch):
    """Case folders as workers digest them (files, data folders, links in and out, a FIFO)
    give the entries of a walk of the snapshot, in its order."""
    import os

    from junobench.data.checkout import checkout
    from junobench.data.digests import ContentDigests, ReadDigests
    from junobench.data.snapshot import folder_entries

    snap = checkout(["pandas_1", "pandas_2", "numpy_1"], "sample", tmp_path / "snap")
    case = snap / "benchmark" / "pandas_1"
    (case / "data" / "deeper").mkdir()
    (case / "data" / "deeper" / "b.txt").write_text("b")
    (case / "a.txt").write_text("a")
    os.symlink("pandas_1.ipynb", case / "inside.ipynb")
    os.symlink("/etc/hostname", case / "outside.txt")
    os.mkfifo(case / "fifo")
    root = str(snap.resolve())
    for name in ("pandas_1", "pandas_2", "numpy_1"):
        relative = f"benchmark/{name}"
        with ContentDigests(under=root) as memo:
            walked = folder_entries(root, relative, memo)
        reader = ReadDigests(keep=lambda path, size: path.endswith(".ipynb"))
        assert folder_entries(root, relative, reader) == walked, name
        assert {os.path.basename(p) for p in reader.kept} >= {f"{name}_reproduced.ipynb"}
    folders = {f"benchmark/{n}": folder_entries(root, f"benchmark/{n}", ReadDigests(lambda p, s: False))
               for n in ("pandas_1", "numpy_1")}
    expected = fingerprint(snap)
    from junobench.data import digests as digests_module

    monkeypatch.setenv("JUNOBENCH_CACHE", str(tmp_path / "empty-memo"))
    read: list[str] = []
    real_read = digests_module._read_digest
    monkeypatch.setattr(digests_module, "_read_digest", lambda path: read.append(path) or real_read(path))
    assert fingerprint(snap, folders=folders) == expected
    assert read and not [p for p in read if "/pandas_1/" in p or "/numpy_1/" in p]  # not read again


def test_an_early_parse_stops_when_the_preparation_does_not_need_it_or_fails(
        reference_snapshot, tmp_path, monkeypatch):
    import multiprocessing

    from junobench.data import build as build_module
    from junobench.data import preparation
    from junobench.data.prepared import index_path
    from junobench.data.records import CONFIGS

    cache = tmp_path / "cache"
    first = build(reference_snapshot, "cases", cache_dir=cache, num_proc=2)[0]
    for config in CONFIGS:  # records in the cache, but not noted: the workers start for nothing
        index_path(reference_snapshot, config, cache).unlink(missing_ok=True)
    again = build(reference_snapshot, "cases", cache_dir=cache, num_proc=2)[0]
    assert again.data.table.equals(first.data.table)
    assert multiprocessing.active_children() == [] and _spools(cache) == []

    def interrupted(root, **given):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "fingerprint", interrupted)
    monkeypatch.setattr(preparation, "fingerprint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(reference_snapshot, "cases", cache_dir=tmp_path / "other", num_proc=2)
    assert multiprocessing.active_children() == [] and _spools(tmp_path / "other") == []


def test_records_prepared_by_another_release_are_not_reused(tmp_path, monkeypatch):
    """Records are cached under the snapshot's content and the junobench release that
    prepared them: an upgrade whose checks differ never serves the old records or report."""
    from junobench.data import build as build_module

    cache = tmp_path / "cache"
    files = lambda dataset: [f["filename"] for f in dataset.cache_files]  # noqa: E731
    first = build(sample_path(), "cases", cache_dir=cache)[0]
    assert files(build(sample_path(), "cases", cache_dir=cache)[0]) == files(first)  # reused
    monkeypatch.setattr(build_module, "junobench_version", lambda: "99.0.0")
    upgraded = build(sample_path(), "cases", cache_dir=cache)[0]
    assert files(upgraded) != files(first)
    assert upgraded.data.table.equals(first.data.table)


def test_a_killed_preparation_leaves_no_spool_behind_for_long(reference_snapshot, tmp_path):
    """A preparation killed while its workers spool leaves their folder in the cache: the
    next first preparation removes it once its process is gone, and nothing else."""
    import os
    import subprocess

    cache = tmp_path / "cache"
    cache.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = cache / f"junobench-spool-{gone.pid}-abc"
    orphan.mkdir()
    (orphan / "shard-00000.arrow").write_bytes(b"x" * 100)
    alive = cache / f"junobench-spool-{os.getppid()}-def"  # a running process's: kept
    alive.mkdir()
    other = cache / "junobench-spool-notes"  # not a spool of ours: kept
    other.mkdir()
    build(reference_snapshot, "cases", cache_dir=cache, num_proc=2)
    assert not orphan.exists() and alive.is_dir() and other.is_dir()
