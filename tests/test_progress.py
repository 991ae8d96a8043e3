"""Progress is for a person at a terminal: the long verbs show it when stderr is a terminal
and say nothing of it when stderr is piped (a log file, CI), where only the status lines
remain. stdout carries the verb's data in both cases."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from junobench.data.snapshot import sample_path
from junobench.data.tables import write_table
from junobench.envs.installer import current_python

pytest.importorskip("nbclient", reason="the kernels need the run extra")

BAR = re.compile(r"\b1/1 \[")  # tqdm's bar: "verify: 100%|██████████| 1/1 [00:03<00:00, ...]"


def run(argv: list[str], *, terminal: bool, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``junobench ARGV`` with stderr a pseudo-terminal
    (``terminal``) or a pipe (and ``env`` added to the environment); stdout is a pipe
    either way."""
    command = [sys.executable, "-m", "junobench", *argv]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=cwd,
                              env={**os.environ, **(env or {})})
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal's size
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, cwd=cwd,
                               env={**os.environ, **(env or {})})
    os.close(follower)
    shown = bytearray()
    while True:
        ready, _, _ = select.select([leader], [], [], 900)
        if not ready:
            process.kill()
            raise AssertionError(f"no output for 900 s: {bytes(shown)[-2000:]!r}")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: the process ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    return process.wait(timeout=60), out, shown.decode(errors="replace")


@pytest.mark.kernel
def test_env_create_tells_each_step_on_a_terminal_only(tmp_path):
    python = str(current_python())
    code, out, err = run(["env", "create", str(tmp_path / "shown"), "NBspecific_2", "--source", "sample",
                          "--python", python], terminal=True, cwd=tmp_path)
    assert code == 0, err
    assert out == ""
    steps = [line for line in err.splitlines() if line.startswith("... ")]
    assert [s.split()[1] for s in steps] == ["making", "installing", "installing"], err
    assert "3 requirements with uv" in steps[1] and "kernelspec" in steps[2]
    assert "created with" in err
    # Piped, the same create says nothing of its steps: here it starts the first (making the
    # virtual environment) and fails in it (uv offline with an empty cache), which is quicker
    # than a second environment and ends in the error line alone.
    offline = {"UV_OFFLINE": "1", "UV_CACHE_DIR": str(tmp_path / "empty-cache")}
    code, out, err = run(["env", "create", str(tmp_path / "piped"), "NBspecific_2", "--source", "sample",
                          "--python", python], terminal=False, cwd=tmp_path, env=offline)
    assert code == 1 and out == ""
    assert err.startswith("error: creating a virtual environment") and len(err.splitlines()) == 1, err
    assert "... " not in err and not (tmp_path / "piped").exists()


@pytest.mark.kernel
@pytest.mark.parametrize("verb", ["verify", "runtime-info"])
def test_a_bar_on_a_terminal_and_none_when_piped(verb, tmp_path):
    argv = [verb, "NBspecific_2", "--source", "sample", "--jobs", "1"]
    if verb == "runtime-info":
        argv += ["--out", "runtime.jsonl", "--version", "reproduced"]
    code, out, err = run(argv, terminal=True, cwd=tmp_path)
    assert code == 0, err
    assert BAR.search(err), err
    if verb == "verify":
        assert out.splitlines()[0].startswith("case_id")  # the verdicts are the data
    (tmp_path / "runtime.jsonl").unlink(missing_ok=True)
    code, out, err = run(argv, terminal=False, cwd=tmp_path)
    assert code == 0, err
    assert not BAR.search(err), err
    if verb == "runtime-info":
        assert out == "" and "wrote 1 records to runtime.jsonl" in err


