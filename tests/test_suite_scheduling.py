"""How ``make test`` spreads the suite over its pytest-xdist workers (tests/conftest.py)."""

from __future__ import annotations

import pytest

from conftest import RAY_MODULES, pytest_collection_modifyitems, pytest_xdist_make_scheduler


def test_the_ray_modules_run_as_one_unit_and_every_other_module_whole(request, monkeypatch):
    pytest.importorskip("xdist")
    monkeypatch.setattr(request.config.option, "dist", "loadfile", raising=False)
    monkeypatch.setattr(request.config.option, "tx", ["2*popen"], raising=False)  # as with -n 2
    scheduler = pytest_xdist_make_scheduler(request.config, None)
    unit = scheduler._split_scope  # what xdist hands to one worker at a time
    assert {unit(f"{m}::test_x[a-b]") for m in RAY_MODULES} == {"ray"}
    assert unit("tests/test_stats.py::test_a") == unit("tests/test_stats.py::test_b[1]") == "tests/test_stats.py"
    assert unit("tests/test_envs.py::test_a") == "tests/test_envs.py"
    monkeypatch.setattr(request.config.option, "dist", "load")
    assert pytest_xdist_make_scheduler(request.config, None) is None  # other modes: xdist's own


class _Item:
    def __init__(self, nodeid: str, fixtures: tuple[str, ...] = (), marks: tuple[str, ...] = ()) -> None:
        self.nodeid, self.fixturenames, self.marks = nodeid, fixtures, [getattr(pytest.mark, m) for m in marks]

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.marks.append(mark)

    def get_closest_marker(self, name: str) -> pytest.MarkDecorator | None:
        return next((m for m in self.marks if m.name == name), None)


def test_a_module_that_starts_ray_but_is_not_listed_fails_the_collection(request):
    listed = _Item("tests/test_verify_ray.py::test_a", fixtures=("ray_cluster", "tmp_path"))
    pytest_collection_modifyitems(request.config, [listed, _Item("tests/test_stats.py::test_b")])
    assert listed.get_closest_marker("ray") and listed.get_closest_marker("slow")
    for item in (_Item("tests/test_new.py::test_c", fixtures=("ray_cluster",)),
                 _Item("tests/test_new.py::test_d", marks=("ray",))):
        with pytest.raises(pytest.UsageError, match=r"tests/test_new\.py start\(s\) Ray: add it to RAY_MODULES"):
            pytest_collection_modifyitems(request.config, [listed, item])
