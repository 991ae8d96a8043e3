"""Near-duplicates: copies of a case that differ in comments, spacing, names or import order
are refused by add-case naming the case and the similarity (--allow-similar lets one in and
records it); validate reports a pair already in a snapshot; no two distinct published
cases come near the threshold. And add-case reads paths as written: a link anywhere on the
way to a data file or a notebook is refused."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from snapshot_files import tree_digest, variant

from conftest import REFERENCE, _require
from junobench.cli import main
from junobench.data import layout, similarity
from junobench.data.snapshot import resolve

SAMPLE = resolve("sample")
CASE = "sklearn_1"


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    target = tmp_path / "snapshot"
    shutil.copytree(SAMPLE, target)
    return target


def edited(tmp_path: Path, name: str, change) -> dict[str, Path]:
    """The three notebooks of the sample's CASE, each code cell passed through ``change``."""
    out = {}
    for version in ("original", "reproduced", "fixed"):
        data = json.loads(layout.notebook_path(SAMPLE, CASE, version).read_text(encoding="utf-8"))
        for cell in data["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                cell["source"] = change(source)
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        out[version] = folder / f"{version}.ipynb"
        out[version].write_text(json.dumps(data), encoding="utf-8")
    return out


def comments(source: str) -> str:
    return "# a copy, with notes\n" + "\n".join(f"{line}  # step" if line.strip() else line
                                                 for line in source.splitlines())


def whitespace(source: str) -> str:
    return "\n\n".join(re.sub(r"\s*([=,(])\s*", r" \1 ", line) for line in source.splitlines()) + "\n\n"


def renamed(source: str) -> str:
    names = {"df": "data", "X": "features", "y": "target", "model": "estimator", "clf": "classifier"}
    return re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: names[m.group(1)], source)


def reordered_imports(source: str) -> str:
    lines = source.splitlines()
    imports = [line for line in lines if line.startswith(("import ", "from "))]
    rest = [line for line in lines if line not in imports]
    return "\n".join([*reversed(imports), *rest])


def add(snapshot: Path, notebooks: dict[str, Path], capsys, *extra: str) -> tuple[int, str]:
    code = main(["construct", "add-case", str(snapshot), str(notebooks["original"]),
                 "--reproduced", str(notebooks["reproduced"]), "--fixed", str(notebooks["fixed"]),
                 "--library", "sklearn", "--root-cause", "data confusion", "--crash-type", "value error",
                 "--stage", "training", "--diagnosis", "A copy.", "--no-verify", *extra])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("change", [comments, whitespace, renamed, reordered_imports])
def test_a_near_duplicate_is_refused_naming_the_case_and_the_similarity(change, snapshot, tmp_path, capsys):
    notebooks = edited(tmp_path, change.__name__, change)
    original = layout.notebook_path(SAMPLE, CASE, "reproduced").read_text(encoding="utf-8")
    assert notebooks["reproduced"].read_text(encoding="utf-8") != original  # a real edit
    before = tree_digest(snapshot)
    code, err = add(snapshot, notebooks, capsys)
    assert code == 1 and len(err.splitlines()) == 1, err
    assert re.search(rf"near-duplicate of {CASE} \((reproduced|fixed|original) notebooks 100% similar\)", err), err
    assert "--allow-similar" in err and tree_digest(snapshot) == before


def test_allow_similar_lets_it_in_and_records_it(snapshot, tmp_path, capsys):
    code, err = add(snapshot, edited(tmp_path, "copy", renamed), capsys, "--allow-similar")
    assert code == 0, err
    assert "warning: allowed with --allow-similar" in err and f"similar to {CASE}" in err
    recorded = json.loads((layout.case_dir(snapshot, "sklearn_3") / "provenance.json").read_text())
    assert recorded["similar"][0]["case"] == CASE and recorded["similar"][0]["similarity"] == 1.0
    # validate reports the pair, as a warning (the similarity was accepted)
    assert main(["validate", str(snapshot)]) == 0
    err = capsys.readouterr().err
    assert f"near-duplicate of {CASE}" in err and "sklearn_3" in err and "allowed" in err
    # a pair nobody allowed (copied in by hand) is a problem
    (layout.case_dir(snapshot, "sklearn_3") / "provenance.json").unlink()
    assert main(["validate", str(snapshot)]) == 1
    out = capsys.readouterr().out
    assert f"sklearn_3: the case is a near-duplicate of {CASE} (reproduced notebooks 100% similar)" in out


