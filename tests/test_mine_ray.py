"""mine on Ray: the same rows as mined locally, whether the notebooks are run on Ray
(``--rerun --executor ray``) or only mined there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_run import run_cli

from junobench.mining import mine
from junobench.mining.write import MANIFEST, PARQUET

pytest.importorskip("nbclient", reason="mine --execute needs the run extra")
pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(600)]


def table(out: Path, config: str) -> list[dict]:
    return pq.read_table(out / PARQUET[config]).to_pylist()


def test_mine_rerun_on_ray_gives_the_local_rows(ray_cluster, sample_env, tmp_path, capsys, request):
    remote = tmp_path / "ray"
    code, _, err = run_cli(capsys, "mine", "sample", "--rerun", "--env", str(sample_env.path), "--no-progress",
                           "--timeout", "120", "--out", str(remote), "--executor", "ray", "--retries", "1")
    assert code == 0, err
    assert "ran 30 notebooks (ray" in err
    # the same run on local kernels (tests/conftest.py), asked for only now: usually made
    # meanwhile by another worker (tests/test_mine_execute.py)
    local = request.getfixturevalue("sample_mined_rerun")
    for config in PARQUET:
        assert table(remote, config) == table(local, config), config


def test_mining_on_ray_writes_the_same_files_as_locally(ray_cluster, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from make_corpus import make_corpus

    make_corpus(tmp_path / "corpus", 70, seed=3)
    digests = {}
    for name, options in (("one", {"jobs": 1}), ("two", {"jobs": 2}), ("ray", {"executor": "ray", "jobs": 2})):
        result = mine([tmp_path / "corpus"], tmp_path / name, progress=False, **options)
        assert result.rows["notebooks"] == 70 and result.rows["figures"] > 100
        digests[name] = json.loads((tmp_path / name / MANIFEST).read_text())["files"]
    assert digests["one"] == digests["two"] == digests["ray"]
