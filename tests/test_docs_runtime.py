"""The runtime-information page's example runs as written, in the sample's pinned
environment, and the prompt texts it shows are those the example makes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_construction_walkthrough import run_first_bash_block  # tests/ is on sys.path

from junobench.runtime import runtime_texts

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "runtime-information.md"

pytestmark = [pytest.mark.kernel, pytest.mark.slow]


def shown_text(after: str) -> str:
    """The ``text`` block that follows ``after`` on the page."""
    section = PAGE.read_text(encoding="utf-8").split(after, 1)[1]
    return re.search(r"^```text\n(.*?)^```", section, re.S | re.M).group(1)


def test_the_example_runs_in_the_pinned_environment(tmp_path: Path, sample_env) -> None:
    # its `sample-env` folder is the suite's sample environment (made once): `env create` reuses it
    done = run_first_bash_block(PAGE, "## Example", tmp_path, replace=("sample-env", str(sample_env.path)))
    assert done.stderr.startswith(f"reused: {sample_env.path}")
    assert "wrote 8 records to runtime.jsonl: 8 ok" in done.stderr
    assert "wrote 8 tasks to tasks.jsonl" in done.stderr
    texts = runtime_texts(tmp_path / "runtime.jsonl")
    # the page's prompt text of numpy_1 is the example's, environment line included
    shown = shown_text("In the\nprompt it reads like this")
    made = texts["numpy_1_reproduced"]
    assert made.splitlines()[:-1] == shown.splitlines()[1:-1]
    environment = made.splitlines()[-1]
    assert environment.startswith("Environment: Python 3.10.")
    assert environment.endswith("; numpy 1.26.4; pandas 2.1.4")
    assert shown.splitlines()[-1].endswith("; numpy 1.26.4; pandas 2.1.4")
    assert "matplotlib 3.7.1" in texts["matplotlib_1_reproduced"]
    # the ablation and the CRANE-LLM format
    ablated = [json.loads(line) for line in (tmp_path / "runtime-no-values.jsonl").open()]
    assert [r["categories"] for r in ablated] == [["S", "R"]]
    crane = runtime_texts(tmp_path / "runtime-crane.jsonl")["pandas_1_reproduced"]
    shown_crane = shown_text("On `pandas_1` in the sample's environment:")
    for line in shown_crane.splitlines():
        if line.strip() != "…":
            assert line in crane.splitlines()
