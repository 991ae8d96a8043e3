"""The hostile notebooks of tests/test_hostile_probes.py on Ray: verify starts a Ray instance
of its own, as root (or the user running the tests) and as an unprivileged user; the same
verdicts, nothing leaked or left."""

from __future__ import annotations

import pytest
from test_hostile_probes import check_hostile_run  # tests/ is on sys.path under pytest

from junobench.envs.sandbox import bwrap_problem

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.ray,
              pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")]


@pytest.mark.parametrize("as_user", [False, True], ids=["as-root-or-self", "unprivileged"])
def test_a_hostile_notebook_on_ray_every_probe_fails_or_ends_in_its_verdict(as_user):
    check_hostile_run(as_user, "ray")
