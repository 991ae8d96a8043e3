"""junobench release against the local Hub stand-in: a first release, a dry run, a second
release with its changelog entry and card diff, tags, and what is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import HubServer  # tests/ is on sys.path under pytest
from snapshot_files import tree_digest
from test_diff import edit_rows

from junobench.data import layout
from junobench.data.export import CARD, CROISSANT
from junobench.data.snapshot import resolve
from junobench.errors import JunoBenchError
from junobench.hub.push import commit_export, plan
from junobench.hub.release import latest_entry, merge_changelog
from junobench.hub.write_export import export

TOKEN = "hf_junobenchReleaseToken123456789"
REPO = "someone/bench"


@pytest.fixture
def hub():
    with HubServer(token=TOKEN) as server:
        yield server


@pytest.fixture
def in_process(monkeypatch, tmp_path):
    """huggingface_hub in this process speaking to the stand-in (git-LFS, not Xet: the
    client reads that switch when it is imported, so its constant is set too)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    shutil.copytree(resolve("sample"), root)
    return root


def cli(hub: HubServer, tmp_path: Path, *argv: str, token: str | None = TOKEN) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update({"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf-home"),
                "HF_HUB_DISABLE_TELEMETRY": "1", "JUNOBENCH_CACHE": str(tmp_path / "cache")})
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "junobench", *argv], env=env, capture_output=True,
                          text=True, timeout=600)


def writes(hub: HubServer) -> list[tuple[str, str]]:
    return [(m, p) for m, p in hub.requests if m in ("POST", "PUT", "DELETE") and "validate-yaml" not in p]


@pytest.mark.slow
def test_two_releases_with_changelog_card_diff_and_tags(hub, snapshot, tmp_path, in_process) -> None:
    # a first release: the repo does not exist; the version is written into the snapshot
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0",
              "--date", "2026-01-02")
    assert run.returncode == 0, run.stderr
    assert (snapshot / "VERSION").read_text() == "1.0.0\n"
    repo = hub.repos[("dataset", REPO)]
    first = repo.branches["main"]
    assert repo.tags == {"v1.0.0": first}
    tree = hub.head_tree("dataset", REPO)
    assert {CARD, CROISSANT, "CHANGELOG.md", "checksums.json"} <= set(tree)
    changelog = tree["CHANGELOG.md"].decode()
    assert changelog.startswith("# Changelog\n\n## 1.0.0 (2026-01-02)\n")
    assert "10 added, 0 removed" in changelog and "`pandas_1`" in changelog
    assert b"version: 1.0.0" in tree[CARD]
    croissant = json.loads(tree[CROISSANT])
    assert croissant["version"] == "1.0.0" and croissant["datePublished"] == "2026-01-02"

    # an edited snapshot, then a dry run: it reads the Hub, writes and sends nothing
    edit_rows(snapshot, layout.DESC_TABLE, "nb_name", "pandas_1", label_root_cause="API misuse")
    before = tree_digest(snapshot)
    hub.requests.clear()
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.1.0",
              "--date", "2026-02-03", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert writes(hub) == []
    assert tree_digest(snapshot) == before  # VERSION not written by a dry run
    out = run.stdout
    assert f"compared with: {REPO}@{first[:12]}: 0 added, 0 removed, 0 renamed, 1 changed" in out
    assert "## 1.1.0 (2026-02-03)" in out and "root cause: data confusion → API misuse" in out
    assert f"--- {REPO}@{first}/README.md" in out and "-version: 1.0.0" in out and "+version: 1.1.0" in out
    assert "dry run: nothing was written or sent" in out
    assert "once tagged, write 1.1.0 into VERSION of the snapshot" in out

    # the release itself: one commit on top of the first, tagged; the changelog grows
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.1.0",
              "--date", "2026-02-03")
    assert run.returncode == 0, run.stderr
    second = repo.branches["main"]
    assert second != first and repo.tags == {"v1.0.0": first, "v1.1.0": second}
    assert repo.tag_messages["v1.1.0"] == "JunoBench 1.1.0"
    changelog = hub.head_tree("dataset", REPO)["CHANGELOG.md"].decode()
    assert changelog.index("## 1.1.0") < changelog.index("## 1.0.0") and changelog.count("# Changelog") == 1
    assert posts_to(hub, f"/api/datasets/{REPO}/commit/main") == 1

    # a release interrupted after its commit (here: its tag deleted) is finished by a rerun
    from huggingface_hub import HfApi

    HfApi(endpoint=hub.url).delete_tag(REPO, tag="v1.1.0", repo_type="dataset")
    commits = len(repo.commits)
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--date", "2026-03-04")
    assert run.returncode == 0, run.stderr
    assert "already holds version 1.1.0 (not tagged)" in run.stdout
    assert "once tagged" not in run.stdout  # the snapshot's VERSION says 1.1.0 already
    assert len(repo.commits) == commits and repo.tags["v1.1.0"] == second
    assert hub.head_tree("dataset", REPO)["CHANGELOG.md"].decode() == changelog

    # a release to a new branch starts from main's release and its changelog
    edit_rows(snapshot, layout.DESC_TABLE, "nb_name", "pandas_2", label_ML_pipeline="training")
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "2.0.0-rc.1",
              "--revision", "next", "--date", "2026-04-05")
    assert run.returncode == 0, run.stderr
    assert "create branch next from main" in run.stdout and "0 added, 0 removed, 0 renamed, 1 changed" in run.stdout
    assert repo.branches["main"] == second and repo.tags["v2.0.0-rc.1"] == repo.branches["next"]
    log = hub.head_tree("dataset", REPO, "next")["CHANGELOG.md"].decode()
    assert log.index("## 2.0.0-rc.1") < log.index("## 1.1.0") < log.index("## 1.0.0")

    # each release reads back at its tag
    run = cli(hub, tmp_path, "diff", REPO, REPO, "--old-revision", "v1.0.0", "--new-revision", "v1.1.0")
    assert run.returncode == 0, run.stderr
    assert "changed  pandas_1" in run.stdout and "root cause: data confusion → API misuse" in run.stdout

    # the same version again: refused before anything is sent
    hub.requests.clear()
    assert (snapshot / "VERSION").read_text() == "2.0.0-rc.1\n"
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.1.0")
    assert run.returncode == 1 and "the tag v1.1.0 exists already" in run.stderr
    assert "Traceback" not in run.stderr and writes(hub) == []


