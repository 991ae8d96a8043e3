"""Snapshot sources: local directories, the Hub (through its seam), clear failures."""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path

import pytest

import junobench
from junobench.data.snapshot import HUB_DATA_PATTERNS, HUB_PATTERNS, fetch_case, fetch_hub, fingerprint, resolve
from junobench.errors import JunoBenchError


def test_local_directory_is_used_in_place(reference_snapshot):
    assert resolve(reference_snapshot) == reference_snapshot.resolve()
    assert resolve(str(reference_snapshot)) == reference_snapshot.resolve()


def test_missing_directory_and_file_are_clear_errors(tmp_path):
    with pytest.raises(JunoBenchError, match="no such snapshot directory"):
        resolve(tmp_path / "nope")
    with pytest.raises(JunoBenchError, match="no such snapshot directory"):
        resolve("./relative/missing/dir")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(JunoBenchError, match="must be a directory"):
        resolve(tmp_path / "file.txt")


class LocalHub:
    """Stands in for ``snapshot_download``: serves a repo from a local folder, honouring
    ``allow_patterns`` the way the Hub client does (fnmatch on repo paths)."""

    def __init__(self, repo: Path, store: Path) -> None:
        self.repo, self.store, self.calls = repo, store, []

    def __call__(self, *, repo_id, repo_type, revision, allow_patterns, **kwargs) -> str:
        self.calls.append({"repo_id": repo_id, "repo_type": repo_type, "revision": revision,
                           "allow_patterns": allow_patterns})
        target = self.store / repo_id.replace("/", "--") / (revision or "main")
        for path in self.repo.rglob("*"):
            relative = path.relative_to(self.repo).as_posix()
            if path.is_file() and any(fnmatch.fnmatch(relative, p) for p in allow_patterns):
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target / relative)
        return str(target)


@pytest.fixture
def repo_with_data(reference_snapshot, tmp_path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(reference_snapshot, repo)
    data = repo / "benchmark/pandas_1/data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "train.csv").write_text("a,b\n1,2\n")
    (data / "train.metadata.json").write_text(
        '{"title": "T", "url": null, "license": "CC0: Public Domain", "files": ["train.csv"],'
        ' "modifications": []}')
    return repo


def test_hub_repo_downloads_notebooks_and_tables_but_not_data(repo_with_data, tmp_path):
    hub = LocalHub(repo_with_data, tmp_path / "store")
    root = resolve("someone/junobench", revision="v1", download=hub)
    assert hub.calls == [{"repo_id": "someone/junobench", "repo_type": "dataset", "revision": "v1",
                          "allow_patterns": list(HUB_PATTERNS)}]
    assert (root / "benchmark_desc.xlsx").is_file()
    assert (root / "benchmark/pandas_1/pandas_1_reproduced.ipynb").is_file()
    assert (root / "benchmark/pandas_1/data/train.metadata.json").is_file()
    assert not (root / "benchmark/pandas_1/data/train.csv").exists()
    case = {c["case_id"]: c for c in junobench.load(root).to_list()}["pandas_1"]
    assert case["datasets"][0]["title"] == "T" and case["datasets"][0]["files"] == []

    with_data = resolve("someone/junobench", revision="v2", include_data=True, download=hub)
    assert hub.calls[-1]["allow_patterns"] == list(HUB_PATTERNS) + list(HUB_DATA_PATTERNS)
    assert (with_data / "benchmark/pandas_1/data/train.csv").is_file()
    case = {c["case_id"]: c for c in junobench.load(with_data).to_list()}["pandas_1"]
    assert case["datasets"][0]["files"] == ["train.csv"]


def test_one_case_is_fetched_alone(repo_with_data, tmp_path):
    # What a remote worker does: only that case's folder, data included.
    hub = LocalHub(repo_with_data, tmp_path / "store")
    folder = fetch_case("someone/junobench", "pandas_1", revision="v1", download=hub)
    assert hub.calls == [{"repo_id": "someone/junobench", "repo_type": "dataset", "revision": "v1",
                          "allow_patterns": ["benchmark/pandas_1/**"]}]
    assert folder.name == "pandas_1" and (folder / "data/train.csv").is_file()
    assert (folder / "pandas_1_reproduced.ipynb").is_file()
    assert sorted(p.name for p in folder.parent.iterdir()) == ["pandas_1"]
    with pytest.raises(JunoBenchError, match="not of the form"):
        fetch_case("someone/junobench", "*", download=hub)
    with pytest.raises(JunoBenchError, match="no case folder torch_999"):
        fetch_case("someone/junobench", "torch_999", download=hub)


def test_unreachable_hub_says_so_and_suggests_the_sample(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    with pytest.raises(JunoBenchError) as info:
        # the real client, pointed at a closed local port
        fetch_hub("someone/junobench", endpoint="http://127.0.0.1:9", cache_dir=tmp_path / "c")
    message = str(info.value)
    assert "unreachable" in message
    assert "--source sample" in message and "--source DIR" in message


def test_fingerprint_changes_with_any_file_and_not_otherwise(snapshot_copy):
    first = fingerprint(snapshot_copy)
    assert fingerprint(snapshot_copy) == first
    notebook = snapshot_copy / "benchmark/torch_1/torch_1_fixed.ipynb"
    notebook.write_text(notebook.read_text() + " ")
    second = fingerprint(snapshot_copy)
    assert second != first
    (snapshot_copy / "benchmark/torch_1/data").mkdir()
    (snapshot_copy / "benchmark/torch_1/data/x.csv").write_text("1")
    assert fingerprint(snapshot_copy) != second
