"""Tasks augmented with runtime information: the rules the CLI and the Inspect task share."""

from __future__ import annotations

import json

import pytest

from junobench.detection.augment import lacking_runtime_info, runtime_texts_for, with_runtime_info
from junobench.detection.ids import blind_id, new_key
from junobench.errors import JunoBenchError


def _record(instance: str, status: str = "ok") -> dict:
    return {"instance": instance, "status": status, "undefined": [],
            "objects": {"df": {"S": {"shape": [3, 2]}, "R": {"type": "pandas.DataFrame"}}}}


@pytest.fixture
def info_file(tmp_path):
    path = tmp_path / "runtime.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (
        _record("pandas_1_reproduced"), _record("pandas_1_fixed", status="failed"))))
    return path


def test_texts_of_the_usable_records_only_and_categories_left_out(info_file):
    texts = runtime_texts_for(info_file)
    assert list(texts) == ["pandas_1_reproduced"]  # the failed extraction gives no text
    assert "shape: [3, 2]" in texts["pandas_1_reproduced"]
    without = runtime_texts_for(info_file, ["S"])
    assert "shape" not in without["pandas_1_reproduced"]
    assert "pandas.DataFrame" in without["pandas_1_reproduced"]


def test_no_file_means_no_texts_and_an_exclusion_without_one_is_an_error():
    assert runtime_texts_for(None) is None
    with pytest.raises(JunoBenchError, match="--runtime-exclude needs --runtime-info"):
        runtime_texts_for(None, ["V"])


def test_texts_replace_a_task_s_runtime_info_and_the_input_is_left_alone():
    items = [{"id": "pandas_1_reproduced", "runtime_info": "stale"},
             {"id": "pandas_1_fixed", "runtime_info": "stale"}]
    out = with_runtime_info(items, {"pandas_1_reproduced": "fresh"}, file="t.jsonl")
    assert [t.get("runtime_info") for t in out] == ["fresh", None]
    assert [t["runtime_info"] for t in items] == ["stale", "stale"]
    assert lacking_runtime_info(out) == ["pandas_1_fixed"]


def test_blind_tasks_cannot_be_matched_to_runtime_information():
    items = [{"id": blind_id("pandas_1_reproduced", new_key())}]
    with pytest.raises(JunoBenchError, match="blind tasks") as caught:
        with_runtime_info(items, {"pandas_1_reproduced": "x"}, file="tasks.jsonl")
    assert "tasks.jsonl" in str(caught.value)


def test_the_inspect_task_refuses_an_exclusion_without_a_file():
    pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")
    from junobench.inspect_tasks import crash_detection

    with pytest.raises(JunoBenchError, match="--runtime-exclude needs --runtime-info"):
        crash_detection(source="sample", runtime_exclude="V")
