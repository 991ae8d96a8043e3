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


def test_an_imported_name_reads_as_what_it_imports_whatever_its_alias():
    """``from m import f as g`` makes ``g`` read as ``f``: two notebooks alike but for which
    function they import under one alias are different code; two alike but for the alias
    are the same."""
    body = "".join(f"print('run {k}', score(y_test, model{k}.predict(X_test)))\n" for k in range(8))
    f1 = similarity.fingerprint(["from sklearn.metrics import f1_score as score\n" + body])
    accuracy = similarity.fingerprint(["from sklearn.metrics import accuracy_score as score\n" + body])
    assert similarity.similarity(f1, accuracy) < similarity.THRESHOLD
    plain = similarity.fingerprint(["from sklearn.metrics import f1_score\n" + body.replace("score(", "f1_score(")])
    assert similarity.similarity(f1, plain) == 1.0
    tokens = similarity.normalised_tokens(["from sklearn.metrics import accuracy_score as acc\nacc(y, p)"])
    assert tokens[-6:] == ["accuracy_score", "(", "v0", ",", "v1", ")"]


def test_formatting_a_string_another_way_changes_nothing():
    fstring = ["import pandas as pd\nx = f'{a}: {b:.2f}'\ny = f\"{c!r}\"\n"]
    for other in ("import pandas as pd\nx = '{}: {:.2f}'.format(a, b)\ny = '{!r}'.format(c)\n",
                  "import pandas as pd\nx = '%s: %.2f' % (a, b)\ny = '%r' % c\n"):
        assert similarity.similarity(similarity.fingerprint(fstring), similarity.fingerprint([other])) == 1.0
    # in code that does not parse (Python 2's print) too
    assert similarity.normalised_tokens(["print 'x'\ny = f'{a}'"]) == similarity.normalised_tokens(
        ["print 'x'\ny = '{}'.format(a)"])


def test_a_cell_that_does_not_parse_is_read_statement_by_statement():
    """Merging a cell that parses with one that does not (bad indentation, Python 2) reads
    as the two cells: imports still move to the head and name what they import."""
    good = "import numpy as np\nfrom sklearn.metrics import accuracy_score as acc\nx = np.ones(3)\n"
    bad = "def f(a):\nreturn a\nprint acc(x, x)\n"
    apart = similarity.normalised_tokens([good, bad])
    assert similarity.normalised_tokens([good + bad]) == apart
    assert similarity.normalised_tokens([bad + "\n" + good]) == similarity.normalised_tokens([bad, good])
    assert apart[:4] == ["from", "sklearn", ".", "metrics"] and "accuracy_score" in apart[10:]


# Edits a copy makes to a whole notebook (its code cells' sources, in order), keeping the
# program: the reference's notebooks go through each (many of their cells do not parse).

def _docstrings(cells):
    return [re.sub(r'("""|\'\'\')(.*?)\1', r"\1rewritten notes\1", c, flags=re.S) for c in cells]


def _format_calls(cells):
    def call(match):
        quote, text = match.group(1), match.group(2)
        fields = re.findall(r"\{([^{}:!]+)[^{}]*\}", text)
        return quote + re.sub(r"\{([^{}:!]+)([^{}]*)\}", r"{\2}", text) + quote + f".format({', '.join(fields)})"
    return [re.sub(r"\bf(['\"])(.*?)\1", call, c) for c in cells]


def _blank_cells(cells):
    return [part for c in cells for part in (c, "", "\n  \n")]


def _split_cells(cells):
    out = []
    for c in cells:
        lines = c.splitlines()
        starts = [k for k in range(1, len(lines)) if re.match(r"[A-Za-z_]", lines[k])
                  and not re.match(r"(else|elif|except|finally)\b", lines[k])
                  and not lines[k - 1].rstrip().endswith(("\\", ",", "(", "[", "{"))
                  and all("\n".join(lines[:k]).count(quote) % 2 == 0 for quote in ('"""', "\'\'\'"))]
        if starts:
            k = starts[len(starts) // 2]
            out += ["\n".join(lines[:k]), "\n".join(lines[k:])]
        else:
            out.append(c)
    return out


def _merged_cells(cells):
    return ["\n".join(cells[k:k + 2]) for k in range(0, len(cells), 2)]


def _import_aliases(cells):
    text = "\n\x00\n".join(cells)
    for module, alias, new in (("numpy", "np", "numeric"), ("pandas", "pd", "frames"),
                               ("matplotlib.pyplot", "plt", "pyplot_module")):
        if re.search(rf"^import {re.escape(module)} as {alias}$", text, re.M):
            text = re.sub(rf"^import {re.escape(module)} as {alias}$", f"import {module} as {new}", text, flags=re.M)
            text = re.sub(rf"(?<![\w.]){alias}\.", f"{new}.", text)
    return text.split("\n\x00\n")


def _all_at_once(cells):
    return _merged_cells(_blank_cells(_split_cells(_import_aliases(_format_calls(_docstrings(cells))))))


@pytest.mark.parametrize("edit", [_docstrings, _format_calls, _blank_cells, _split_cells, _merged_cells,
                                  _import_aliases, _all_at_once])
def test_every_reference_case_edited_as_a_copy_stays_a_near_duplicate(edit):
    root = _require(REFERENCE / "junobench-snapshot")
    changed = 0
    for case in sorted(os.listdir(root / "benchmark")):
        for version in ("reproduced", "fixed"):
            data = json.loads(layout.notebook_path(root, case, version).read_text(encoding="utf-8"))
            cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                     for c in data["cells"] if c["cell_type"] == "code"]
            copy = edit(cells)
            if copy == cells:
                continue
            changed += 1
            value = similarity.similarity(similarity.fingerprint(cells), similarity.fingerprint(copy))
            assert value >= similarity.THRESHOLD, (case, version, value)
    assert changed >= 20, changed


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