@pytest.mark.kernel
def test_construct_reproduce_shows_a_bar_on_a_terminal_only(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    original = sample_path() / "benchmark/NBspecific_2/NBspecific_2.ipynb"
    shutil.copy(original, notebooks / "NBspecific_2.ipynb")
    error = next(o for cell in json.loads(original.read_text())["cells"] for o in cell.get("outputs", [])
                 if o["output_type"] == "error")
    write_table(tmp_path / "sampled.xlsx", [{"fname": "NBspecific_2.ipynb", "eid": "e-1",
                                             "ename": error["ename"].lower(), "evalue": error["evalue"]}],
                ["fname", "eid", "ename", "evalue"])
    argv = ["construct", "reproduce", "sampled.xlsx", "--notebooks", "notebooks", "--jobs", "1"]
    code, out, err = run([*argv, "--out", "shown.xlsx"], terminal=True, cwd=tmp_path)
    assert code == 0, err
    assert out == "" and BAR.search(err) and "wrote 1 rows to shown.xlsx" in err
    code, out, err = run([*argv, "--out", "piped.xlsx"], terminal=False, cwd=tmp_path)
    assert code == 0, err
    assert out == "" and not BAR.search(err) and "wrote 1 rows to piped.xlsx" in err


def _steps(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("... ")]


def test_release_tells_each_step_on_a_terminal_only(tmp_path):
    from hub_server import HubServer

    snapshot = tmp_path / "bench"
    shutil.copytree(sample_path(), snapshot)
    argv = ["release", str(snapshot), "--repo-id", "someone/bench", "--version", "1.0.0", "--date", "2026-01-02",
            "--dry-run"]
    with HubServer(token="hf_junobenchProgressToken12345678") as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf-home"),
               "HF_TOKEN": "hf_junobenchProgressToken12345678", "JUNOBENCH_CACHE": str(tmp_path / "cache")}
        code, shown_out, err = run(argv, terminal=True, cwd=tmp_path, env=env)
        assert code == 0, err
        steps = _steps(err)
        assert [s.split()[1] for s in steps[:4]] == ["validating", "reading", "comparing", "exporting"], err
        assert "someone/bench" in steps[1]
        code, piped_out, err = run(argv, terminal=False, cwd=tmp_path, env=env)
        assert code == 0, err
        assert _steps(err) == [] and piped_out == shown_out  # the report is the data, the same either way
        code, _, err = run([*argv, "--no-progress"], terminal=True, cwd=tmp_path, env=env)
        assert code == 0 and _steps(err) == [], err


@pytest.mark.kernel
def test_add_case_tells_each_step_on_a_terminal_only(tmp_path):
    from snapshot_files import variant

    snapshot = tmp_path / "bench"
    shutil.copytree(sample_path(), snapshot)
    def argv(name: str) -> list[str]:
        new = {v: variant(sample_path() / "benchmark" / "pandas_1" / f"pandas_1{'' if v == 'original' else '_' + v}"
                          ".ipynb", tmp_path / name, name) for v in ("original", "reproduced", "fixed")}
        return ["construct", "add-case", str(snapshot), str(new["original"]), "--reproduced", str(new["reproduced"]),
                "--fixed", str(new["fixed"]), "--library", "pandas", "--root-cause", "data confusion",
                "--crash-type", "key error", "--stage", "data preparation", "--diagnosis", "A column misnamed.",
                "--dataset", "name=passengers;title=P;license=CC0", "--data",
                f"passengers={sample_path() / 'benchmark' / 'pandas_1' / 'data' / 'passengers.csv'}",
                "--allow-similar"]

    code, _, err = run(argv("shown"), terminal=True, cwd=tmp_path)  # the pair is run: the longest step
    assert code == 0, err
    steps = _steps(err)
    assert [s.split()[1] for s in steps] == ["copying", "comparing", "running"], err
    assert "pandas_3" in steps[0] and "(reproduced, then fixed)" in steps[2]
    code, _, err = run([*argv("piped"), "--no-verify"], terminal=False, cwd=tmp_path)
    assert code == 0, err
    assert _steps(err) == [] and "added pandas_4" in err
