"""A release that runs: a snapshot with a case added, one removed and one renumbered is
released to the local Hub stand-in; its changelog lists exactly those, its
renamed_cases.json the published ids renamed and removed, its card says which cases are
not verified; ``verify --source REPO --revision TAG`` runs released cases from the server,
fetching those cases only; stock ``datasets.load_dataset`` reads its configs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from snapshot_files import variant
from test_release import REPO, cli, hub, in_process, snapshot  # noqa: F401  (fixtures)

from junobench.data import layout
from junobench.data.snapshot import resolve

SAMPLE = resolve("sample")

STOCK_LOAD = """
import json, sys
from datasets import load_dataset
out = {config: load_dataset(sys.argv[1], config, split="test", revision=sys.argv[2]).num_rows
       for config in ("cases", "notebooks")}
out["ids"] = sorted(load_dataset(sys.argv[1], "cases", split="test", revision=sys.argv[2])["case_id"])
print(json.dumps(out))
"""


def run(server, tmp_path, *argv: str) -> subprocess.CompletedProcess[str]:
    done = cli(server, tmp_path, *argv)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
@pytest.mark.kernel
def test_a_release_with_an_added_a_removed_and_a_renumbered_case(hub, snapshot, tmp_path, in_process) -> None:  # noqa: F811
    run(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.0.0", "--date", "2026-01-02")
    # remove a published case, add a new one (no eid, not verified), close the gap
    run(hub, tmp_path, "construct", "remove-case", str(snapshot), "pandas_1")
    new = {v: variant(layout.notebook_path(SAMPLE, "NBspecific_2", v), tmp_path / "new", "a new pandas case")
           for v in ("original", "reproduced", "fixed")}
    run(hub, tmp_path, "construct", "add-case", str(snapshot), str(new["original"]), "--reproduced",
        str(new["reproduced"]), "--fixed", str(new["fixed"]), "--library", "pandas", "--root-cause",
        "data confusion", "--crash-type", "key error", "--stage", "data preparation", "--diagnosis",
        "A column dropped twice.", "--no-verify")
    done = run(hub, tmp_path, "construct", "renumber", str(snapshot))
    assert "pandas_2 -> pandas_1" in done.stderr and "pandas_3 -> pandas_2" in done.stderr

    done = run(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.1.0",
               "--date", "2026-02-03")
    assert "warning: 11 case(s) not verified" not in done.stdout  # 10 cases: 9 kept + 1 added
    assert "warning: 10 case(s) not verified" in done.stdout
    tree = hub.head_tree("dataset", REPO, "v1.1.0")
    changelog = tree["CHANGELOG.md"].decode()
    entry = changelog[changelog.index("## 1.1.0"):changelog.index("## 1.0.0")]
    assert "1 added, 1 removed, 1 renamed, 0 changed (10 → 10 cases)" in entry
    sections = {title: body for title, body in (part.split("\n", 1) for part in entry.split("### ")[1:])}
    assert set(sections) == {"Added", "Removed", "Renamed"}
    assert [line for line in sections["Added"].splitlines() if line.startswith("- ")] == [
        "- `pandas_2`: pandas, data confusion, key error, KeyError"]
    assert [line.split(":")[0] for line in sections["Removed"].splitlines() if line.startswith("- ")] == [
        "- `pandas_1`"]
    assert [line for line in sections["Renamed"].splitlines() if line.startswith("- ")] == [
        "- `pandas_2` → `pandas_1`"]
    # the record of renamed cases: published ids only (the new case's pandas_3 → pandas_2 is not one)
    record = json.loads(tree["renamed_cases.json"])
    assert record == {"releases": [{"version": "1.1.0", "date": "2026-02-03", "renamed": {"pandas_2": "pandas_1"},
                                    "removed": ["pandas_1"]}]}
    assert (snapshot / "renamed_cases.json").read_bytes() == tree["renamed_cases.json"]
    released_record = tree["renamed_cases.json"]
    # the card and croissant.json say which cases are not verified
    card = tree["README.md"].decode()
    assert "Not every case of this version is verified" in card
    assert "1 case(s) were added or edited without being verified" in card
    assert "9 case(s) carry no record of where they were reproduced" in card
    assert "reproduced in one pinned" not in card and "reproduced in a unified" not in card
    rai = json.loads(tree["croissant.json"])["rai:dataCollection"]
    assert "1 case(s) were added or edited without being verified" in rai
    # the released version holds the runnable layout, every file in checksums.json
    listed = json.loads(tree["checksums.json"])["files"]
    assert "benchmark/pandas_1/data/monthly_sales.csv" in listed and "benchmark_desc.xlsx" in listed
    assert set(listed) == set(tree) - {"checksums.json", "CHANGELOG.md", ".gitattributes"}

    # verify the released sample cases from the server, fetching those cases only
    hub.requests.clear()
    done = run(hub, tmp_path, "verify", "--source", REPO, "--revision", "v1.1.0", "NBspecific_2", "pandas_1",
               "--jobs", "2")
    assert done.stdout.count("passed") == 2, done.stdout
    fetched = {path for method, path in hub.requests if method == "GET" and "/resolve/" in path}
    cases = {p.split("/benchmark/")[1].split("/")[0] for p in fetched if "/benchmark/" in p}
    assert cases == {"NBspecific_2", "pandas_1"}, fetched
    assert any(p.endswith("/benchmark/pandas_1/data/monthly_sales.csv") for p in fetched)

    # checkout takes the released cases, with their data
    done = run(hub, tmp_path, "checkout", "pandas_1", "--source", REPO, "--revision", "v1.1.0",
               "--dest", str(tmp_path / "mine"))
    assert (tmp_path / "mine/benchmark/pandas_1/data/monthly_sales.csv").is_file()

    # stock datasets reads the configs of the release, from the server
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf-datasets-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1", "PATH": "/usr/bin:/bin"}
    loaded = subprocess.run([sys.executable, "-c", STOCK_LOAD, REPO, "v1.1.0"], env=env, capture_output=True,
                            text=True, timeout=600)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    counts = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert counts["cases"] == 10 and counts["notebooks"] == 20 and "pandas_2" in counts["ids"]

    # a snapshot that lost its copy of the record: the next release keeps the Hub's entries
    (snapshot / "renamed_cases.json").unlink()
    run(hub, tmp_path, "release", str(snapshot), "--repo-id", REPO, "--version", "1.2.0", "--date", "2026-03-04")
    assert hub.head_tree("dataset", REPO, "v1.2.0")["renamed_cases.json"] == released_record
