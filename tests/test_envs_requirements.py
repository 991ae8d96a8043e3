"""The benchmark's environment as data, and each case's requirements from its imports."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import junobench
from junobench.data.build import prepare
from junobench.envs.environment import available, packaged, parse_lock, snapshot_environment
from junobench.envs.requirements import distribution_of, imports_of, is_stdlib, requirements_of
from junobench.errors import JunoBenchError
from junobench.pysource import python_source
from tests.cli_run import run_cli
from tests.snapshot_files import edit_cell

ISSUE_PINS = {"numpy": "1.26.4", "pandas": "2.1.4", "scikit-learn": "1.2.2", "matplotlib": "3.7.1",
              "seaborn": "0.12.2", "statsmodels": "0.14.0", "tensorflow": "2.17.0", "keras": "3.4.1",
              "torch": "2.3.1", "torchvision": "0.18.1", "lightgbm": "4.6.0"}


# --------------------------------------------------------------------------- the data


def test_the_packaged_environment_holds_the_published_pins():
    env = packaged("junobench-2025")
    assert "junobench-2025" in available()
    assert env.python == "3.10" and env.base_image == "python:3.10-slim"
    assert len(env.requirements) == 62
    for name, version in ISSUE_PINS.items():
        assert env.requirements[name] == version
    assert env.kernel == ("ipykernel>=6.20.0",)
    assert env.published_image.startswith("yarinamomo/kaggle_python_env@sha256:73380761")
    # where each fact came from
    for fact in ("requirements", "python", "published_image", "exclude_newer", "lock"):
        assert env.sources[fact]
    assert "9f18ed141430f9f43c7c0e77f00b5d4a566f36e9" in env.sources["requirements"]


def test_the_lock_is_the_resolution_of_the_pins_as_of_the_benchmark_date():
    env = packaged()
    text = env.lock_file.read_text()
    assert f"--exclude-newer {env.exclude_newer}" in text.splitlines()[1]
    assert "--python-version 3.10" in text and "--universal" in text
    for name, version in env.requirements.items():
        assert env.locked[name] == version, name
    assert len(env.locked) > 200  # every transitive dependency, not only the pins
    assert env.locked["albucore"] == "0.0.33"  # as of mid-2025, not today's
    assert env.pin("ipykernel") and env.pin("ipykernel").startswith("6.")
    # the lock is universal: other Pythons and platforms get their own entries
    assert "tifffile" in parse_lock(text, python="3.11") and "pywin32" not in env.locked


@pytest.mark.parametrize("spelling", ["scikit-learn", "Scikit_Learn", "SCIKIT.learn", "scikit__learn"])
def test_a_pin_is_found_under_any_spelling_of_the_name(spelling):
    env = packaged()
    assert env.pin(spelling) == "1.2.2"
    assert env.pin(spelling + "-x") is None
    assert env.pin("ipykernel") == env.locked["ipykernel"] == env.pin("IPyKernel")  # from the lock alone


# --------------------------------------------------------------------------- imports


def test_import_forms():
    source = ("import numpy as np, pandas\nfrom sklearn.model_selection import train_test_split\n"
              "  import os.path\nx = 1; import cv2\nfrom . import helpers\nfrom .. import x\n"
              "from PIL import (Image,\n   ImageDraw)\n# import commented\n"
              "!pip install -q --no-deps idx2numpy==1.2.3 'lightgbm>=4' -r reqs.txt git+https://x/y\n"
              "%pip install --upgrade timm\n!python -m pip install torchinfo\n")
    got = [(i.module, i.how) for i in imports_of(source)]
    assert got == [("numpy", "import"), ("pandas", "import"),
                   ("sklearn.model_selection", "import"), ("os.path", "import"), ("cv2", "import"),
                   ("PIL", "import"), ("idx2numpy", "pip"), ("lightgbm", "pip"), ("timm", "pip"),
                   ("torchinfo", "pip")]


@pytest.mark.parametrize(("module", "dist"), [
    ("sklearn.svm", "scikit-learn"), ("cv2", "opencv-python"), ("PIL.Image", "pillow"),
    ("mpl_toolkits.mplot3d", "matplotlib"), ("pylab", "matplotlib"), ("skimage", "scikit-image"),
    ("imblearn.over_sampling", "imbalanced-learn"), ("tensorflow_decision_forests", "tensorflow-decision-forests"),
    ("kerastuner", "keras-tuner"), ("sklearn_pandas", "sklearn-pandas"), ("google.protobuf", "protobuf"),
    ("google.colab", None), ("IPython.display", "ipython"), ("torch.nn", "torch"),
])
def test_import_name_to_distribution(module, dist):
    assert distribution_of(module) == dist


def test_requirements_are_pinned_from_the_environment_and_the_rest_reported():
    env = packaged()
    need = requirements_of(["import sklearn\nfrom scipy.stats import norm\nimport joblib\n"
                            "import clip\nimport google.colab\nimport json\nimport helpers\n",
                            "!pip install torchinfo"], env, local=["helpers"])
    assert need.requirements == ["joblib==" + env.locked["joblib"], "scikit-learn==1.2.2", "scipy==1.13.1"]
    assert need.unpinned == ["import clip", "import google.colab", "pip install torchinfo"]
    assert need.local == ["helpers"]


@given(st.text(max_size=400))
def test_any_text_gives_imports_or_nothing(text):
    for item in imports_of(text):
        assert item.module and item.how in ("import", "pip")
    requirements_of([text], packaged())


def _ast_imports(source: str) -> set[str]:
    """Top-level modules imported, by the Python parser (a cross-check of the line reader)."""
    text, _, _ = python_source(source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text or "")
    except SyntaxError:
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


def test_every_import_of_the_222_reference_notebooks_is_resolved_or_reported(reference_snapshot):
    env = packaged()
    cases = sorted((reference_snapshot / "benchmark").iterdir())
    assert len(cases) == 111
    unpinned: dict[str, list[str]] = {}
    notebooks = 0
    for folder in cases:
        sources = []
        for path in sorted(folder.glob("*.ipynb")):
            notebooks += 1
            cells = json.loads(path.read_text())["cells"]
            sources += ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                        for c in cells if c["cell_type"] == "code"]
        need = requirements_of(sources, env)
        pinned_names = {r.split("==")[0] for r in need.requirements}
        for module in set().union(*map(_ast_imports, sources)):
            if is_stdlib(module):
                continue
            label = f"import {module.split('.')[0]}"
            dist = distribution_of(module)
            assert (dist in pinned_names) or any(u.startswith(label) for u in need.unpinned), (
                folder.name, module)
        for label, dist in need.resolved.items():
            assert (dist is not None) != (label in need.unpinned), (folder.name, label)
        if need.unpinned:
            unpinned[folder.name] = need.unpinned
        if folder.name.startswith("sklearn_"):
            assert "scikit-learn==1.2.2" in need.requirements
    assert notebooks == 222
    # what the published environment does not pin: a Kaggle-only module, one from a git
    # URL in another version of the list, and one it never listed
    assert unpinned == {"seaborn_1": ["import kaggle_datasets"], "tensorflow_9": ["import torchinfo"],
                        "torch_6": ["import clip"]}


# --------------------------------------------------------------------------- records


def test_records_carry_requirements_and_the_build_reports_unpinned(reference_snapshot, capsys):
    built, report = prepare(reference_snapshot)
    cases = {c["case_id"]: c for c in built["cases"]}
    assert cases["lightgbm_1"]["requirements"] == sorted(cases["lightgbm_1"]["requirements"])
    assert "lightgbm==4.6.0" in cases["lightgbm_1"]["requirements"]
    assert "torch==2.3.1" in cases["torch_1"]["requirements"]
    assert report.unpinned["torch_6"] == ["import clip"]
    assert any("torch_6 (import clip)" in line for line in report.summary())


def test_ls_json_and_show_print_requirements(capsys):
    code, out, _ = run_cli(capsys, "ls", "--source", "sample", "--format", "json")
    rows = {r["case_id"]: r for r in json.loads(out)}
    assert code == 0 and rows["sklearn_1"]["requirements"] == [
        "numpy==1.26.4", "pandas==2.1.4", "scikit-learn==1.2.2"]
    code, out, _ = run_cli(capsys, "show", "statsmodels_1", "--source", "sample")
    assert "Requirements" in out and "statsmodels==0.14.0" in out
    code, out, _ = run_cli(capsys, "ls", "--source", "sample")  # the table stays narrow
    assert "requirements" not in out.splitlines()[0]


def test_export_and_card_carry_the_field(tmp_path, capsys):
    from datasets import load_dataset

    code, _, _ = run_cli(capsys, "export", "--source", "sample", "--out", str(tmp_path / "out"))
    assert code == 0
    cases = load_dataset(str(tmp_path / "out"), "cases", split="test")
    assert cases.features["requirements"].feature.dtype == "string"
    assert {c["case_id"]: c["requirements"] for c in cases}["seaborn_1"][-1].startswith("seaborn==")
    card = (tmp_path / "out" / "README.md").read_text()
    assert "`requirements` field" in card and "`junobench-2025`: Python 3.10" in card


def test_a_snapshot_environment_overrides_the_packaged_one(snapshot_copy):
    env_dir = snapshot_copy / "environment"
    env_dir.mkdir()
    (env_dir / "requirements.in").write_text("pandas==3.0.0\nnumpy==2.1.0\n")
    (env_dir / "environment.json").write_text(json.dumps(
        {"name": "newer", "python": "3.12", "requirements": "requirements.in"}))
    env = snapshot_environment(snapshot_copy)
    assert (env.name, env.python, env.origin) == ("newer", "3.12", str(snapshot_copy))
    cases = junobench.load(snapshot_copy, library="pandas")
    assert "pandas==3.0.0" in cases[0]["requirements"]
    assert not any(r.startswith("scikit-learn") for c in cases for r in c["requirements"])
    # naming a packaged environment is the same as the default
    (env_dir / "environment.json").write_text('{"name": "junobench-2025"}')
    assert snapshot_environment(snapshot_copy).name == "junobench-2025"
    cases = junobench.load(snapshot_copy, library="pandas")
    assert "pandas==2.1.4" in cases[0]["requirements"]  # the cache followed the edit


@pytest.mark.parametrize(("files", "message"), [
    ({"environment.json": "{not json"}, "not valid JSON"),
    ({"environment.json": '{"name": "nope"}'}, "no packaged environment 'nope'"),
    ({"environment.json": '{"name": "x", "python": "three", "requirements": "r.in"}', "r.in": ""},
     "python must be a version"),
    ({"environment.json": '{"name": "x", "python": "3.10", "requirements": "../../etc/passwd"}'},
     "not a file name inside the environment folder"),
    ({"environment.json": '{"name": "x", "python": "3.10", "requirements": "r.in"}', "r.in": "pandas=="},
     "line 1: not a requirement"),
    ({"environment.json": '{"name": "x", "python": "3.10", "requirements": "r.in", "lock": "l.txt"}',
      "r.in": "pandas==2.1.4", "l.txt": "pandas==2.2.0\n"}, "the lock has pandas==2.2.0"),
])
def test_a_bad_environment_file_is_one_error_naming_it(snapshot_copy, files, message, capsys):
    env_dir = snapshot_copy / "environment"
    env_dir.mkdir()
    for name, text in files.items():
        (env_dir / name).write_text(text)
    with pytest.raises(JunoBenchError, match=re.escape(message)) as error:
        snapshot_environment(snapshot_copy)
    assert "environment" in str(error.value)
    code, _, err = run_cli(capsys, "ls", "--source", str(snapshot_copy))
    assert code == 1 and err.startswith("error: ") and message in err and len(err.splitlines()) == 1


def test_a_link_as_environment_file_is_not_followed(snapshot_copy, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text('{"name": "junobench-2025"}')
    (snapshot_copy / "environment").mkdir()
    (snapshot_copy / "environment" / "environment.json").symlink_to(outside)
    with pytest.raises(JunoBenchError, match="not a regular file"):
        snapshot_environment(snapshot_copy)


def test_an_environment_file_of_a_snapshot_in_the_hub_cache_is_read(tmp_path):
    """The Hugging Face cache keeps a snapshot's files as links into the repo's blobs."""
    repo = tmp_path / "datasets--someone--bench"
    blob = repo / "blobs" / "0a1b2c"
    blob.parent.mkdir(parents=True)
    blob.write_text('{"name": "junobench-2025"}')
    snapshot = repo / "snapshots" / "abc123"
    (snapshot / "environment").mkdir(parents=True)
    (snapshot / "environment" / "environment.json").symlink_to(os.path.relpath(blob, snapshot / "environment"))
    assert snapshot_environment(snapshot).name == "junobench-2025"


def test_a_module_in_the_case_folder_is_local(snapshot_copy):
    edit_cell(snapshot_copy, "pandas_1", "fixed", 0, "import helpers\nimport pandas as pd")
    assert prepare(Path(snapshot_copy))[1].unpinned["pandas_1"] == ["import helpers"]
    (snapshot_copy / "benchmark" / "pandas_1" / "helpers.py").write_text("X = 1\n")
    assert "pandas_1" not in prepare(Path(snapshot_copy))[1].unpinned


# --------------------------------------------------------------------------- Dockerfile


def test_the_dockerfile_reproduces_the_selection(tmp_path, capsys):
    out = tmp_path / "ctx"
    code, stdout, stderr = run_cli(capsys, "env", "dockerfile", "sklearn_1", "statsmodels_1", "--source", "sample",
                                   "--out", str(out))
    assert code == 0 and stdout == "" and "docker build -t junobench-env" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["Dockerfile", "junobench-env.json", "lock.txt",
                                                     "requirements.txt"]
    env = packaged()
    text = (out / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines[0] == "FROM python:3.10-slim"  # the environment's Python
    assert f"# Alternative: the published image {env.published_image}" in text
    assert "uv venv --allow-existing --python /usr/local/bin/python3.10 /opt/junobench-env" in text
    assert "-r requirements.txt -c lock.txt --exclude-newer 2025-07-01 --require-hashes" in text
    assert "-m ipykernel install --prefix /opt/junobench-env" in text
    assert 'ARG JUNOBENCH=junobench[run]==' in text and 'uv tool install --python 3.12 "${JUNOBENCH}"' in text
    pins = (out / "requirements.txt").read_text().split()
    cases = {c["case_id"]: c for c in junobench.load("sample")}
    needed = set(cases["sklearn_1"]["requirements"]) | set(cases["statsmodels_1"]["requirements"])
    assert pins == sorted(needed | {f"ipykernel=={env.pin('ipykernel')}"})  # only what the two import
    assert "statsmodels==0.14.0" in pins and "scikit-learn==1.2.2" in pins
    # the lock's checked pins and hashes, written again (no comment or option of the file)
    assert (out / "lock.txt").read_text() == env.lock_text and "--hash=sha256:" in env.lock_text
    assert parse_lock(env.lock_text) == env.locked
    manifest = json.loads((out / "junobench-env.json").read_text())
    assert manifest["requirements"] == pins and manifest["cases"] == ["sklearn_1", "statsmodels_1"]
    # --all: every published pin; rewriting the same folder is allowed
    code, _, _ = run_cli(capsys, "env", "dockerfile", "--all", "--source", "sample", "--out", str(out))
    pins = (out / "requirements.txt").read_text().split()
    assert code == 0 and "torch==2.3.1" in pins and "tensorflow==2.17.0" in pins and len(pins) == 63


def test_dockerfile_all_reads_no_source_and_gets_a_compiler_for_source_builds(tmp_path, capsys,
                                                                               monkeypatch):
    import junobench.data.snapshot as snapshot

    def no_hub(*args, **kwargs):
        raise AssertionError("--all without --source read a snapshot")

    monkeypatch.setattr(snapshot, "resolve", no_hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "ctx"
    code, _, err = run_cli(capsys, "env", "dockerfile", "--all", "--out", str(out))
    assert code == 0, err
    text = (out / "Dockerfile").read_text()
    assert "apt-get install -y --no-install-recommends build-essential" in text
    assert "No wheel for Python 3.10 on linux x86_64: eli5==0.13.0, fasttext==0.9.3" in text
    assert text.index("build-essential") < text.index("uv pip install")
    assert "fasttext==0.9.3" in (out / "requirements.txt").read_text().split()
    # A selection whose pins all have wheels gets no compiler.
    monkeypatch.undo()
    code, _, _ = run_cli(capsys, "env", "dockerfile", "sklearn_1", "--source", "sample", "--out",
                         str(tmp_path / "small"))
    assert code == 0 and "build-essential" not in (tmp_path / "small/Dockerfile").read_text()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="pylock.toml is read with tomllib (3.11+)")
def test_source_builds_are_read_from_the_lock_s_wheel_entries():
    from junobench.envs.wheels import platform_tags, source_builds

    def package(name, version, *wheels, marker=None):
        entry = f'[[packages]]\nname = "{name}"\nversion = "{version}"\n'
        if marker:
            entry += f'marker = "{marker}"\n'
        urls = ", ".join(f'{{ url = "https://files.example/{w}" }}' for w in wheels)
        return entry + (f"wheels = [{urls}]\n" if wheels else 'sdist = { url = "x.tar.gz" }\n')

    lock = "\n".join([
        package("fasttext", "0.9.3", "fasttext-0.9.3-cp312-cp312-manylinux_2_17_x86_64.whl"),
        package("pure", "1.0", "pure-1.0-py3-none-any.whl"),
        package("numpy", "1.26.4", "numpy-1.26.4-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
        package("macos", "1.0", "macos-1.0-cp310-cp310-macosx_11_0_arm64.whl"),
        package("pywin32", "310", marker="sys_platform == 'win32'"),
        package("abi3", "2.0", "abi3-2.0-cp38-abi3-manylinux_2_28_x86_64.whl"),
        package("newglibc", "1.0", "newglibc-1.0-cp310-cp310-manylinux_2_39_x86_64.whl"),
    ])
    assert source_builds(lock, python="3.10", platform="linux x86_64") == [
        "fasttext==0.9.3", "macos==1.0", "newglibc==1.0"]
    assert "numpy==1.26.4" in source_builds(lock, python="3.10", platform="linux aarch64")
    assert "cp310-cp310-manylinux2014_x86_64" in platform_tags("3.10", "linux x86_64")
    with pytest.raises(JunoBenchError):
        source_builds("not = [toml", python="3.10", platform="linux x86_64")


def test_the_dockerfile_writer_keeps_other_files(tmp_path, capsys):
    out = tmp_path / "ctx"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    code, _, err = run_cli(capsys, "env", "dockerfile", "--source", "sample", "--out", str(out))
    assert code == 1 and err.startswith("error: ") and "notes.md" in err
    assert [p.name for p in out.iterdir()] == ["notes.md"]


_CELL_LINES = st.sampled_from([
    "import pandas as pd", "from sklearn.model_selection import train_test_split",
    "import os, numpy as np", "!pip install lightgbm==4.6.0", "%pip install -q xgboost",
    "x = 1; import seaborn as sns", "from . import helper", "import helper", "import clip",
    "print('import torch')", "y = np.zeros(3)", "from google.colab import drive", "",
])


@given(st.lists(st.lists(_CELL_LINES, max_size=4).map("\n".join), max_size=6))
def test_a_case_needs_what_its_cells_need_one_by_one(cells):
    """The cells are scanned together: the result is what each cell alone would need."""
    env = packaged()
    together = requirements_of(cells, env, local=["helper"])
    alone = [requirements_of([cell], env, local=["helper"]) for cell in cells]
    assert together.requirements == sorted({r for need in alone for r in need.requirements})
    assert together.unpinned == sorted({u for need in alone for u in need.unpinned})
    assert together.local == sorted({m for need in alone for m in need.local})
    assert together.resolved == {k: v for need in alone for k, v in need.resolved.items()}


@given(st.lists(_CELL_LINES | st.text(alphabet="imports ;!%pipnal\n.", max_size=30), max_size=12)
       .map("\n".join))
def test_imports_are_found_on_every_line_that_holds_them(text):
    """Only lines holding 'import' / 'install' are scanned, each statement once: the same
    modules, in the same order, as trying the patterns at every position of the text
    (an import at a line's start or after ';', a pip install at a line's start)."""
    import re

    from junobench.envs import requirements

    every_import = re.compile(r"(?:^|;)" + requirements._IMPORT.pattern, re.MULTILINE)
    every_pip = re.compile(r"^" + requirements._PIP.pattern, re.MULTILINE)
    expected = [m.group("from") or m.group("import") for m in every_import.finditer(text)]
    found = [item.module for item in imports_of(text) if item.how == "import"]
    pips = [name for m in every_pip.finditer(text)
            for name in requirements.pip_requirements(m.group("args"))]
    assert [item.module for item in imports_of(text) if item.how == "pip"] == pips
    modules = []
    for value in expected:
        if value.startswith(".") or not value:
            continue
        modules += [part.split()[0] for part in value.split(",") if part.split()]
    assert found == modules
