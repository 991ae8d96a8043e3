"""An environment from a snapshot is data: it cannot install code from a URL, point the
installer at another index, write lines into a Dockerfile, or make `env create` remove a
folder it did not make."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from junobench.data.snapshot import sample_path
from junobench.envs import installer
from junobench.envs.create import MANIFEST, create_environment, recover_environment
from junobench.envs.environment import packaged, parse_lock, parse_requirements
from junobench.envs.installer import current_python
from junobench.envs.pins import lock_text, parse_pins
from junobench.errors import JunoBenchError
from junobench.selection import select
from tests.cli_run import run_cli

HASH = "--hash=sha256:" + "a" * 64


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    target = tmp_path / "snapshot"
    shutil.copytree(sample_path(), target)
    return target


@pytest.fixture
def listener():
    """A local HTTP server that records every request (a host a snapshot might name)."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def own_environment(root: Path, spec: dict[str, object], requirements: str, lock: str | None = None) -> Path:
    folder = root / "environment"
    folder.mkdir(exist_ok=True)
    spec = {"name": "own", "python": "3.10", "requirements": "requirements.in", **spec}
    (folder / "requirements.in").write_text(requirements)
    if lock is not None:
        spec["lock"] = "lock.txt"
        (folder / "lock.txt").write_text(lock)
    (folder / "environment.json").write_text(json.dumps(spec))
    return folder


# --------------------------------------------------------------------------- requirement lines

PINS = "numpy==1.26.4\npandas==2.1.4\n"


@pytest.mark.parametrize(("requirements", "lock", "file", "line"), [
    ("{url}/evil-1.0.tar.gz\n", None, "requirements.in", 1),
    (PINS + "evil @ {url}/evil-1.0.tar.gz\n", None, "requirements.in", 3),
    ("git+{url}/evil.git\n", None, "requirements.in", 1),
    ("-e git+{url}/evil.git#egg=evil\n", None, "requirements.in", 1),
    ("--index-url {url}/simple\n" + PINS, None, "requirements.in", 1),
    (PINS + "--extra-index-url={url}/simple\n", None, "requirements.in", 3),
    ("-f {url}/links\n", None, "requirements.in", 1),
    ("-r {url}/more.txt\n", None, "requirements.in", 1),
    ("./vendor/evil\n", None, "requirements.in", 1),
    ("pandas>=2\n", None, "requirements.in", 1),  # open, and no lock pins it
    (PINS, "--index-url {url}/simple\nnumpy==1.26.4\npandas==2.1.4\n", "lock.txt", 1),
    (PINS, "numpy==1.26.4\n  # via x\npandas==2.1.4 \\\n    --trusted-host {url}\n", "lock.txt", 3),
    (PINS, "numpy==1.26.4\npandas @ {url}/pandas.whl\n", "lock.txt", 2),
    (PINS, f"numpy==1.26.4 \\\n    {HASH}\npandas==2.1.4\n", "lock.txt", 3),  # hashed or not at all
])
def test_a_snapshot_environment_that_is_not_pins_is_refused_with_file_and_line(
        sample_copy, listener, tmp_path, capsys, requirements, lock, file, line):
    url, seen = listener
    own_environment(sample_copy, {}, requirements.format(url=url),
                    None if lock is None else lock.format(url=url))
    env_dir = tmp_path / "env"
    code, _, err = run_cli(capsys, "env", "create", str(env_dir), "--source", str(sample_copy))
    assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert f"environment/{file}: line {line}:" in err
    code, _, err = run_cli(capsys, "env", "dockerfile", "--source", str(sample_copy), "--out", str(tmp_path / "ctx"))
    assert code == 1 and f"environment/{file}: line {line}:" in err
    assert seen == [] and not env_dir.exists() and not (tmp_path / "ctx").exists()


