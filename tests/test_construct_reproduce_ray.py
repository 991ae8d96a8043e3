"""construct reproduce on the session's Ray cluster: the verdicts of the local run
(tests/test_construct_reproduce.py, whose candidates it uses)."""

from __future__ import annotations

import pytest
import test_construct_reproduce as local  # tests/ is on sys.path under pytest

from junobench.construct.reproduce import reproduce
from junobench.data.tables import read_table, write_table

pytest.importorskip("nbclient", reason="construct reproduce needs the run extra")
pytestmark = pytest.mark.kernel

candidates = local.candidates  # the local test's sampled table, notebooks and data (a fixture)


#: Rows whose verdicts depend on what travels to a Ray worker and how it runs there: the
#: /kaggle paths and the data (present, absent), a crashing cell run twice, another exception.
ON_RAY = ["absolute_paths.ipynb", "sklearn_1.ipynb", "NBspecific_2.ipynb", "other_exception.ipynb", "absent.ipynb"]


def test_reproduce_under_ray_gives_the_same_classification(candidates, ray_cluster, tmp_path):
    all_rows, notebooks, data = candidates
    table, out = tmp_path / "some.xlsx", tmp_path / "triaged.xlsx"
    write_table(table, [r for r in read_table(all_rows).records() if r["fname"] in ON_RAY],
                ["fname", "eid", "ename", "evalue"])
    result = reproduce(table, notebooks, out=out, data=data, executor="ray", timeout=60, progress=False)
    assert result.executor.startswith("ray")
    rows = {r["fname"]: r for r in read_table(out).records()}
    assert {name: row["reproduced"] for name, row in rows.items()} == {name: local.EXPECTED[name] for name in ON_RAY}
    assert "/kaggle paths" in rows["absolute_paths.ipynb"]["reproduced_detail"]
    assert "FileNotFoundError" in rows["sklearn_1.ipynb"]["reproduced_detail"]
    assert "recorded: attributeerror" in rows["other_exception.ipynb"]["reproduced_detail"]
    assert "so the crashing cell ran twice" in rows["NBspecific_2.ipynb"]["reproduced_detail"]
