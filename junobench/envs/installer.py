"""The tools that make environments: uv (fast, cached), else pip; Python interpreters.

uv comes from the ``uv`` package on PyPI (its binary) or the ``PATH``. Where it is absent,
virtual environments are made with the interpreter's ``venv`` and filled with ``pip``.
Every command's output is kept so that a failure can be shown in one line.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from junobench import subprocesses
from junobench.envs.sandbox import Sandbox
from junobench.errors import JunoBenchError
from junobench.safety.grammar import check, is_iso_date

#: How long one install command may run (seconds).
INSTALL_TIMEOUT = 3600

#: Descriptors the tools run here inherit (:func:`inheriting`).
_INHERITED: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar("junobench_inherited", default=())


@contextlib.contextmanager
def inheriting(fd: int) -> Iterator[None]:
    """Let the tools run in the block inherit ``fd``: `env create` passes the lock of the
    folder it builds, so that a tool still running after the create was killed (an
    installer writing into the folder) holds the lock until it ends, and no other create
    cleans the folder up under it. Sandboxed builds do not inherit it: they die with the
    create (bubblewrap's ``--die-with-parent``)."""
    token = _INHERITED.set((*_INHERITED.get(), fd))
    try:
        yield
    finally:
        _INHERITED.reset(token)


def uv_binary() -> str | None:
    """The uv executable: the ``uv`` package's, else one on ``PATH``; None without uv.
    ``JUNOBENCH_NO_UV=1`` hides it (to use pip)."""
    if os.environ.get("JUNOBENCH_NO_UV") == "1":
        return None
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def user_config_only(command: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
    """``command`` (a uv command line) made to read no configuration from the working
    directory or its parents (a snapshot's ``uv.toml``, a ``pyproject.toml [tool.uv]``):
    only the user's own file (``UV_CONFIG_FILE``, ``~/.config/uv/uv.toml``, else the
    system's ``/etc/uv/uv.toml``), else none. Other commands are returned as they are (pip
    reads no configuration from the working directory)."""
    env = os.environ if env is None else env
    if not command or Path(command[0]).name not in ("uv", "uv.exe") or env.get("UV_NO_CONFIG"):
        return list(command)
    from junobench.envs.buildbox import config_files

    files = [file for name, file, _ in config_files(env) if name == "UV_CONFIG_FILE" or file.endswith("uv.toml")]
    return [command[0], *(["--config-file", files[0]] if files else ["--no-config"]), *command[1:]]


def run(command: Sequence[str], *, what: str, cwd: str | Path | None = None,
        env: dict[str, str] | None = None, timeout: float = INSTALL_TIMEOUT, inherit: bool = True) -> str:
    """Run a tool; its stdout, or a :class:`JunoBenchError` quoting its last error line.
    ``inherit``: the tool inherits the descriptors of :func:`inheriting`. uv reads the
    user's configuration only (:func:`user_config_only`)."""
    command = user_config_only(command, env)
    try:
        done = subprocesses.run(list(command), cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=timeout, pass_fds=_INHERITED.get() if inherit else ())
    except FileNotFoundError:
        raise JunoBenchError(f"{what}: {command[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise JunoBenchError(f"{what}: gave no result within {timeout:g} s") from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.lower().startswith(("error", "×", "caused by", "cause:", "╰─▶"))]
        detail = (errors or lines or [f"exit status {done.returncode}"])[-1]
        raise JunoBenchError(f"{what} failed: {detail}")
    return done.stdout


def python_version(executable: str | Path) -> str | None:
    """``major.minor`` of an interpreter, or None when it does not run."""
    try:
        done = subprocess.run([str(executable), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip()
    return text if done.returncode == 0 and text.count(".") == 1 else None


def find_python(version: str) -> Path | None:
    """An interpreter of ``version`` (``3.10``) on this machine: ``pythonX.Y`` on ``PATH``
    (shims that fail are skipped), pyenv's and uv's installations; None when there is none."""
    candidates: list[Path] = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder:
            candidates.append(Path(folder) / f"python{version}")
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True)
    uv = uv_binary()
    if uv is not None:
        try:
            found = run([uv, "python", "find", "--no-python-downloads", version],
                        what="finding Python", timeout=60).strip()
            if found:
                candidates.append(Path(found))
        except JunoBenchError:
            pass
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK) and python_version(path) == version:
            return path
    return None


def current_python() -> Path:
    """The interpreter running junobench (the base one, outside any virtual environment)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return Path(base)


def make_venv(target: Path, python: Path, uv: str | None) -> Path:
    """A new virtual environment at ``target`` on ``python``; returns its interpreter."""
    if uv is not None:
        run([uv, "venv", "--quiet", "--python", str(python), "--seed", str(target)],
            what=f"creating a virtual environment at {target}")
    else:
        run([str(python), "-m", "venv", str(target)], what=f"creating a virtual environment at {target}")
    return venv_python(target)


def venv_python(folder: Path) -> Path:
    """The interpreter of a virtual environment folder."""
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def install(python: Path, requirements: Path, constraints: Path | None, uv: str | None, *,
            exclude_newer: str | None = None, allow_build: bool = False,
            require_hashes: bool = False, sandbox: Sandbox | None = None) -> None:
    """Install ``requirements`` (a file) into the environment of ``python``, every other
    distribution held to ``constraints`` (a lock).

    Wheels only (``--no-build``; pip: ``--only-binary :all:``): a source distribution runs
    its build code, which needs ``allow_build`` and then runs through :func:`run_build`
    in ``sandbox``.
    With ``require_hashes`` every file must match a hash of the lock (pip, which takes no
    hashes from a constraints file, installs what :func:`_pip_choice` resolved, each
    distribution with its hashes). Index options come
    from the user's own configuration only: the files junobench passes hold pins and
    hashes, nothing else (:mod:`junobench.envs.pins`). Modules are compiled to bytecode at
    install time, as pip does (uv does not by default): every kernel of the environment
    would otherwise compile its imports again where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``, a read-only folder), which made verify 2.5x slower."""
    if uv is not None:
        command = [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python),
                   "-r", str(requirements)]
        if constraints is not None:
            command += ["-c", str(constraints)]
        if exclude_newer:
            command += ["--exclude-newer", check(exclude_newer, is_iso_date, field="exclude_newer")]
        if not allow_build:
            command.append("--no-build")
        if require_hashes:  # uv checks the hashes of the constraints too
            command.append("--require-hashes")
    elif require_hashes and constraints is not None:
        hashed = _pip_choice(python, requirements, constraints, allow_build, sandbox)
        command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                   "--require-hashes", "--no-deps", "-r", str(hashed)]
        command += [] if allow_build else ["--only-binary", ":all:"]
    else:
        command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                   "-r", str(requirements)]
        if constraints is not None:
            command += ["-c", str(constraints)]
        if not allow_build:
            command += ["--only-binary", ":all:"]
    what = f"installing {requirements.name} with {'uv' if uv else 'pip'}"
    if allow_build:
        run_build(command, what=what, python=python, sandbox=sandbox)
    else:
        run(command, what=what)


def _pip_choice(python: Path, requirements: Path, constraints: Path, allow_build: bool,
                sandbox: Sandbox | None = None) -> Path:
    """What pip would install for ``requirements`` under the lock ``constraints`` (a dry
    run against the lock without its hashes), written beside ``requirements`` as exact
    pins each with the lock's hashes; a distribution the lock does not pin is an error.
    With ``allow_build`` the dry run may build metadata (running build code): in
    :func:`run_build`."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    from junobench.envs.pins import lock_text, parse_pins, unhashed

    pins = parse_pins(constraints.read_text(encoding="utf-8"), constraints, hashes=True)
    folder = requirements.parent
    plain, report = folder / ".junobench-constraints-plain.txt", folder / ".junobench-pip-report.json"
    plain.write_text(unhashed(lock_text(pins)), encoding="utf-8")
    try:
        command = [str(python), "-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check",
                   "--ignore-installed", "--report", str(report), "-r", str(requirements), "-c", str(plain)]
        what = f"resolving {requirements.name} with pip"
        if allow_build:
            run_build(command, what=what, python=python, sandbox=sandbox)
        else:
            run([*command, "--only-binary", ":all:"], what=what)
        chosen = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    finally:
        plain.unlink(missing_ok=True)
        report.unlink(missing_ok=True)
    lines = []
    for item in chosen:
        meta = item.get("metadata", {}) if isinstance(item, dict) else {}
        name, version = canonicalize_name(str(meta.get("name", ""))), str(meta.get("version", ""))
        try:
            pin = next(p for p in pins if p.name == name and p.version is not None
                       and Version(p.version) == Version(version))
        except (StopIteration, InvalidVersion):
            raise JunoBenchError(f"pip would install {name}=={version}, which the lock does not pin",
                                 file=constraints, hint="regenerate the lock, or install with uv") from None
        lines.append(lock_text([replace(pin, marker=None)]))
    hashed = folder / "junobench-requirements-hashed.txt"
    hashed.write_text("".join(lines), encoding="utf-8")
    return hashed


def run_build(command: Sequence[str], *, what: str, python: Path, sandbox: Sandbox | None = None) -> str:
    """Run an install that may build source distributions into the environment of
    ``python``: the one place their build scripts run (``env create --allow-build``), in
    ``sandbox`` (default: bubblewrap, refused where it cannot run; see
    :mod:`junobench.envs.buildbox`)."""
    from junobench.envs.buildbox import build_argv, build_sandbox
    from junobench.envs.sandbox import hand_over, reclaim, sandbox_uid

    sandbox = sandbox or build_sandbox("auto")
    folder = str(python.absolute().parent.parent)
    runtime = tempfile.mkdtemp(prefix="junobench-build-")
    uid = sandbox_uid(sandbox)
    try:
        argv, env = build_argv(user_config_only(command), sandbox, python=str(python.absolute()), folder=folder,
                               runtime=runtime, env=os.environ, uid=uid)
        hand_over([folder], uid)
        return run(argv, what=what, env=env, inherit=False)  # untrusted code: no lock to release
    finally:
        if sandbox.confined:  # the build's files back to the caller, no setuid bit left
            reclaim([folder], uid)
        shutil.rmtree(runtime, ignore_errors=True)


def compile_lock(folder: Path, requirements: str, lock: str, *, python: str, exclude_newer: str,
                 uv: str | None = None) -> Path:
    """Resolve ``requirements`` (a file in ``folder``) into the universal lock ``lock``:
    every transitive dependency for ``python`` and newer, on every platform, as of
    ``exclude_newer``, with the hash of every file (uv only: pip has no resolver that
    writes locks)."""
    uv = uv or uv_binary()
    if uv is None:
        raise JunoBenchError("locking an environment needs uv", hint="pip install uv")
    run([uv, "pip", "compile", "--quiet", requirements, "--universal", "--python-version", python,
         "--exclude-newer", exclude_newer, "--generate-hashes", "-o", lock],
        what=f"resolving {folder / requirements}", cwd=folder)
    return folder / lock


def installed_versions(python: str | Path) -> dict[str, str]:
    """Canonical distribution name → version installed for an interpreter."""
    code = ("import importlib.metadata as m, json, re\n"
            "out = {}\n"
            "for d in m.distributions():\n"
            "    name = d.metadata['Name']\n"
            "    if name: out[re.sub(r'[-_.]+', '-', name).lower()] = d.version\n"
            "print(json.dumps(out))")
    try:
        done = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True,
                              timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise JunoBenchError(f"cannot run the interpreter ({error})", file=python) from None
    if done.returncode != 0:
        raise JunoBenchError("cannot list the installed distributions", file=python,
                             hint=(done.stderr.strip().splitlines() or [""])[-1])
    versions: dict[str, str] = json.loads(done.stdout)
    return versions


def interpreter_version(python: str | Path) -> str:
    """``major.minor.micro`` of an interpreter."""
    done = subprocess.run([str(python), "-I", "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise JunoBenchError("cannot run the interpreter", file=python)
    return done.stdout.strip()