def test_pins_markers_and_hashes_are_read_and_written_again_without_anything_else():
    text = (f"# comment\nnumpy==1.26.4 ; python_version < '3.12' {HASH}  # why\n"
            f"pandas==2.1.4 \\\n    {HASH} \\\n    --hash=sha256:{'b' * 64}\n    # via x\n")
    pins = parse_pins(text, hashes=True)
    assert [str(p) for p in pins] == ['numpy==1.26.4 ; python_version < "3.12"', "pandas==2.1.4"]
    digest = HASH.split("=", 1)[1]
    assert pins[0].hashes == (digest,) and pins[1].hashes == (digest, "sha256:" + "b" * 64)
    assert parse_lock(lock_text(pins)) == {"numpy": "1.26.4", "pandas": "2.1.4"}
    assert parse_requirements("ipykernel>=6.20\nnumpy==1.26.4\n") == ({"numpy": "1.26.4"}, ["ipykernel>=6.20"])


def test_an_open_requirement_is_installed_at_the_lock_s_pin(sample_copy):
    own_environment(sample_copy, {}, "numpy==1.26.4\nipykernel>=6.20\n", "numpy==1.26.4\nipykernel==6.29.5\n")
    selection = select(sample_copy, ["NBspecific_2"])
    assert "ipykernel==6.29.5" in selection.requirements


def test_the_packaged_lock_is_hashed_and_installs_check_hashes_and_take_wheels_only(tmp_path, monkeypatch):
    env = packaged()
    assert env.hashed and env.lock_text.count("--hash=sha256:") > len(env.locked)
    commands: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(installer, "run", lambda command, what: commands.append(("run", list(command))) or "")
    monkeypatch.setattr(installer, "run_build",
                        lambda command, what, **_: commands.append(("build", list(command))) or "")
    python, req, lock = Path("/p/python"), tmp_path / "r.txt", tmp_path / "c.txt"
    installer.install(python, req, lock, "uv", exclude_newer="2025-07-01", require_hashes=True)
    installer.install(python, req, lock, None)
    installer.install(python, req, lock, "uv", allow_build=True)
    (how1, uv), (how2, pip), (how3, build) = commands
    assert how1 == how2 == "run" and how3 == "build"
    assert "--no-build" in uv and "--require-hashes" in uv and uv[uv.index("-c") + 1] == str(lock)
    assert pip[pip.index("--only-binary") + 1] == ":all:"
    assert "--no-build" not in build and "--require-hashes" not in build
    for command in (uv, pip, build):  # no index of any file: only the user's configuration
        assert not any(word.startswith(("--index", "--extra-index", "-i", "--find-links", "-f"))
                       for word in command)
    with pytest.raises(JunoBenchError, match="exclude_newer must be an ISO date"):
        installer.install(python, req, lock, "uv", exclude_newer="2025-07-01 --index-url=http://x")


# --------------------------------------------------------------------------- the Dockerfile

@pytest.mark.parametrize(("field", "value"), [
    ("name", "own\nRUN curl x | sh"),
    ("name", "own; id"),
    ("base_image", "python:3.10-slim\nRUN id"),
    ("base_image", "python:3.10-slim AS x"),
    ("published_image", "x\nRUN id"),
    ("published_image", "x y"),
    ("exclude_newer", "2025-07-01; curl x | sh"),
    ("exclude_newer", "2025-07-01\nRUN id"),
    ("exclude_newer", "yesterday"),
    ("python", "3.10\nRUN id"),
])
def test_a_value_that_is_not_of_its_grammar_never_reaches_the_dockerfile(sample_copy, tmp_path, capsys,
                                                                          field, value):
    own_environment(sample_copy, {field: value}, PINS + "ipykernel==6.29.5\n")
    out = tmp_path / "ctx"
    code, _, err = run_cli(capsys, "env", "dockerfile", "--source", str(sample_copy), "--out", str(out))
    assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "environment/environment.json" in err and (field in err or "python must be" in err)
    assert not out.exists()


