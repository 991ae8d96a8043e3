"""The builder: the Arrow-batch writing path and parallel preparation give exactly the
records of datasets' stock per-example path."""

from __future__ import annotations

import datasets
import pytest

from junobench.data.build import build
from junobench.data.records import JunoBench
from junobench.data.snapshot import fingerprint


class StockJunoBench(JunoBench):
    """The same builder, written example by example by datasets' GeneratorBasedBuilder."""

    _prepare_split_single = datasets.GeneratorBasedBuilder._prepare_split_single


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
