"""Push an export with huggingface_hub's real client to a local Hub stand-in, and read it back.

The CLI runs in a fresh process with ``HF_ENDPOINT`` pointed at the stand-in
(tests/hub_server.py) and ``HF_HUB_DISABLE_XET=1`` (the client then speaks git-LFS, which
the stand-in serves), so the requests are the ones the client would send to the Hub.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import HubServer  # tests/ is on sys.path under pytest

from junobench.data.export import CARD, CROISSANT, MANIFEST, PARQUET, file_digest
from junobench.hub.write_export import export

TOKEN = "hf_junobenchTestToken1234567890"


@pytest.fixture(scope="module")
def exported(reference_snapshot, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("push") / "junobench-export"
    export(reference_snapshot, out)
    return out


@pytest.fixture
def hub():
    with HubServer(token=TOKEN) as server:
        yield server


def cli(hub: HubServer, tmp_path: Path, *argv: str, token: str | None = TOKEN) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update({"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf-home"),
                "HF_HUB_DISABLE_TELEMETRY": "1"})
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "junobench", *argv], env=env, capture_output=True,
                          text=True, timeout=600)


def export_files(directory: Path) -> list[str]:
    return sorted([*json.loads((directory / MANIFEST).read_text())["files"], MANIFEST])


def test_dry_run_lists_every_file_and_sends_nothing(exported, hub, tmp_path):
    run = cli(hub, tmp_path, "push", str(exported), "--repo-id", "someone/junobench", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert hub.requests == []
    listed = [line.split()[1] for line in run.stdout.splitlines() if line.strip().startswith("add ")]
    assert listed == export_files(exported)
    assert {CARD, CROISSANT, MANIFEST, *PARQUET.values(), "benchmark_desc.xlsx"} <= set(listed)
    assert "benchmark/torch_1/torch_1_reproduced.ipynb" in listed  # the runnable layout goes too
    sha = file_digest(exported / PARQUET["cases"])["sha256"]
    assert sha in run.stdout
    assert "nothing was sent" in run.stdout
    assert TOKEN not in run.stdout + run.stderr


def test_push_uploads_one_commit_then_ls_reads_it_back_from_the_hub(exported, hub, tmp_path):
    run = cli(hub, tmp_path, "push", str(exported), "--repo-id", "someone/junobench")
    assert run.returncode == 0, run.stderr
    assert TOKEN not in run.stdout + run.stderr
    assert all(auth == f"Bearer {TOKEN}" for auth in hub.auth_seen)  # the HF_TOKEN was used
    repo = hub.repos[("dataset", "someone/junobench")]
    assert repo.private is False
    assert len(repo.commits) == 2  # the repo's initial commit and the upload, one commit
    tree = hub.head_tree("dataset", "someone/junobench")
    for name in export_files(exported):
        assert tree[name] == (exported / name).read_bytes(), name
    posts = [path for method, path in hub.requests if method == "POST"]
    assert posts.count("/api/datasets/someone/junobench/commit/main") == 1
    assert ("PUT", f"/lfs-storage/{file_digest(exported / PARQUET['cases'])['sha256']}") in hub.requests

    # junobench ls --source someone/junobench: snapshot_download from the stand-in, then parquet
    hub.requests.clear()
    run = cli(hub, tmp_path, "ls", "--source", "someone/junobench", "--library", "torch",
              "--format", "json", token=None)
    assert run.returncode == 0, run.stderr
    cases = json.loads(run.stdout)
    assert len(cases) == 15 and {c["library"] for c in cases} == {"torch"}
    gets = {path for method, path in hub.requests if method == "GET"}
    assert "/api/datasets/someone/junobench/revision/main" in gets
    assert f"/lfs-storage/{file_digest(exported / PARQUET['cases'])['sha256']}" in gets  # via redirect

    # pushing the same export again changes nothing: the client skips unchanged files
    run = cli(hub, tmp_path, "push", str(exported), "--repo-id", "someone/junobench")
    assert run.returncode == 0, run.stderr
    assert len(repo.commits) == 2


def test_push_to_a_new_branch_of_a_private_repo(exported, hub, tmp_path):
    run = cli(hub, tmp_path, "push", str(exported), "--repo-id", "someone/private-bench",
              "--revision", "v2", "--private")
    assert run.returncode == 0, run.stderr
    repo = hub.repos[("dataset", "someone/private-bench")]
    assert repo.private is True
    assert CARD in hub.head_tree("dataset", "someone/private-bench", "v2")
    assert CARD not in hub.head_tree("dataset", "someone/private-bench", "main")


def test_push_without_a_token_or_of_a_damaged_export_fails_clearly(exported, hub, tmp_path):
    run = cli(hub, tmp_path, "push", str(exported), "--repo-id", "someone/junobench", token=None)
    assert run.returncode == 1
    assert "no Hugging Face token found" in run.stderr and "Traceback" not in run.stderr
    assert hub.requests == []

    damaged = tmp_path / "damaged"
    for name in export_files(exported):
        (damaged / name).parent.mkdir(parents=True, exist_ok=True)
        (damaged / name).write_bytes((exported / name).read_bytes())
    (damaged / PARQUET["notebooks"]).write_bytes(b"PAR1 not really")
    run = cli(hub, tmp_path, "push", str(damaged), "--repo-id", "someone/junobench")
    assert run.returncode == 1
    assert "the export fails its check" in run.stderr and PARQUET["notebooks"] in run.stderr
    assert hub.requests == []


def test_push_with_a_token_the_hub_refuses(exported, hub, tmp_path):
    run = cli(hub, tmp_path, "push", str(exported), "--repo-id", "someone/junobench",
              token="hf_wrongToken000000000000000000")
    assert run.returncode == 1
    assert "HTTP 401" in run.stderr and "hf_wrongToken" not in run.stdout + run.stderr
    assert ("dataset", "someone/junobench") not in hub.repos