def test_a_good_own_environment_makes_a_dockerfile_of_only_its_values(sample_copy, tmp_path, capsys):
    own_environment(sample_copy, {"base_image": "ghcr.io/o/py:3.10", "exclude_newer": "2025-01-02T00:00:00Z"},
                    PINS + "ipykernel==6.29.5\n")
    out = tmp_path / "ctx"
    code, _, err = run_cli(capsys, "env", "dockerfile", "NBspecific_2", "--source", str(sample_copy),
                           "--out", str(out))
    assert code == 0, err
    text = (out / "Dockerfile").read_text()
    assert "FROM ghcr.io/o/py:3.10\n" in text and "--exclude-newer 2025-01-02T00:00:00Z \\" in text
    assert "--require-hashes" not in text  # its lock has no hashes (it has none at all)
    code, _, err = run_cli(capsys, "env", "dockerfile", "--source", str(sample_copy), "--out", str(tmp_path / "c2"),
                           "--junobench-version", "1.0\nRUN id")
    assert code == 1 and "--junobench-version must be a version" in err


@pytest.mark.parametrize(("spec", "problem"), [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"name": "own", "python": "3.10", "requirements": "requirements.in", "platform": ["x"]}',
     "unknown platform"),
], ids=["nested", "platform-list"])
def test_an_environment_json_of_another_shape_is_one_error(sample_copy, tmp_path, capsys, spec, problem):
    folder = own_environment(sample_copy, {}, PINS + "ipykernel==6.29.5\n")
    (folder / "environment.json").write_text(spec)
    code, _, err = run_cli(capsys, "env", "dockerfile", "--source", str(sample_copy), "--out", str(tmp_path / "ctx"))
    assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "environment/environment.json" in err and problem in err


def test_an_environment_folder_linked_out_of_the_snapshot_is_not_read(sample_copy, tmp_path, capsys,
                                                                      monkeypatch):
    (tmp_path / "elsewhere").mkdir()
    outside = own_environment(tmp_path / "elsewhere", {"name": "outside"}, "numpy==1.0\nipykernel==6.29.5\n")
    shutil.rmtree(sample_copy / "environment")
    (sample_copy / "environment").symlink_to(outside)
    out = tmp_path / "ctx"
    code, _, err = run_cli(capsys, "env", "dockerfile", "--source", str(sample_copy), "--out", str(out))
    assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "environment: a link out of the snapshot" in err
    assert not out.exists()
    from junobench.data import digests
    from junobench.data.snapshot import fingerprint

    read: list[str] = []
    real = digests._read_digest
    monkeypatch.setattr(digests, "_read_digest", lambda path: read.append(str(path)) or real(path))
    first = fingerprint(sample_copy)  # the cache key records the link, and reads nothing through it
    through = [p for p in read if p.startswith((str(outside.parent), str(sample_copy / "environment")))]
    assert read and not through
    (outside / "requirements.txt").write_text("numpy==2.0\n")
    assert fingerprint(sample_copy) == first


# --------------------------------------------------------------------------- env create's folder

