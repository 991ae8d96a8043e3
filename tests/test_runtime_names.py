"""The names a target cell reads from the kernel (pure AST analysis, no kernel)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junobench.runtime.names import target_names


def names(source: str) -> tuple[str, ...]:
    return target_names(source).names


def test_names_attribute_bases_and_call_receivers_in_order_of_first_read():
    found = target_names("survival = df.groupby('Pclass')['survived'].mean()\n"
                         "model.fit(X_train, y_train)\nprint(survival, np.sqrt(2))")
    assert found.names == ("df", "model", "X_train", "y_train", "print", "np")
    assert found.attributes == {"df": ("groupby",), "model": ("fit",), "np": ("sqrt",)}
    assert found.parsed


def test_a_name_the_cell_binds_first_is_not_read_but_one_it_rebinds_from_itself_is():
    assert names("model = Ridge()\nmodel.fit(X, y)") == ("Ridge", "X", "y")
    assert names("df = df.drop(columns='a')\ndf.shape") == ("df",)
    assert names("x += 1") == ("x",)
    assert names("del old") == ("old",)
    assert names("import numpy as np\nfrom sklearn import svm\nnp.zeros(3); svm.SVC()") == ()


def test_bindings_in_branches_loops_and_try_do_not_hide_later_reads():
    assert names("if flag:\n    y = 1\nprint(y)") == ("flag", "print", "y")
    assert names("for i in items:\n    total = i\ntotal") == ("items", "total")
    assert names("try:\n    z = f()\nexcept ValueError as e:\n    print(e)\nz") == (
        "f", "ValueError", "print", "z")
    # inside the block, its own earlier bindings count
    assert names("for i in items:\n    j = i * 2\n    use(j)") == ("items", "use")


def test_scopes_of_functions_lambdas_and_comprehensions():
    assert names("def f(a, b=default):\n    c = a + b\n    return c + scale\nf(1)") == (
        "default", "scale")
    assert names("g = lambda v: v * factor\ng(2)") == ("factor",)
    assert names("[row * k for row in rows if row > limit]") == ("rows", "limit", "k")
    assert names("{k: v for k, v in pairs.items()}") == ("pairs",)
    assert target_names("[row for row in rows]").attributes == {}
    assert names("def f():\n    global counter\n    counter = counter + 1\nf()") == ("counter",)


def test_walrus_with_and_match():
    assert names("if (n := len(data)) > 3:\n    print(n)") == ("len", "data", "print")
    assert names("with open(path) as fh:\n    fh.read()") == ("open", "path")
    assert names("match command:\n    case Point(x=0):\n        show(x)\n    case other:\n        other") == (
        "command", "Point", "show", "x")


def test_ipython_syntax_and_cells_that_do_not_parse():
    found = target_names("%matplotlib inline\nfiles = !ls data\nplt.plot(x)\ndf?")
    assert found.names == ("plt", "x")
    assert "files" in found.bound
    assert target_names("%%bash\necho $HOME").names == ()
    broken = target_names("model.fit(X_train,\n    y_train")
    assert not broken.parsed
    assert broken.names == ("model", "X_train", "y_train")
    assert broken.attributes == {"model": ("fit",)}


def test_bound_lists_every_binding_so_absent_names_are_not_called_undefined():
    found = target_names("def helper():\n    return 1\nif c:\n    late = helper()\nprint(late)")
    assert {"helper", "late"} <= found.bound
    assert "late" in found.names  # may come from the kernel (the branch may not run)


@settings(max_examples=200)
@given(st.text(max_size=200))
def test_any_text_gives_names_or_tokens_never_an_exception(source):
    found = target_names(source)
    assert all(isinstance(n, str) and n.isidentifier() for n in found.names)


@pytest.mark.parametrize("source", ["", "\n\n", "# only a comment", "pass"])
def test_cells_that_read_nothing(source):
    assert names(source) == ()