def test_a_genuinely_new_case_is_accepted(snapshot, tmp_path, capsys):
    notebooks = {v: variant(layout.notebook_path(SAMPLE, CASE, v), tmp_path / "new", "a different case")
                 for v in ("original", "reproduced", "fixed")}
    code, err = add(snapshot, notebooks, capsys)
    assert code == 0, err
    assert "added sklearn_3" in err and "similar" not in err


def test_no_two_published_cases_are_near_duplicates():
    root = _require(REFERENCE / "junobench-snapshot")
    cases = {c: similarity.folder_prints(root, c) for c in sorted(os.listdir(root / "benchmark"))}
    assert len(cases) == 111
    top = similarity.highest(cases)
    assert top is not None and top.similarity < similarity.THRESHOLD / 2, top
    assert similarity.similar_pairs(cases) == []


def test_each_normalisation_on_its_own():
    base = "import numpy as np\nimport pandas as pd\ndf = pd.read_csv('train.csv')\nX = df.drop(columns=['y'])\n"
    same = ["import pandas as pd\nimport numpy as np\n# read\ndata = pd.read_csv(\"other.csv\")  \n"
            "features = data.drop(columns = [ 'label' ])\n"]
    assert similarity.similarity(similarity.fingerprint([base]), similarity.fingerprint(same)) == 1.0
    # what is not erased counts: another call, another keyword, another module
    for other in (base.replace("drop", "pop"), base.replace("columns=", "index="),
                  base.replace("import pandas as pd", "import polars as pd")):
        assert similarity.similarity(similarity.fingerprint([base]), similarity.fingerprint([other])) < 1.0
    # code that does not parse is compared too
    assert similarity.fingerprint(["print 'py2'  # old\nx = 1"]) == similarity.fingerprint(["print 'two'\ny = 1"])


def test_a_data_path_through_a_linked_folder_is_refused(snapshot, tmp_path, capsys, monkeypatch):
    secret = tmp_path / "home"
    secret.mkdir()
    (secret / ".profile").write_text("export TOKEN=secret\n", encoding="utf-8")
    (tmp_path / "dir_link").symlink_to(secret, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    notebooks = {v: variant(layout.notebook_path(SAMPLE, CASE, v), tmp_path / "nb", "linked data")
                 for v in ("original", "reproduced", "fixed")}
    before = tree_digest(snapshot)
    for given in ("dir_link/.profile", str(tmp_path / "dir_link" / ".profile"), "home/../dir_link/.profile"):
        code, err = add(snapshot, notebooks, capsys, "--dataset", "name=passengers;title=P;license=CC0",
                        "--data", f"passengers={given}")
        assert code == 1 and "symbolic link" in err and "dir_link" in err, err
    assert tree_digest(snapshot) == before
    assert not any("secret" in p.read_text(errors="ignore") for p in snapshot.rglob("*") if p.is_file()
                   and p.suffix in (".profile", ""))
    # a notebook path through a link is refused too
    (tmp_path / "nb_link").symlink_to(tmp_path / "nb", target_is_directory=True)
    linked = {**notebooks, "reproduced": Path("nb_link") / notebooks["reproduced"].name}
    code, err = add(snapshot, linked, capsys)
    assert code == 1 and "symbolic link" in err and "nb_link" in err
    assert tree_digest(snapshot) == before


def test_a_large_data_file_is_named_and_can_be_refused(snapshot, tmp_path, capsys):
    data = tmp_path / "big.csv"
    data.write_bytes(b"a,b\n" + b"1,2\n" * 5000)
    notebooks = {v: variant(layout.notebook_path(SAMPLE, CASE, v), tmp_path / "nb", "large data")
                 for v in ("original", "reproduced", "fixed")}
    before = tree_digest(snapshot)
    spec = ("--dataset", "name=big;title=Big;license=CC0", "--data", f"big={data}")
    code, err = add(snapshot, notebooks, capsys, *spec, "--large-file", "10KB", "--refuse-large")
    assert code == 1 and str(data) in err and "19.5 KiB" in err and tree_digest(snapshot) == before
    code, err = add(snapshot, notebooks, capsys, *spec, "--large-file", "10KB")
    assert code == 0 and f"warning: data file {data} is 19.5 KiB" in err, err