def test_a_stale_journal_never_removes_a_folder_env_create_did_not_make(tmp_path, capsys):
    user_env = tmp_path / "venv"
    user_env.mkdir()
    (user_env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (user_env / "mine.txt").write_text("keep")
    journal = tmp_path / ".venv.building"
    # a foreign journal (another program's, or an older junobench's)
    journal.write_text("building venv; the environment it replaces is kept beside it\n")
    code, _, err = run_cli(capsys, "env", "create", str(user_env), "--source", "sample")
    assert code == 1 and "is not a journal of `env create`" in err and len(err.splitlines()) == 1
    assert (user_env / "mine.txt").read_text() == "keep" and journal.exists()
    # a journal of env create whose folder was replaced since by the user's own
    journal.write_text(json.dumps({"writer": "junobench env create", "dest": "venv",
                                   "made": [user_env.stat().st_dev, user_env.stat().st_ino + 1],
                                   "emptied": None}))
    assert recover_environment(user_env) == []
    assert (user_env / "mine.txt").read_text() == "keep" and not journal.exists()
    # and the user's folder is then refused, not replaced
    code, _, err = run_cli(capsys, "env", "create", str(user_env), "--source", "sample")
    assert code == 1 and "not a junobench environment" in err
    assert sorted(p.name for p in user_env.iterdir()) == ["mine.txt", "pyvenv.cfg"]


def test_recovery_removes_what_its_journal_says_it_made(tmp_path):
    made = tmp_path / "env"
    made.mkdir()
    (made / "pyvenv.cfg").write_text("half-built")
    info = made.stat()
    journal = tmp_path / ".env.building"
    journal.write_text(json.dumps({"writer": "junobench env create", "dest": "env",
                                   "made": [info.st_dev, info.st_ino], "emptied": None}))
    assert recover_environment(made) == [made]
    assert not made.exists() and not journal.exists()
    # a folder that was empty and given to env create is emptied, not removed
    made.mkdir()
    (made / "half").mkdir()
    info = made.stat()
    journal.write_text(json.dumps({"writer": "junobench env create", "dest": "env",
                                   "made": None, "emptied": [info.st_dev, info.st_ino]}))
    assert recover_environment(made) == [made] and made.is_dir() and not any(made.iterdir())
    # killed between making the folder and noting which it is: removed only while empty
    making = json.dumps({"writer": "junobench env create", "dest": "env", "made": None,
                         "emptied": None, "making": True})
    journal.write_text(making)
    assert recover_environment(made) == [made] and not made.exists()
    made.mkdir()
    (made / "user.txt").write_text("keep")  # not empty: not what the create made
    journal.write_text(making)
    assert recover_environment(made) == [] and not journal.exists()
    assert (made / "user.txt").read_text() == "keep"


@pytest.mark.kernel
def test_two_creates_into_one_folder_do_not_overlap(tmp_path):
    """The second create fails at once with one error while the first holds the lock; the
    first finishes, and the folder is its environment."""
    target = tmp_path / "env"
    python = str(current_python())
    hold = ("import sys, time; from junobench.envs import create\n"
            "real = create._create\n"
            "def slow(*a, **k):\n"
            "    print('locked', flush=True); time.sleep(float(sys.argv[2])); return real(*a, **k)\n"
            "create._create = slow\n"
            "from junobench.selection import select\n"
            "create.create_environment(sys.argv[1], select('sample', ['NBspecific_2']), "
            "python=sys.argv[3])\n"
            "print('done', flush=True)\n")
    first = subprocess.Popen([sys.executable, "-c", hold, str(target), "3", python], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "locked"
        second = subprocess.run([sys.executable, "-m", "junobench", "env", "create", str(target), "NBspecific_2",
                                 "--source", "sample", "--python", python], capture_output=True, text=True, timeout=120,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert second.returncode == 1, second.stderr
        assert second.stderr.startswith("error: ") and "another `env create`" in second.stderr
        assert len(second.stderr.splitlines()) == 1
        assert first.wait(timeout=600) == 0 and first.stdout.readline().strip() == "done"
    finally:
        if first.poll() is None:
            first.kill()
    assert (target / MANIFEST).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["env"]  # no lock or journal left
    again = create_environment(target, select("sample", ["NBspecific_2"]), python=python)
    assert again.reused


@pytest.mark.parametrize("line", [
    "--index-url http://127.0.0.1:9/simple", "evil @ http://127.0.0.1:9/e.tar.gz", "git+http://x/y",
    "pandas==2.1.4\n--index-url x", "pandas==2.1.4 --hash=sha256:" + "a" * 64, "pandas>=2", 7,
])
def test_a_case_s_requirements_from_an_export_are_pins_or_refused(monkeypatch, tmp_path, line):
    from junobench import selection

    rows = [{"case_id": "pandas_1", "requirements": ["numpy==1.26.4"]},
            {"case_id": "pandas_2", "requirements": ["numpy==1.26.4", line]}]
    monkeypatch.setattr(selection, "_cases", lambda *args: rows)
    with pytest.raises(JunoBenchError, match="is not a pin") as error:
        select("sample", ["pandas_1", "pandas_2"])
    assert error.value.problem_.case == "pandas_2"
    rows[1]["requirements"] = ["numpy==1.26.4", "pandas==2.1.4"]
    assert "pandas==2.1.4" in select("sample", ["pandas_1", "pandas_2"]).requirements


@pytest.mark.kernel
@pytest.mark.parametrize("installer_name", ["uv", "pip"])
def test_a_file_whose_hash_is_not_the_lock_s_is_not_installed(sample_copy, tmp_path, monkeypatch,
                                                              installer_name):
    """The lock of a snapshot's own environment names wrong hashes for numpy: the install
    fails and no environment is left, with uv and with pip."""
    if installer_name == "pip":
        monkeypatch.setenv("JUNOBENCH_NO_UV", "1")
    env = packaged()
    pins = parse_pins(env.lock_text, hashes=True)
    bad = [p if p.name != "numpy" else type(p)(p.name, p.version, p.marker, ("sha256:" + "0" * 64,), p.line)
           for p in pins]
    folder = own_environment(sample_copy, {"exclude_newer": "2025-07-01"},
                             env.requirements_file.read_text(), lock_text(bad))
    assert "numpy" in (folder / "lock.txt").read_text()
    target = tmp_path / "env"
    with pytest.raises(JunoBenchError, match=r"(?i)hash"):
        create_environment(target, select(sample_copy, ["NBspecific_2"]), python=str(current_python()))
    assert not target.exists()


def test_pins_without_wheels_stop_env_create_before_anything_is_made(tmp_path, capsys):
    target = tmp_path / "env"
    code, _, err = run_cli(capsys, "env", "create", str(target), "--all", "--source", "sample")
    assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1
    assert "fasttext==0.9.3" in err and "--allow-build" in err
    assert not target.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- installer configuration

@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.parametrize("installer_name", ["uv", "pip"])
def test_uv_and_pip_configuration_in_the_snapshot_and_the_working_directory_is_not_obeyed(
        tmp_path, monkeypatch, listener, installer_name):
    """A snapshot (and the folder `env create` runs in) holds a uv.toml, a pip.conf and a
    pyproject.toml [tool.uv] naming a local index: the environment is made from the user's
    own configuration, and that index receives no request."""
    from junobench.data.checkout import checkout

    url, seen = listener
    if installer_name == "pip":
        monkeypatch.setenv("JUNOBENCH_NO_UV", "1")
    snapshot = checkout(["NBspecific_2"], "sample", tmp_path / "snapshot")
    hostile = {
        "uv.toml": f'python-install-mirror = "{url}/python"\n\n[[index]]\nurl = "{url}/uv-index"\ndefault = true\n'
                   f'\n[pip]\nindex-url = "{url}/uv-pip"\n',
        "pip.conf": f"[global]\nindex-url = {url}/pip-index\nextra-index-url = {url}/pip-extra\n",
        "pyproject.toml": f'[project]\nname = "x"\nversion = "0"\n\n[tool.uv]\nindex-url = "{url}/pyproject"\n'
                          f'extra-index-url = ["{url}/pyproject-extra"]\n',
    }
    for folder in (snapshot, snapshot / "environment"):
        for name, text in hostile.items():
            (folder / name).write_text(text)
    monkeypatch.chdir(snapshot / "environment")  # the working directory holds them too, and its parent
    monkeypatch.delenv("UV_CONFIG_FILE", raising=False)
    made = create_environment(tmp_path / "env", select("..", ["NBspecific_2"]), python=str(current_python()))
    assert made.path.is_dir() and (made.path / "bin" / "python").exists()
    assert seen == [], f"the snapshot's index got requests: {seen[:5]}"
