"""scripts/mutation_score.py on a tiny module: mutants made, run, killed or listed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "mutation_score.py"


def _script():
    spec = importlib.util.spec_from_file_location("mutation_score", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_mutants_of_each_kind_leave_annotations_and_docstrings_alone():
    script = _script()
    source = (b'"""Doc 1."""\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    X = 1\n\n'
              b'def f(a: int | None, b=2) -> int | None:\n    """Doc 2."""\n'
              b'    if a is not None and a < b:  # a < b\n        return a * 3\n'
              b'    return not (b in [1])\n')
    changes = {(m.old, m.new) for m in script.mutants("m.py", source)}
    assert changes == {("is not", "is"), ("and", "or"), ("<", "<="), ("*", "/"), ("3", "4"),
                       ("2", "3"), ("not", ""), ("in", "not in"), ("1", "2")}
    exempt = source.replace(b"return a * 3", b"return a * 3  # pragma: no mutate")
    assert {(m.old, m.new) for m in script.mutants("m.py", exempt)} == \
        changes - {("*", "/"), ("3", "4")}
    mutant = next(m for m in script.mutants("m.py", source) if m.old == "<")
    assert b"a <= b:  # a < b" in mutant.apply(source)
    for each in script.mutants("m.py", source):
        compile(each.apply(source), "m.py", "exec")  # every mutant is valid Python


def test_the_score_kills_what_the_tests_catch_and_lists_survivors(tmp_path, capsys):
    (tmp_path / "mod.py").write_text("def add(a, b):\n    return a + b\n\n\n"
                                     "def positive(x):\n    return x > 0\n")
    (tmp_path / "test_mod.py").write_text("from mod import add, positive\n\n\n"
                                          "def test_add():\n    assert add(2, 3) == 5\n")
    code = _script().main(["--root", str(tmp_path), "--copy", "mod.py", "test_mod.py",
                           "--target", "mod.py", "--tests", "test_mod.py", "--timeout", "60"])
    out = capsys.readouterr().out
    assert code == 1  # below the 90% threshold
    assert "target: 1/3 mutants killed (33.3%)" in out
    assert "mod.py:6: '>' -> '>='" in out and "mod.py:6: '0' -> '1'" in out
    assert "mod.py:2: '+' -> '-'" not in out  # killed, so not listed
    assert (tmp_path / "mod.py").read_text().count("a + b") == 1  # the original is untouched