def posts_to(hub: HubServer, path: str) -> int:
    return sum(1 for m, p in hub.requests if m == "POST" and p == path)


def test_an_invalid_snapshot_or_no_version_is_refused(hub, snapshot, tmp_path) -> None:
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0", token=None)
    assert run.returncode == 1 and "no Hugging Face token found" in run.stderr
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--dry-run")
    assert run.returncode == 1 and "declares no version" in run.stderr
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "one")
    assert run.returncode == 1 and "not a dataset version" in run.stderr
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0",
              "--date", "2026-02-30", "--dry-run")
    assert run.returncode == 1 and "not a date" in run.stderr
    (snapshot / layout.DIAGNOSIS_TABLE).write_bytes(b"not a table")
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0")
    assert run.returncode == 1 and "the snapshot is not valid" in run.stderr
    assert not (snapshot / "VERSION").exists() and hub.requests == []


def test_an_unreachable_hub_stops_a_release_but_not_a_dry_run(snapshot, tmp_path) -> None:
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        address = f"http://127.0.0.1:{closed.getsockname()[1]}"

    class Nowhere:
        url = address

    run = cli(Nowhere(), tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0",
              "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "unreachable (" in run.stdout and "compared with nothing" in run.stdout
    before = tree_digest(snapshot)
    run = cli(Nowhere(), tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0")
    assert run.returncode == 1 and "the Hub is unreachable" in run.stderr and "Traceback" not in run.stderr
    assert tree_digest(snapshot) == before  # nothing written


def test_a_repo_without_a_release_is_compared_with_nothing(hub, snapshot, tmp_path, in_process) -> None:
    commit_export(snapshot, [], REPO, revision=None, private=False, message="a card", endpoint=hub.url,
                  extra={"README.md": b"# someone's bench\n"})
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "it holds no export or snapshot" in run.stdout
    assert "compared with: nothing (first release): 10 added, 0 removed" in run.stdout


@pytest.mark.slow
def test_a_repo_holding_a_snapshot_is_the_previous_release(hub, snapshot, tmp_path, in_process) -> None:
    """The published repo holds the snapshot layout, not an export: it is compared as such."""
    files = {p.relative_to(snapshot).as_posix(): p.read_bytes() for p in snapshot.rglob("*") if p.is_file()}
    commit_export(snapshot, [], REPO, revision=None, private=False, message="snapshot", endpoint=hub.url,
                  extra=files)
    edit_rows(snapshot, layout.DESC_TABLE, "nb_name", "numpy_1", label_ML_pipeline="training")
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "2.0.0", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "0 added, 0 removed, 0 renamed, 1 changed" in run.stdout
    assert "pipeline stage: " in run.stdout and "→ training" in run.stdout
    assert "files added" not in run.stdout  # the Hub's snapshot is read without its data
    assert "input-data files not compared for 10 case(s)" in run.stdout


def test_the_sample_and_a_linked_version_file_are_refused(hub, snapshot, tmp_path) -> None:
    run = cli(hub, tmp_path, "release", "sample", "--repo-id", REPO, "--version", "1.0.0", "--dry-run")
    assert run.returncode == 1 and "the bundled sample is not released" in run.stderr
    (tmp_path / "elsewhere").write_text("9.9.9\n")
    (snapshot / "VERSION").symlink_to(tmp_path / "elsewhere")
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--dry-run")
    assert run.returncode == 1 and "VERSION" in run.stderr and "symbolic link" in run.stderr
    assert hub.requests == []


def test_a_commit_on_a_moved_branch_is_refused(hub, tmp_path, in_process) -> None:
    out = export("sample", tmp_path / "export").out
    first = commit_export(out, plan(out), REPO, revision=None, private=False, message="one", endpoint=hub.url)
    stale = first.oid
    commit_export(out, plan(out), REPO, revision=None, private=False, message="two", endpoint=hub.url,
                  extra={"CHANGELOG.md": b"# Changelog\n"})
    with pytest.raises(JunoBenchError, match="HTTP 412"):
        commit_export(out, plan(out), REPO, revision=None, private=False, message="three", endpoint=hub.url,
                      extra={"CHANGELOG.md": b"# Changelog\n\nmore\n"}, parent_commit=stale)


def test_a_push_between_reading_the_hub_and_the_commit_fails_the_release(hub, snapshot, tmp_path, in_process,
                                                                         monkeypatch) -> None:
    """The release commits on top of the head it read: a push in between makes the Hub
    refuse the commit, and nothing is tagged or written into the snapshot."""
    import junobench.hub.release as release_module

    out = export("sample", tmp_path / "first").out
    commit_export(out, plan(out), REPO, revision=None, private=False, message="first", endpoint=hub.url)
    real = release_module.read_hub

    def read_then_someone_pushes(*args, **kwargs):
        state = real(*args, **kwargs)
        commit_export(out, [], REPO, revision=None, private=False, message="meanwhile", endpoint=hub.url,
                      extra={"NOTES.md": b"someone else\n"})
        return state

    monkeypatch.setattr(release_module, "read_hub", read_then_someone_pushes)
    with pytest.raises(JunoBenchError, match="HTTP 412"):
        release_module.release(snapshot, REPO, version="1.0.0", previous="sample", endpoint=hub.url)
    assert hub.repos[("dataset", REPO)].tags == {} and not (snapshot / "VERSION").exists()


def test_the_latest_entry_of_a_version() -> None:
    log = "# Changelog\n\n## 1.1.0 (d)\n\nnew\n\n## 1.0.0 (d)\n\nold\n"
    assert latest_entry(log, "1.1.0") == "## 1.1.0 (d)\n\nnew\n"
    assert latest_entry(log, "1.0.0") is None and latest_entry(None, "1.0.0") is None


def test_the_changelog_keeps_one_title() -> None:
    merged = merge_changelog("## 2.0.0 (d)\n\nnew\n", "# Changelog\n\n## 1.0.0 (d)\n\nold\n")
    assert merged == "# Changelog\n\n## 2.0.0 (d)\n\nnew\n\n## 1.0.0 (d)\n\nold\n"
    assert merge_changelog("## 1.0.0 (d)\n", None) == "# Changelog\n\n## 1.0.0 (d)\n"


def _provenance(snapshot: Path, statuses: dict[str, str]) -> None:
    """Record a verification of each case (``verified`` on Python 3.11 with pandas 3.1, or
    ``not verified``), as verify --record and add-case --no-verify write them."""
    from junobench.data import provenance

    for case_id, status in statuses.items():
        environment = {"python": "3.11.4", "packages": {"pandas": {"installed": "3.1.0"}}}
        entry = provenance.verification(status, tool="junobench verify --record", environment=environment,
                                        requirements=["pandas==2.1.4"], sandbox="bwrap, network off",
                                        where="a local environment")
        provenance.write(layout.case_dir(snapshot, case_id), {"verification": entry})


def test_an_unverified_case_is_named_and_refused_with_require_verified(hub, snapshot, tmp_path) -> None:
    cases = sorted(p.name for p in (snapshot / "benchmark").iterdir())
    _provenance(snapshot, {case: "verified" for case in cases} | {"pandas_2": "not verified"})
    before = tree_digest(snapshot)
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0", "--dry-run",
              "--require-verified")
    assert run.returncode == 1 and run.stderr.count("error:") == 1, run.stderr
    assert "1 case(s) have no recorded passing verification: pandas_2" in run.stderr
    assert tree_digest(snapshot) == before
    # without the flag: a warning naming it, and the card and croissant.json say so
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0", "--dry-run",
              "--out", str(tmp_path / "export"))
    assert run.returncode == 0, run.stderr
    assert "warning: 1 case(s) not verified" in run.stdout and "pandas_2" in run.stdout
    card = (tmp_path / "export" / CARD).read_text(encoding="utf-8")
    assert "Not every case of this version is verified" in card
    assert ("9 of 10 cases were verified by running them (junobench: the reproduced notebook crashes as "
            "recorded, the fixed one runs), in: Python 3.11.4, a local environment, sandbox bwrap, network off (9)"
            ) in " ".join(card.split())
    assert "1 case(s) were added or edited without being verified" in card and "Not verified: pandas_2." in card
    rai = json.loads((tmp_path / "export" / CROISSANT).read_text(encoding="utf-8"))
    assert "Not verified in this release: pandas_2." in rai["rai:dataLimitations"]
    # every case verified: --require-verified lets it through, and the card claims no more than that
    _provenance(snapshot, {"pandas_2": "verified"})
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0", "--dry-run",
              "--require-verified", "--out", str(tmp_path / "export2"))
    assert run.returncode == 0, run.stderr
    card = (tmp_path / "export2" / CARD).read_text(encoding="utf-8")
    assert "Not every case" not in card and "10 of 10 cases were verified" in card and "not verified" not in run.stdout


@pytest.mark.parametrize("record", [b'{"releases": 5}', b'[1]', b'{"releases": ["1.0.0"]}'])
def test_a_record_of_renamed_cases_of_another_shape_is_named_not_a_traceback(
        hub, snapshot, tmp_path, in_process, record) -> None:
    (snapshot / layout.RENAMED_CASES).write_bytes(record)  # the snapshot's own record
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.1.0",
              "--previous", "sample", "--dry-run")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr == (f"error: {snapshot / layout.RENAMED_CASES}: the record of renamed cases is not "
                          'a JSON object whose "releases" is a list of objects (restore it from the '
                          "previous release)\n")
    (snapshot / layout.RENAMED_CASES).unlink()  # the record of the release on the Hub
    out = export("sample", tmp_path / "export").out
    commit_export(out, plan(out), REPO, revision=None, private=False, message="one", endpoint=hub.url,
                  extra={layout.RENAMED_CASES: record})
    run = cli(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.1.0", "--dry-run")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    last = run.stderr.splitlines()[-1]  # after huggingface_hub's download bars
    assert last.startswith(f"error: {REPO}: {layout.RENAMED_CASES}: the record of renamed cases is not")
