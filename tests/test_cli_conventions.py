"""The command line's conventions: one version, one exit rule (0 success, 1 any error,
usage errors included) with one ``error:`` line naming the command."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import junobench
from junobench.cli import main

REPO = Path(__file__).resolve().parent.parent


def test_the_version_has_one_source():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'(?m)^version = "([^"]+)"$', pyproject)[1]
    assert version("junobench") == declared
    assert junobench.__version__ == declared
    done = subprocess.run([sys.executable, "-m", "junobench", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0
    assert done.stdout == f"junobench {declared}\n"


@pytest.mark.parametrize(("argv", "command", "problem"), [
    ([], "junobench", "the following arguments are required: VERB"),
    (["frobnicate"], "junobench", "invalid choice: 'frobnicate'"),
    (["ls", "--bogus"], "junobench ls", "unrecognized arguments: --bogus"),
    (["ls", "--format", "xml"], "junobench ls", "argument --format: invalid choice: 'xml'"),
    (["show"], "junobench show", "the following arguments are required"),
    (["evaluate"], "junobench evaluate", "the following arguments are required"),
    (["construct"], "junobench construct", "the following arguments are required: STEP"),
    (["construct", "filter", "labels.xlsx"], "junobench construct filter",
     "the following arguments are required: --out"),
    (["construct", "filter", "labels.xlsx", "--out", "o.xlsx", "--bogus"], "junobench construct filter",
     "unrecognized arguments: --bogus"),
])
def test_usage_errors_exit_1_with_one_error_line(argv, command, problem, capsys):
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {command}: ")
    assert problem in lines[0]
    assert lines[0].endswith(f"(see `{command} --help`)")


def test_bad_input_exits_1_with_one_error_line(tmp_path, capsys):
    assert main(["ls", "--source", str(tmp_path / "nowhere")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("error: ")


def test_the_process_exit_status_is_1_for_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "junobench", "ls", "--bogus"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith("error: junobench ls: unrecognized arguments: --bogus")
    assert "Traceback" not in done.stderr


def test_help_still_exits_0(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["ls", "--help"])
    assert stop.value.code == 0
    assert "usage: junobench ls" in capsys.readouterr().out


def _commands() -> list[list[str]]:
    """Every verb and sub-verb of the CLI, as the words that name it."""
    import argparse

    from junobench.cli import build_parser

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> list[list[str]]:
        found = [words]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += walk(sub, [*words, name])
        return found

    return walk(build_parser(), [])


@pytest.mark.parametrize("words", _commands(), ids=lambda words: " ".join(words) or "junobench")
def test_every_command_prints_its_help(words, capsys):
    """`junobench … --help` of every command prints its usage (a help text with a bare
    ``%``, which argparse reads as a format, made it crash)."""
    with pytest.raises(SystemExit) as stop:
        main([*words, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: junobench {' '.join(words)}".rstrip())


@pytest.mark.parametrize("argv", [["stats", "--source", "sample", "--format", "json"],
                                  ["ls", "--source", "sample", "--format", "csv"]])
def test_a_reader_that_goes_away_ends_the_output_quietly(argv):
    """`junobench stats --format json | head -1`: the closed pipe is the reader's choice,
    so no traceback and no error status."""
    process = subprocess.Popen([sys.executable, "-m", "junobench", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line is written
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err


@pytest.mark.parametrize(("argv", "status"), [
    (["export", "--source", "sample", "--out", "{tmp}/export"], "exported 10 cases and 20 notebooks"),
    (["build", "--source", "sample"], "cases      10"),
    (["tasks", "--source", "sample", "--library", "pandas", "--out", "{tmp}/t.jsonl"], "wrote 4 tasks"),
    (["checkout", "pandas_1", "--source", "sample", "--dest", "{tmp}/one"], "checked out 1 case(s)"),
    (["env", "dockerfile", "pandas_1", "--source", "sample", "--out", "{tmp}/ctx"], "wrote "),
    (["construct", "renumber", "{tmp}/one"], "nothing to renumber"),
])
def test_a_verb_that_writes_files_prints_its_status_on_stderr_only(argv, status, tmp_path, capsys):
    """stdout holds a verb's data: a verb whose work is writing files leaves it empty, so
    that `junobench VERB ... > file` or a pipe sees no status lines."""
    if argv[0] == "construct":
        assert main(["checkout", "pandas_1", "--source", "sample", "--dest", str(tmp_path / "one")]) == 0
        capsys.readouterr()
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == "" and status in err


LONG = "x" * 300  # past any file system's limit on one name (255 bytes)


@pytest.mark.parametrize("argv", [
    ["ls", "--source", f"/tmp/{LONG}"], ["validate", f"/tmp/{LONG}"], ["check", f"/tmp/{LONG}"],
    ["export", "--source", "sample", "--out", "{tmp}/" + LONG], ["stats", "--source", f"/tmp/{LONG}"],
])
def test_a_path_the_system_refuses_is_one_error_line_naming_it(argv, tmp_path, capsys):
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: ") and err.count("\n") == 1, err
    assert err.rstrip().endswith(": File name too long") and "xxxx…" in err
