"""A cluster junobench joins: a head and a second node started with ``ray start`` (each with
a temporary folder of its own, as separate machines have), token authentication on.
What junobench's workers leave on any node is removed — by the run that made it, or by
the next run when its workers died unreachable — and a head lost mid-run is named as
such, the workers ending themselves on every node."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from processes import alive, gone, parent_of, processes_with
from snapshot_files import edit_cell
from test_ray_stops import HANG, one_line, states, until
from test_signals import _run, stop, wait_for

from junobench.data.checkout import checkout
from junobench.verify.ray_worker import PREFIX, _started

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytest.importorskip("ray", reason="the Ray executor needs the ray extra")
pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.ray, pytest.mark.timeout(300)]


@dataclass
class Cluster:
    address: str
    env: dict[str, str]  # what a driver on this machine needs to join it (its token)
    nodes: list[Path]  # each node's temporary folder, where its workers' folders lie
    base: Path

    def worker_folders(self) -> list[str]:
        return [p.name for node in self.nodes for p in node.glob(f"{PREFIX}*")]

    def gcs(self) -> int:
        (pid,) = processes_with(str(self.base / "head"), "gcs_server")
        return pid


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="jbjoin"))  # short: Ray's socket paths must fit
    token = base / "token"
    token.write_text(secrets.token_hex(32))
    with socket.create_server(("", 0)) as free:
        port = free.getsockname()[1]
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    nodes = []
    try:
        for name, where in (("head", ["--head", f"--port={port}", "--include-dashboard=false"]),
                            ("node", [f"--address=127.0.0.1:{port}"])):
            folder = base / name
            (folder / "tmp").mkdir(parents=True)
            env = {**os.environ, **auth, "RAY_TMPDIR": str(folder), "TMPDIR": str(folder / "tmp")}
            env.pop("RAY_ADDRESS", None)
            subprocess.run([str(Path(sys.executable).parent / "ray"), "start", *where, "--num-cpus=1",
                            "--disable-usage-stats"],
                           env=env, check=True, capture_output=True, timeout=120)
            nodes.append(folder / "tmp")
        yield Cluster(f"127.0.0.1:{port}", auth, nodes, base)
    finally:
        for pid in processes_with(str(base)):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)


def dead_worker_folder(node: Path) -> Path:
    """The folder a worker killed with its node's raylet left: a case copy and a kernel's key."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    folder = node / f"{PREFIX}{ended.pid}-{_started(os.getpid())}"
    (folder / "runtime").mkdir(parents=True)
    (folder / "runtime" / "kernel-1.json").write_text('{"key": "secret"}')
    return folder


def test_sigterm_on_a_joined_cluster_leaves_nothing_on_any_node_and_clears_earlier_leftovers(cluster, tmp_path):
    leftovers = [dead_worker_folder(node) for node in cluster.nodes]
    snap = checkout(["NBspecific_2", "pandas_1"], "sample", tmp_path / "snap")
    marker = tmp_path / "kernel.pid"
    edit_cell(snap, "pandas_1", "reproduced", 0, HANG.format(marker=str(marker)) + "import pandas as pd")
    report = tmp_path / "r.json"
    # one job: a worker on one node (it clears that node's leftovers as it starts); the
    # other node is cleared by a task the run sends there as it ends
    run = _run("verify", "--source", str(snap), "--executor", "ray", "--ray-address", cluster.address,
               "--jobs", "1", "--format", "json", "--report", str(report), "--no-progress", "--sandbox", "none",
               env={**cluster.env, "TMPDIR": str(tmp_path)})
    wait_for(lambda: marker.exists() and marker.read_text().strip(), run)
    kernel = int(marker.read_text())
    worker = parent_of(kernel)
    out, err, took = stop(run, signal.SIGTERM)
    assert run.returncode == 143 and took < 30, (took, err)
    one_line(err, "interrupted by SIGTERM (1 of 2 cases done")
    assert states(out) == {"NBspecific_2": "passed", "pandas_1": "interrupted"}
    assert json.loads(report.read_text()) == json.loads(out)
    assert gone(kernel) and gone(worker)
    assert not [p for p in leftovers if p.exists()], "a dead worker's folder was left"
    assert cluster.worker_folders() == []


def test_a_lost_head_is_named_and_every_node_is_left_clean(cluster, tmp_path):
    """Last in the module: it kills the cluster's head."""
    snap = checkout(["pandas_1", "pandas_2"], "sample", tmp_path / "snap")
    markers = {case: tmp_path / f"{case}.pid" for case in ("pandas_1", "pandas_2")}
    for case, marker in markers.items():
        edit_cell(snap, case, "reproduced", 0, HANG.format(marker=str(marker)) + "import pandas as pd")
    report = tmp_path / "r.json"
    run = _run("verify", "--source", str(snap), "--executor", "ray", "--ray-address", cluster.address,
               "--jobs", "2", "--format", "json", "--report", str(report), "--no-progress", "--sandbox", "none",
               env={**cluster.env, "TMPDIR": str(tmp_path)})
    wait_for(lambda: all(m.exists() and m.read_text().strip() for m in markers.values()), run)
    kernels = [int(m.read_text()) for m in markers.values()]
    workers = [parent_of(pid) for pid in kernels]
    assert len(cluster.worker_folders()) == 2  # a worker on each node
    os.kill(cluster.gcs(), signal.SIGKILL)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 1, err
    line = one_line(err, "error: the Ray cluster was lost: its head is gone (the GCS at")
    assert "refuses connections" in line and "the report holds every case" in line
    assert states(out) == {"pandas_1": "infrastructure error", "pandas_2": "infrastructure error"}
    assert json.loads(report.read_text()) == json.loads(out)
    # the workers ended themselves (Ray, headless, would end them a minute later), kernels first
    assert until(lambda: not any(alive(pid) for pid in kernels + workers))
    assert cluster.worker_folders() == []
    assert not list(tmp_path.glob("junobench-ray-driver-*"))
