"""Every ``junobench`` command the README and the documentation show is one the CLI
accepts as written (a documented option that argparse would refuse, such as ``--name
"-RT"``, fails here), and the commands that compare published runs run as written on the
reference data, printing what the page says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from cli_run import run_cli

from junobench.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: Shell words that end one command of a line (``a && b``, ``a | b``, ``a > file``).
_ENDS = {"&&", "||", ";", "|", ">", ">>", "2>", "&"}


def documented_commands() -> list[tuple[str, list[str]]]:
    """``(where, argv)`` of every ``junobench`` command in the pages' shell blocks
    (continuation lines joined; a ``$ `` prompt marks the commands of a block that also
    shows output; commands with ``…``/``...`` elisions, ``<placeholders>`` or ``[--optional]``
    parts are sketches
    and left out, as are those whose words a shell array gives, ``"${CASE[@]}"``: the
    construction walkthrough runs them, tests/test_construction_walkthrough.py)."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"^```(?:bash|sh|console)\n(.*?)^```", text, re.M | re.S):
            lines = block.replace("\\\n", " ").splitlines()
            prompted = any(line.startswith("$ ") for line in lines)
            for line in lines:
                if prompted and not line.startswith("$ "):
                    continue
                line = line.removeprefix("$ ")
                if "..." in line or "…" in line.split("#")[0] or re.search(r"<[a-z ]+>|\[@\]|\[--", line):
                    continue
                for argv in _commands(line):
                    found.append((f"{page.name}: {' '.join(argv)}", argv[1:]))
    return found


def _commands(line: str) -> list[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|>")
    lexer.whitespace_split, lexer.commenters = True, "#"
    commands, current = [], []
    for word in lexer:
        if word in _ENDS:
            commands.append(current)
            current = [] if word not in (">", ">>", "2>") else ["(redirect)"]
            continue
        current.append(word)
    commands.append(current)
    out = []
    for words in commands:
        while words and re.match(r"^[A-Z_]+=", words[0]):  # VAR=value junobench …
            words = words[1:]
        if words[:1] == ["junobench"]:
            out.append(words)
    return out


COMMANDS = documented_commands()


def test_the_pages_show_commands_of_every_kind():
    assert len(COMMANDS) > 80
    verbs = {argv[0] for _, argv in COMMANDS}
    assert {"evaluate", "detect", "tasks", "verify", "construct", "judge", "annotate"} <= verbs


@pytest.mark.parametrize("argv", [argv for _, argv in COMMANDS], ids=[where for where, _ in COMMANDS])
def test_every_documented_command_is_accepted_as_written(argv):
    build_parser().parse(argv)  # a usage error is a JunoBenchError: the test fails on it


@pytest.fixture(scope="module")
def published_runs(tmp_path_factory, crane_llm_dir):
    """code.jsonl and runinfo.jsonl: CRANE-LLM's published Qwen runs without and with
    runtime information (its Table 2(b)), as the pages call them."""
    from junobench.detection.layouts import read_predictions
    from junobench.detection.predictions import write_predictions

    folder = tmp_path_factory.mktemp("runs")
    raw = crane_llm_dir / "llms" / "llms_outputs" / "results_raw" / "Qwen_2_5_32B_Instruct"
    for name, setting in (("code", "crash_detection_code"), ("runinfo", "crash_detection_code_runinfo")):
        write_predictions(folder / f"{name}.jsonl", sorted(read_predictions(raw / setting).runs.items()))
    return folder


@pytest.mark.parametrize("page", ["README.md", "crash-detection.md"])
def test_the_minus_rt_comparison_runs_as_written(page, published_runs, reference_snapshot,
                                                 capsys, monkeypatch):
    (_, argv), = [(w, a) for w, a in COMMANDS
                      if w.startswith(f"{page}:") and '"-RT"' not in w and "-RT" in a]
    monkeypatch.chdir(published_runs)
    snapshot = str(reference_snapshot)
    argv = [snapshot if a in ("SNAPSHOT", "$REF/junobench-snapshot") else a for a in argv]
    code, out, err = run_cli(capsys, *argv, "--resamples", "2000")
    assert code == 0, err
    if "latex" in argv:
        assert "-RT" in out and "+RT" in out and r"\begin{tabular}" in out
    else:  # the rows the page shows under the command
        assert re.search(r"^-RT +222 +0\.724 \[0\.663, 0\.798\] +0\.640 \[0\.550, 0\.730\] +"
                         r"0\.679 \[0\.610, 0\.742\]", out, re.M), out
        assert re.search(r"^-RT +\+RT +222 ", out, re.M), out
