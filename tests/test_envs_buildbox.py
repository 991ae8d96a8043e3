"""A source distribution built by `env create --allow-build` runs its build code in the
sandbox: it reaches the user's index, writes only into the environment, and sees no file of
the user's home and no variable of the user's."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import os
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from junobench.envs import buildbox
from junobench.envs.installer import current_python, install, make_venv, uv_binary
from junobench.envs.sandbox import SANDBOX_SETTINGS, bwrap_problem
from tests.cli_run import run_cli

SECRET = "s3cret-build-token"

#: A PEP 517 backend in the sdist itself (no setuptools to fetch): the build reads what it
#: can of the user's, tries to write outside the environment, and ships what it saw.
BACKEND = '''
import base64, hashlib, json, os, zipfile

def _probe():
    seen = {"file": None, "env": os.environ.get("JUNOBENCH_TEST_SECRET"), "wrote": []}
    try:
        with open(SECRET_FILE) as handle:
            seen["file"] = handle.read()
    except OSError:
        pass
    for path in MARKERS:
        try:
            with open(path, "w") as handle:
                handle.write("built")
            seen["wrote"].append(path)
        except OSError:
            pass
    return seen

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = "buildprobe-1.0.dist-info/"
    files = {"buildprobe/__init__.py": b"", "buildprobe/report.json": json.dumps(_probe()).encode(),
             info + "METADATA": b"Metadata-Version: 2.1\\nName: buildprobe\\nVersion: 1.0\\n",
             info + "WHEEL": b"Wheel-Version: 1.0\\nGenerator: probe\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(info + "RECORD,,")
    wheel = "buildprobe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(info + "RECORD", "\\n".join(record) + "\\n")
    return wheel
'''
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "probe_backend"\nbackend-path = ["."]\n'
PKG_INFO = "Metadata-Version: 2.1\nName: buildprobe\nVersion: 1.0\n"


def sdist(secret_file: Path, markers: list[Path]) -> bytes:
    backend = f"SECRET_FILE = {str(secret_file)!r}\nMARKERS = {[str(m) for m in markers]!r}\n" + BACKEND
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in (("pyproject.toml", PYPROJECT), ("PKG-INFO", PKG_INFO), ("probe_backend.py", backend)):
            data = text.encode()
            member = tarfile.TarInfo(f"buildprobe-1.0/{name}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home holding a secret, and a secret variable."""
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / ".netrc").write_text(f"machine example.org login me password {SECRET}\n")
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("JUNOBENCH_TEST_SECRET", SECRET)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return folder


@pytest.fixture
def index(tmp_path: Path, home: Path):
    """A local simple index (an HTTP server) holding the probe's sdist."""
    root = tmp_path / "index"
    (root / "simple" / "buildprobe").mkdir(parents=True)
    markers = [home / "marker", tmp_path / "marker"]
    data = sdist(home / ".netrc", markers)
    (root / "simple" / "buildprobe" / "buildprobe-1.0.tar.gz").write_bytes(data)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple", markers, hashlib.sha256(data).hexdigest()
    server.shutdown()
    server.server_close()


@pytest.mark.kernel
@pytest.mark.skipif(bwrap_problem() is not None, reason="bubblewrap cannot run here")
@pytest.mark.parametrize(("tool", "hashed"), [("uv", False), ("uv", True), ("pip", False), ("pip", True)])
def test_a_build_sees_nothing_of_the_user_s_and_writes_only_the_environment(tmp_path, monkeypatch, index, tool,
                                                                            hashed):
    """pip with hashes resolves first (a dry run, which builds too), then installs."""
    url, markers, digest = index
    uv = uv_binary() if tool == "uv" else None
    if tool == "uv" and uv is None:
        pytest.skip("uv is not installed")
    target = tmp_path / "env"
    python = make_venv(target, current_python(), uv)
    requirements = target / "requirements.txt"
    requirements.write_text("buildprobe==1.0\n")
    # the index comes from the user's settings (here variables), never from the snapshot
    monkeypatch.setenv("UV_INDEX_URL", url)
    monkeypatch.setenv("PIP_INDEX_URL", url)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # this machine's pip.conf names local files
    lock = None
    if hashed:
        lock = target / "lock.txt"
        lock.write_text(f"buildprobe==1.0 --hash=sha256:{digest}\n")
    install(python, requirements, lock, uv, allow_build=True, require_hashes=hashed)
    reports = list(target.glob("lib/python*/site-packages/buildprobe/report.json"))
    assert len(reports) == 1, "the sdist was built and installed into the environment"
    seen = json.loads(reports[0].read_text())
    assert seen["file"] is None and seen["env"] is None
    assert SECRET not in reports[0].read_text()
    assert not any(marker.exists() for marker in markers), seen["wrote"]


def test_allow_build_without_a_sandbox_is_refused_before_anything_is_made(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(buildbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    target = tmp_path / "env"
    code, _, err = run_cli(capsys, "env", "create", str(target), "--all", "--source", "sample", "--allow-build")
    assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1
    assert "apt-get install bubblewrap" in err and "--sandbox none" in err
    assert not target.exists()
    unconfined = buildbox.build_sandbox("none")  # what --sandbox none asks for: the command as it is
    assert buildbox.build_argv(["uv", "pip", "install"], unconfined, python="p", folder=str(target),
                               runtime=str(tmp_path), env={}) == (["uv", "pip", "install"], None)


def test_the_build_s_installer_gets_the_user_s_index_settings_but_no_cache_and_no_secret():
    env = {"PATH": "/bin", "UV_INDEX_URL": "https://i/simple", "PIP_EXTRA_INDEX_URL": "https://j/simple",
           "HTTPS_PROXY": "http://p:3128", "UV_CACHE_DIR": "/root/.cache/uv", "AWS_SECRET_ACCESS_KEY": "x",
           "HF_TOKEN": "y"}
    kept = buildbox.installer_environ(env)
    assert kept == {"PATH": "/bin", "UV_INDEX_URL": "https://i/simple", "PIP_EXTRA_INDEX_URL": "https://j/simple",
                    "HTTPS_PROXY": "http://p:3128", "UV_NO_CACHE": "1", "PIP_NO_CACHE_DIR": "1", **SANDBOX_SETTINGS}


@pytest.mark.skipif(bwrap_problem() is not None, reason="bubblewrap cannot run here")
def test_of_the_user_s_home_the_build_sandbox_shows_the_installer_s_configuration_only(tmp_path, home):
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nindex-url = http://127.0.0.1:9/simple\n")
    folder, runtime = tmp_path / "env", tmp_path / "runtime"
    folder.mkdir()
    runtime.mkdir()
    python = Path(sys.executable)
    argv, env = buildbox.build_argv([str(python), "-m", "pip", "install", "x"], buildbox.build_sandbox("auto"),
                                    python=str(python), folder=str(folder), runtime=str(runtime),
                                    env=dict(os.environ))
    shown = {argv[i + 1] for i, word in enumerate(argv) if word in ("--bind", "--ro-bind")}
    assert {p for p in shown if Path(p).is_relative_to(home)} == {str(home / ".config" / "pip")}
    assert "--share-net" in argv and "--die-with-parent" in argv and argv[argv.index("--proc") + 1] == "/proc"
    assert env is not None and env["PIP_CONFIG_FILE"] == str(home / ".config" / "pip" / "pip.conf")
    assert "JUNOBENCH_TEST_SECRET" not in env and env["UV_NO_CACHE"] == "1"
