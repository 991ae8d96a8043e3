"""What a release carries: the wheel's files (type marker, schemas, sample, card template,
licence) and the project's licence, changelog and citation metadata, consistent with
each other and with pyproject.toml."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = (REPO / "pyproject.toml").read_text(encoding="utf-8")
VERSION = re.search(r'(?m)^version = "([^"]+)"$', PYPROJECT)[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel built from a copy of the source (the checkout gets no build/ folder)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    for name in ("junobench", "data_cards"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(source)], check=True, capture_output=True, timeout=600)
    (built,) = out.glob("junobench-*.whl")
    return zipfile.ZipFile(built)


@pytest.mark.slow
def test_the_wheel_is_pure_python(wheel: zipfile.ZipFile) -> None:
    """One wheel for every platform and Python: no compiled module, a py3-none-any tag."""
    assert wheel.filename is not None and wheel.filename.endswith(f"junobench-{VERSION}-py3-none-any.whl")
    assert not [n for n in wheel.namelist() if n.endswith((".so", ".pyd", ".c"))]
    assert "Root-Is-Purelib: true" in wheel.read(f"junobench-{VERSION}.dist-info/WHEEL").decode()


@pytest.mark.slow
def test_the_wheel_carries_types_data_and_licence(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "junobench/py.typed" in names  # type checkers read the package's annotations
    assert "junobench/schemas/dataset_metadata.schema.json" in names
    assert "junobench/construct/library_vocabulary.json" in names  # the estimator's tables
    assert "junobench/sample/benchmark_desc.xlsx" in names
    assert any(n.startswith("junobench/sample/benchmark/") and n.endswith(".ipynb") for n in names)
    assert f"junobench-{VERSION}.data/data/share/junobench/data_cards/junobench.md" in names
    assert wheel.read(f"junobench-{VERSION}.dist-info/licenses/LICENSE") == (REPO / "LICENSE").read_bytes()
    metadata = wheel.read(f"junobench-{VERSION}.dist-info/METADATA").decode()
    assert f"\nVersion: {VERSION}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata


def test_licence_matches_pyproject() -> None:
    assert re.search(r'(?m)^license = "MIT"$', PYPROJECT)
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "The junobench developers" in text


def test_changelog_has_unreleased_and_the_current_version() -> None:
    headings = re.findall(r"(?m)^## (.+)$", (REPO / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert headings[0] == "Unreleased"
    assert VERSION in [heading.split(" - ")[0] for heading in headings]  # "0.2.0 - 2026-11-29"


def test_citation_file_names_both_papers_as_the_readme_does() -> None:
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["license"] == "MIT"
    assert "version" not in citation  # the version has one source: pyproject.toml
    papers = [citation["preferred-citation"], *[r for r in citation["references"] if r["type"] == "article"]]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    bibtex = dict(re.findall(r"title\s*=\s*\{(.+?)\},.*?eprint\s*=\s*\{(.+?)\}", readme, re.S))
    assert {p["title"]: p["identifiers"][0]["value"].removeprefix("arXiv:") for p in papers} == bibtex
    assert len(bibtex) == 2
    for paper in papers:
        assert [a["family-names"] for a in paper["authors"]] == ["Wang", "Hernández López", "Nilsson", "Varró"]


def test_pre_commit_hooks_run_offline_from_the_checkout_s_venv() -> None:
    """ruff, mypy and the fast tests' collection, each a local hook on the .venv's tools
    (nothing fetched from a hook repository: it works without the network)."""
    import yaml

    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    assert [hook["id"] for hook in hooks] == ["ruff", "mypy", "collect-fast-tests"]
    assert all(hook["entry"].startswith(".venv/bin/") and hook["language"] == "system" for hook in hooks)
    assert "--collect-only" in hooks[2]["entry"] and '"not slow and not kernel"' in hooks[2]["entry"]
