"""Containment on the session's Ray cluster: a cancelled sandboxed run leaves no process
(the local run and the rest: tests/test_containment.py)."""

from __future__ import annotations

import pytest
from test_containment import check_cancelled_run  # tests/ is on sys.path under pytest

from junobench.envs.sandbox import bwrap_problem

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")]


def test_cancelling_a_sandboxed_run_on_ray_leaves_no_process(ray_cluster, tmp_path):
    check_cancelled_run("ray", tmp_path)
