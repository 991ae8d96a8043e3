"""The sandbox every notebook kernel runs in, and the command line that makes it.

A :class:`Sandbox` is a policy: which sandbox (``auto``, ``bwrap``, ``docker``, ``podman``,
``none``), whether the notebook has a network, and its limits (memory, tasks, output kept
per cell). :func:`confine` turns a kernel's command line into the command that runs it
confined; :func:`junobench.envs.kernel.start_kernel` is its one caller.

- ``bwrap`` (bubblewrap, Linux): new user, PID, IPC, UTS, cgroup and network namespaces, a
  fresh ``/proc`` (the kernel sees only its own processes, never the parent's environment)
  whose kernel settings are read-only (``/proc/sys``, ``/proc/sysrq-trigger`` and the
  other paths Docker makes read-only) and whose ``kcore``, ``keys`` and the rest of what
  Docker masks are empty, ``--die-with-parent`` and a new session; read-only: the system
  folders, the interpreter's prefixes (the environment and the Python it was made from);
  writable: the task's working copy, a private ``/tmp`` and ``/dev/shm`` (tmpfs, bounded),
  an empty ``HOME`` in ``/tmp``, all ``nosuid`` and ``nodev``; nothing else of the machine,
  the user's home included. The root is read-only. No new privileges (``execve`` of a
  setuid file gains nothing), no capability, and a seccomp filter refuses the system calls
  a notebook never needs (:mod:`junobench.envs.seccomp`). As root, the notebook runs as an
  unprivileged uid of its own on the host (:func:`sandbox_uid`), never as root.
- ``docker`` / ``podman``: the image of ``junobench env dockerfile`` (``--image``), run with
  no network, a read-only root, a private ``/tmp``, the working copy mounted at the same
  path, ``--memory`` and ``--pids-limit``.
- ``none``: the kernel runs as any program of the user (``--sandbox none``).

With bubblewrap, :mod:`junobench.envs.watchdog` starts the sandbox and watches it from
outside (another PID namespace: no process of the notebook can see, signal or trace it);
in a container it runs first inside. Kernels talk to junobench over Unix sockets in a
folder bound in (the private network namespace shares no loopback); the rest of a
kernel's runtime folder (the watchdog's status file, the identity files, the seccomp
program) is never seen by the notebook.

>>> Sandbox().describe()
'auto, network off'
>>> Sandbox("bwrap", network=True).describe()
'bwrap, network on'
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.safety.paths import read_untrusted

#: Sandboxes accepted by ``--sandbox``.
SANDBOXES: tuple[str, ...] = ("auto", "bwrap", "docker", "podman", "none")
#: Container engines.
ENGINES: tuple[str, ...] = ("docker", "podman")
#: Default limits: memory of a notebook's processes, their tasks (processes and threads),
#: and the output kept per cell.
DEFAULT_MEMORY = 4 << 30
DEFAULT_PROCESSES = 512
DEFAULT_MAX_OUTPUT = 10 << 20
#: Default image of ``--sandbox docker|podman`` (as ``env dockerfile`` suggests building it).
DEFAULT_IMAGE = "junobench-env"
#: Where the environment lives inside that image (``env dockerfile`` writes it there).
IMAGE_ENV = "/opt/junobench-env"

#: Inside the sandbox: the user, its home and what it is told of itself.
SANDBOX_UID = 1000
SANDBOX_HOME = "/tmp/home"
HOSTNAME = "junobench"
#: System folders bound read-only (those that exist; a link is recreated as a link).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
#: Files and folders of /etc a program may need (the rest of /etc stays out).
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
             "ca-certificates.conf", "pki", "crypto-policies", "fonts", "localtime", "timezone",
             "mime.types", "os-release", "lsb-release", "debian_version", "matplotlibrc")
#: ... and with the network on.
NETWORK_ETC_FILES = ("resolv.conf", "hosts", "nsswitch.conf", "gai.conf", "host.conf", "services",
                     "protocols")
#: Read-only folders of /sys that numerical libraries read (core counts, caches).
SYS_DIRS = ("/sys/devices/system/cpu",)
#: Variables that point at the user's desktop, agents or folders: never passed in.
HOST_VARIABLES = ("XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
                  "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "TMPDIR", "TEMP", "TMP", "PWD", "OLDPWD", "MAIL",
                  "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "JPY_SESSION_NAME",
                  "JPY_PARENT_PID")

#: The variables a confined kernel gets of the caller's (exact names): the time zone, the
#: interpreter's settings junobench knows, the backend and device choices of libraries;
#: every other variable stays out (a secret under any name; ``JUPYTER_*``, ``LC_*``,
#: ``OMP_*`` too), unless named with ``--pass-env``.
PASSED_VARIABLES = frozenset({"PATH", "TZ", "TERM", "VIRTUAL_ENV", "PYTHONHASHSEED", "PYTHONIOENCODING",
                              "PYTHONUNBUFFERED", "PYTHONWARNINGS", "PYTHONDONTWRITEBYTECODE",
                              "PYDEVD_DISABLE_FILE_VALIDATION", "MPLBACKEND", "CUDA_VISIBLE_DEVICES",
                              "KERAS_BACKEND"})
#: What junobench itself sets in a confined kernel: the locale and one thread per maths
#: library (parallel kernels do not oversubscribe the cores); ``--pass-env NAME`` passes
#: the caller's value instead.
SANDBOX_SETTINGS: dict[str, str] = {"LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                    "MKL_NUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}


def confined_environ(env: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """What of ``env`` a confined kernel sees: :data:`PASSED_VARIABLES`, the names in
    ``keep``, and :data:`SANDBOX_SETTINGS` where ``keep`` does not name them.

    >>> confined_environ({"PATH": "/bin", "MY_DB_URL": "postgres://u:p@h", "LC_ALL": "C"})["PATH"]
    '/bin'
    >>> sorted(set(confined_environ({"LC_ALL": "C", "JUPYTER_TOKEN": "t"})) - set(SANDBOX_SETTINGS))
    []
    """
    kept = set(keep)
    passed = {name: value for name, value in env.items() if name in kept or name in PASSED_VARIABLES}
    return {**{k: v for k, v in SANDBOX_SETTINGS.items() if k not in kept or k not in env}, **passed}


#: How to install bubblewrap.
INSTALL_BWRAP = ("install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: "
                 "`sudo dnf install bubblewrap`; Arch: `sudo pacman -S bubblewrap`)")
#: What to do where no sandbox can run.
INSTALL_HINT = f"{INSTALL_BWRAP}, or use --sandbox docker|podman; --sandbox none runs the notebooks unconfined"


@dataclass(frozen=True)
class Sandbox:
    """How notebook kernels are confined (see the module docstring). ``memory`` (bytes,
    the notebook's processes together), ``processes`` (tasks: processes and threads) and
    ``max_output`` (bytes kept per cell) are limits, 0 meaning none; ``image`` is the
    container image of ``docker``/``podman``."""

    kind: str = "auto"
    network: bool = False
    memory: int = DEFAULT_MEMORY
    processes: int = DEFAULT_PROCESSES
    max_output: int = DEFAULT_MAX_OUTPUT
    image: str = DEFAULT_IMAGE

    def __post_init__(self) -> None:
        if self.kind not in SANDBOXES:
            raise JunoBenchError(f"unknown sandbox {self.kind!r}", hint=f"use one of {', '.join(SANDBOXES)}")
        for name in ("memory", "processes", "max_output"):
            if getattr(self, name) < 0:
                raise JunoBenchError(f"--{name.replace('_', '-')} must not be negative")
        if self.processes and self.processes < 8:
            raise JunoBenchError(f"--max-processes {self.processes} is too few for a kernel (at least 8)")
        if self.memory and self.memory < 256 << 20:
            raise JunoBenchError("--memory below 256M is too little for a kernel")

    @property
    def confined(self) -> bool:
        return self.kind != "none"

    def resolved(self) -> Sandbox:
        """The policy with ``auto`` made concrete: ``bwrap`` where it works here, else
        ``none``; an explicit ``bwrap`` that cannot run here is an error."""
        if self.kind == "auto":
            return replace(self, kind="bwrap" if bwrap_problem() is None else "none")
        if self.kind == "bwrap" and (problem := bwrap_problem()) is not None:
            raise JunoBenchError(f"--sandbox bwrap cannot run here: {problem}", hint=INSTALL_HINT)
        return self

    def describe(self) -> str:
        """``bwrap, network off``: for reports and summaries."""
        return f"{self.kind}, network {'on' if self.network else 'off'}"

    def enforcement(self) -> dict[str, str]:
        """How this (resolved) sandbox applies its limits and who the notebook is, as this
        machine allows: for the report."""
        if self.kind in ENGINES:
            return {"limits": "the container engine's cgroup (--memory, --pids-limit)",
                    "identity": ("an unprivileged uid of its own (junobench runs as root)"
                                 if _is_root() else "the caller's uid")
                                + ", capabilities dropped, no-new-privileges, /tmp nosuid and nodev",
                    "seccomp": "the engine's default profile"}
        if self.kind != "bwrap":
            return {}
        from junobench.envs.seccomp import REFUSED, seccomp_problem

        refused = seccomp_problem()
        return {
            "limits": "RLIMIT_DATA and RLIMIT_NPROC, /tmp and /dev/shm sized, and a watchdog outside the sandbox "
                      "counting the processes' memory, /tmp, /dev/shm and memfd objects"
                      f"; no cgroup: {cgroup_problem()}",
            "identity": (f"uid {SANDBOX_UID} inside, an unprivileged uid of its own outside (junobench runs as root)"
                         if _is_root() else f"uid {SANDBOX_UID} inside, uid {os.getuid()} outside (junobench's own, "
                         "not root)") + "; no capabilities, no-new-privileges, nosuid and nodev mounts",
            "seccomp": refused or f"on: {len(REFUSED)} system calls refused (some for some arguments only)",
            "proc": "read-only: " + ", ".join(f"/proc/{n}" for n in PROC_READ_ONLY) + "; masked: "
                    + ", ".join(f"/proc/{n}" for n in PROC_MASKED),
        }

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.kind in ("bwrap", *ENGINES):
            data["enforcement"] = self.enforcement()
        return data


def require_sandbox(sandbox: Sandbox, *, trusted: bool) -> Sandbox:
    """``sandbox`` resolved; refused when it resolves to no sandbox though the user did not
    ask for none and the notebooks are not ``trusted`` (junobench's own sample)."""
    resolved = sandbox.resolved()
    if sandbox.kind == "auto" and not resolved.confined and not trusted:
        raise JunoBenchError(f"no sandbox to run these notebooks in: {bwrap_problem()}", hint=INSTALL_HINT)
    return resolved


@functools.lru_cache(maxsize=1)
def cgroup_problem() -> str:
    """Why the sandbox's memory is not bounded by a cgroup of its own here: junobench
    creates none where the memory controller is not on a unified (v2) hierarchy, and where
    it is, it would need a subtree delegated to it (systemd's ``Delegate=``), which it does
    not ask for; the rlimits, the tmpfs sizes and the watchdog bound it instead."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "no cgroups here"
    if any(line.split(":")[1:2] and "memory" in line.split(":")[1].split(",") for line in lines):
        return "the memory controller is on a cgroup v1 hierarchy here"
    return "cgroup v2 here, but junobench asks for no delegated subtree"


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot make a sandbox here (None: it can)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap runs on Linux only, not {sys.platform}"
    path = shutil.which("bwrap")
    if path is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run([path, "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/",
                               "--proc", "/proc", "true"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap did not run ({error})"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot make a sandbox ({said[-1] if said else f'exit status {done.returncode}'}; " \
               "are user namespaces disabled?)"
    return None


@functools.lru_cache(maxsize=1)
def _bwrap_options() -> frozenset[str]:
    """The options this bubblewrap knows (older ones lack ``--disable-userns``, ``--size``)."""
    try:
        text = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(word for line in text.splitlines() for word in line.split() if word.startswith("--"))


#: Interpreter path → its prefixes (:func:`interpreter_prefixes`), asked once per process.
_PREFIXES: dict[str, tuple[str, ...]] = {}


def interpreter_prefixes(python: str, timeout: float = 60) -> tuple[str, ...]:
    """The folders an interpreter runs from: its prefixes (a virtual environment's and the
    Python it was made from), the folder of its real executable. An interpreter that does
    not answer within ``timeout`` seconds is killed (``TimeoutError``)."""
    if python in _PREFIXES:
        return _PREFIXES[python]
    if os.path.abspath(python) == os.path.abspath(sys.executable):  # links differ: a venv's python links to its base
        found = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    else:
        code = "import sys, json; print(json.dumps([sys.prefix, sys.exec_prefix, sys.base_prefix, " \
               "sys.base_exec_prefix]))"
        try:
            done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=timeout,
                                  check=True)
            found = [str(p) for p in json.loads(done.stdout)]
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"the interpreter {python} did not answer within {timeout:g} s") from None
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            raise JunoBenchError(f"cannot ask the interpreter where it lives: {error}", file=python) from None
    found += [str(Path(python).absolute().parent), str(Path(os.path.realpath(python)).parent)]
    _PREFIXES[python] = tuple(dict.fromkeys(os.path.realpath(p) for p in found))
    return _PREFIXES[python]


def confine(command: Sequence[str], sandbox: Sandbox, *, python: str, cwd: str, writable: Iterable[str],
            runtime: str, timeout: float = 60, uid: int | None = None) -> list[str]:
    """The command line running ``command`` (a kernel of ``python``) in ``sandbox`` (a
    resolved one), working in ``cwd``, with the folders ``writable`` (the task's) and
    ``runtime``'s :data:`IPC_DIR` (connection file, sockets) bound read-write at their own
    paths; ``runtime`` itself (the watchdog's status file, the sandbox's identity files and
    seccomp program) stays out of the sandbox. ``uid``: the host uid the notebook runs as
    (:func:`sandbox_uid`; None: the caller's own). ``python`` must say where it lives within
    ``timeout`` seconds."""
    if sandbox.kind == "none":
        return list(command)
    ipc = ipc_folder(runtime)
    if sandbox.kind == "bwrap":
        interpreter_prefixes(python, timeout)  # asked once, within the kernel's deadline
        return bwrap_argv(command, sandbox, python=python, cwd=cwd, writable=[*writable, ipc], runtime=runtime,
                          status=str(Path(runtime) / STATUS_FILE), uid=uid)
    if sandbox.kind in ENGINES:
        return container_argv(sandbox.kind, command, sandbox, cwd=cwd, writable=[*writable, ipc],
                              name=container_name(runtime), status=str(Path(ipc) / STATUS_FILE), uid=uid)
    raise JunoBenchError(f"sandbox {sandbox.kind!r} is not resolved")


#: The file where the watchdog says which limit ended a notebook: in the runtime folder,
#: outside the sandbox (bubblewrap); in its IPC folder, inside (a container).
STATUS_FILE = "limit"
#: The folder of a kernel's runtime folder that is bound into the sandbox (connection file,
#: sockets); the rest of the runtime folder is junobench's alone.
IPC_DIR = "ipc"
#: The seccomp program's file in the runtime folder.
SECCOMP_FILE = "seccomp.bpf"


def ipc_folder(runtime: str | Path) -> str:
    """The folder of ``runtime`` that the sandbox sees (made when missing)."""
    folder = Path(runtime) / IPC_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    return str(folder)


def _watchdog(python: str, settings: Mapping[str, Any]) -> list[str]:
    """The command line of :mod:`junobench.envs.watchdog` with ``settings``, run by
    ``python`` (before ``--`` and the command it starts)."""
    from junobench.envs import watchdog

    source = base64.b64encode(Path(watchdog.__file__).read_bytes()).decode()
    # base64: no braces for Jupyter's {connection_file} templating to touch
    loader = f"import base64;exec(compile(base64.b64decode('{source}'),'watchdog','exec'))"
    return [python, "-I", "-S", "-c", loader, base64.b64encode(json.dumps(settings).encode()).decode(), "--"]


def launcher(settings: Mapping[str, Any]) -> list[str]:
    """The watchdog's command line with ``settings``, run by this interpreter, started by
    this process: its pid goes along, so that a watchdog orphaned even before it ran knows it."""
    return _watchdog(sys.executable, {**settings, "parent": os.getpid()})


def watched(command: Sequence[str], sandbox: Sandbox, *, python: str, status: str) -> list[str]:
    """``command`` run under :mod:`junobench.envs.watchdog` by ``python``, inside a container."""
    settings = {"mode": "inside", "memory": sandbox.memory, "tasks": sandbox.processes, "status": status}
    return [*_watchdog(python, settings), *command]


#: Folders of ``/proc`` made read-only inside (as Docker does): the kernel's settings.
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")
#: Files and folders of ``/proc`` masked (an empty file or folder), as Docker does.
PROC_MASKED = ("kcore", "keys", "key-users", "kmsg", "latency_stats", "timer_list", "timer_stats", "sched_debug",
               "acpi", "asound", "scsi")


def proc_masks(runtime: str) -> list[str]:
    """bubblewrap's arguments that make the kernel's settings in ``/proc`` read-only and
    mask what Docker masks (those that exist here) with ``/dev/null`` or an empty folder of
    ``runtime``, both read-only."""
    empty = Path(runtime) / "empty"
    empty.mkdir(mode=0o555, exist_ok=True)
    argv: list[str] = []
    for name in PROC_READ_ONLY:
        if os.path.exists(f"/proc/{name}"):
            argv += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in PROC_MASKED:
        path = f"/proc/{name}"
        if os.path.isdir(path):
            argv += ["--ro-bind", str(empty), path]
        elif os.path.exists(path):
            argv += ["--ro-bind", "/dev/null", path]
    return argv


def bwrap_argv(command: Sequence[str], sandbox: Sandbox, *, python: str, cwd: str, writable: Iterable[str],
               runtime: str, fonts: bool = True, status: str | None = None, uid: int | None = None,
               extra: Sequence[str] = ()) -> list[str]:
    """The command line that runs ``command`` in a bubblewrap sandbox (see the module
    docstring) under the watchdog that starts and watches it (:func:`launcher`);
    ``fonts``: with matplotlib's font list (:func:`font_cache`); ``status``: the watchdog's
    status file; ``uid``: the host uid the notebook runs as (root only, :func:`sandbox_uid`);
    ``extra``: more of bubblewrap's mount options (read-only binds), before the root turns
    read-only."""
    known = _bwrap_options()
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user", "--die-with-parent",
            "--new-session", "--hostname", HOSTNAME]
    if uid is None:  # as root, the watchdog maps the notebook's user and the shim takes it on
        argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        if "--disable-userns" in known:
            argv.append("--disable-userns")
    if sandbox.network:
        argv.append("--share-net")
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            argv += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    for name in ETC_FILES + (NETWORK_ETC_FILES if sandbox.network else ()):
        if os.path.exists(f"/etc/{name}"):
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    passwd, group = _identity(runtime)
    argv += ["--ro-bind", passwd, "/etc/passwd", "--ro-bind", group, "/etc/group"]
    for folder in SYS_DIRS:
        if os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    argv += ["--proc", "/proc", *proc_masks(runtime), "--dev", "/dev"]
    size = ["--size", str(sandbox.memory)] if sandbox.memory and "--size" in known else []
    argv += ["--perms", "1777", *size, "--tmpfs", "/tmp", "--perms", "1777", *size, "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev", "--dir", SANDBOX_HOME]  # /dev, an unbounded tmpfs: read-only
    homes = [SANDBOX_HOME]
    found_fonts = font_cache(python) if fonts else ()
    if found_fonts:  # matplotlib's font list, built once per interpreter (else each kernel builds it)
        argv += ["--dir", f"{SANDBOX_HOME}/.cache", "--dir", MATPLOTLIB_CACHE]
        homes += [f"{SANDBOX_HOME}/.cache", MATPLOTLIB_CACHE]
        for found in found_fonts:
            argv += ["--ro-bind", str(found), f"{MATPLOTLIB_CACHE}/{found.name}"]
    home = os.path.realpath(os.environ["HOME"]) if os.environ.get("HOME") else None
    for prefix in interpreter_prefixes(python):  # after /tmp: an environment may live there
        if prefix == "/" or (home is not None and prefix == home):
            raise JunoBenchError(f"the interpreter's prefix {prefix} is a folder the sandbox must not show",
                                 file=python, hint="make the environment with `junobench env create`")
        if not _under_bound(prefix):
            argv += ["--ro-bind", prefix, prefix]
    for folder in dict.fromkeys(writable):
        argv += ["--bind", folder, folder]
    argv += [*extra, "--remount-ro", "/", "--chdir", cwd, "--setenv", "HOME", SANDBOX_HOME, "--setenv", "TMPDIR",
             "/tmp", "--setenv", "USER", "junobench", "--setenv", "LOGNAME", "junobench"]
    for name in HOST_VARIABLES:
        if name not in ("TMPDIR",):
            argv += ["--unsetenv", name]
    inner = [*_shim(python, sandbox.processes, uid is not None, homes), *command]
    settings = {"mode": "bwrap", "memory": sandbox.memory, "tasks": sandbox.processes, "status": status or "",
                "uid": uid, "seccomp": _seccomp_file(runtime)}
    return [*launcher(settings), *with_parents([*argv, "--", *inner])]


#: How many values each bubblewrap option that junobench writes takes.
_ARITY = {"--hostname": 1, "--uid": 1, "--gid": 1, "--symlink": 2, "--ro-bind": 2, "--bind": 2, "--proc": 1,
          "--dev": 1, "--perms": 1, "--size": 1, "--tmpfs": 1, "--dir": 1, "--remount-ro": 1, "--chdir": 1,
          "--setenv": 2, "--unsetenv": 1}


def with_parents(argv: Sequence[str]) -> list[str]:
    """bubblewrap's ``argv`` with the folders on the way to each bind mount made first,
    open to every user (``0755``): bubblewrap may make them ``0700``, which the notebook's
    user, unlike the sandbox's root, could not enter."""
    out: list[str] = []
    made: set[str] = {"/"}
    i = 0
    while i < len(argv) and argv[i] != "--":
        word = argv[i]
        values = list(argv[i + 1:i + 1 + _ARITY.get(word, 0)])
        if word in ("--bind", "--ro-bind", "--symlink", "--tmpfs", "--dir", "--proc", "--dev"):
            dest = values[-1]
            if word in ("--bind", "--ro-bind"):
                for parent in reversed(Path(dest).parents):
                    if str(parent) not in made:
                        out += ["--perms", "0755", "--dir", str(parent)]
                        made.add(str(parent))
            made.add(dest)
        out += [word, *values]
        i += 1 + len(values)
    return [*out, *argv[i:]]


#: The shim run first inside the sandbox, before the kernel. It limits the tasks of the
#: notebook's user (``RLIMIT_NPROC``) here, once the sandbox's user namespace exists: set
#: before, the limit would also bound every process the host user runs. As root, it also
#: takes on the notebook's user (the sandbox's root, which set the sandbox up, keeps
#: nothing: no capability, no group) and gives it its home folders.
SHIM = """import os, resource, sys
cut = sys.argv.index('--')
tasks, root = int(sys.argv[1]), sys.argv[2] == 'root'
if tasks > 0:
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    tasks = tasks if hard == resource.RLIM_INFINITY else min(tasks, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
if root:
    for path in sys.argv[3:cut]:
        os.chown(path, UID, UID)
    os.setgroups([])
    os.setresgid(UID, UID, UID)
    os.setresuid(UID, UID, UID)
    with open('/proc/self/status') as status:
        if os.getuid() != UID or any(line.startswith('CapEff:') and int(line.split()[1], 16) for line in status):
            sys.exit('junobench sandbox: root was not given up')
os.execvp(sys.argv[cut + 1], sys.argv[cut + 1:])
""".replace("UID", str(SANDBOX_UID))


def _shim(python: str, tasks: int, root: bool, homes: Sequence[str]) -> list[str]:
    code = base64.b64encode(SHIM.encode()).decode()
    return [python, "-I", "-S", "-c", f"import base64;exec(base64.b64decode('{code}'))", str(tasks),
            "root" if root else "user", *homes, "--"]


def _seccomp_file(runtime: str) -> str:
    """The seccomp program written into ``runtime`` ("" where none can be made)."""
    from junobench.envs.seccomp import seccomp_problem, seccomp_program

    if seccomp_problem() is not None:
        return ""
    path = Path(runtime) / SECCOMP_FILE
    path.write_bytes(seccomp_program())
    return str(path)


#: As root, the notebook of each sandbox runs as a uid of its own from here on (one that
#: owns nothing on the machine): ``SANDBOX_UIDS + (process id << 8) + a counter``.
SANDBOX_UIDS = 0x40000000
_counter = itertools.count()


def sandbox_uid(sandbox: Sandbox) -> int | None:
    """The host uid a new sandbox's notebook runs as: a new unprivileged one when
    junobench runs as root with bubblewrap or a container engine, None (the caller's own
    uid) otherwise."""
    if sandbox.kind not in ("bwrap", *ENGINES) or not _is_root():
        return None
    return SANDBOX_UIDS + ((os.getpid() & 0x3FFFFF) << 8) + (next(_counter) & 0xFF)


def hand_over(folders: Iterable[str | Path], uid: int | None) -> None:
    """Give ``uid`` (the notebook's host uid, as root) the ``folders`` the notebook may
    write, and what they hold; links are not followed. Nothing for None."""
    if uid is None:
        return
    for folder in folders:
        for path in [Path(folder), *_tree(Path(folder))]:
            try:
                os.lchown(path, uid, uid)
            except OSError:
                continue


def reclaim(folders: Iterable[str | Path], uid: int | None) -> None:
    """After a sandbox ended: take back the ``folders`` it could write (as root, from
    ``uid``), and clear every setuid and setgid bit in them, so that no file the notebook
    made runs with its owner's rights outside the sandbox."""
    owner = (os.getuid(), os.getgid()) if uid is not None else None
    for folder in folders:
        for path in [Path(folder), *_tree(Path(folder))]:
            try:
                info = path.lstat()
                if owner is not None:
                    os.lchown(path, *owner)
                if stat.S_ISREG(info.st_mode) and info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    os.chmod(path, stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
            except OSError:
                continue


def _tree(folder: Path) -> list[Path]:
    found: list[Path] = []
    for current, folders, files in os.walk(folder):  # links to folders are not walked
        found += [Path(current, name) for name in folders + files]
    return found


#: Where matplotlib looks for its font list inside the sandbox (``~/.cache/matplotlib``).
MATPLOTLIB_CACHE = f"{SANDBOX_HOME}/.cache/matplotlib"


@functools.lru_cache(maxsize=32)
def font_cache(python: str) -> tuple[Path, ...]:
    """matplotlib's font list for ``python``'s matplotlib, built once in a sandbox into
    junobench's cache (``$XDG_CACHE_HOME/junobench/sandbox``) and bound read-only into every
    kernel: a fresh ``HOME`` would make each kernel scan the fonts again (a quarter of a
    second here, seconds on a machine with many fonts). Nothing when the interpreter has no
    matplotlib or the build fails."""
    import hashlib
    import tempfile

    from junobench.safety.atomic import place

    key = hashlib.sha256("|".join((os.path.realpath(python), *interpreter_prefixes(python))).encode()).hexdigest()
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "junobench" / "sandbox"
    folder = root / f"matplotlib-{key[:16]}"
    if not folder.is_dir():
        try:
            root.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
        except OSError:
            return ()
        runtime = tempfile.mkdtemp(prefix="junobench-rt-")
        try:
            policy = Sandbox("bwrap")
            uid = sandbox_uid(policy)
            code = f"import os; os.environ['MPLCONFIGDIR'] = {str(building)!r}; import matplotlib.font_manager"
            command = bwrap_argv([python, "-c", code], policy, python=python, cwd=str(building),
                                 writable=[str(building)], runtime=runtime, fonts=False, uid=uid)
            hand_over([building], uid)
            subprocess.run(command, capture_output=True, timeout=300, check=False)
            reclaim([building], uid)
            place(building, folder)  # whole or absent
        except (OSError, subprocess.SubprocessError, JunoBenchError):
            pass  # another process made it meanwhile, or no font list: kernels build their own
        finally:
            shutil.rmtree(building, ignore_errors=True)
            shutil.rmtree(runtime, ignore_errors=True)
    if not folder.is_dir():
        return ()
    return tuple(sorted(f for f in folder.glob("fontlist-*.json") if f.is_file() and not f.is_symlink()))


def container_argv(engine: str, command: Sequence[str], sandbox: Sandbox, *, cwd: str, writable: Iterable[str],
                   name: str, status: str, uid: int | None = None) -> list[str]:
    """The ``docker run`` / ``podman run`` command line running ``command`` (its interpreter
    replaced by the image's environment) in ``sandbox.image``, as ``uid`` (:func:`sandbox_uid`
    when junobench is root: never the host's root; None: the caller's own uid)."""
    python = f"{IMAGE_ENV}/bin/python"
    inner = watched([python, *command[1:]], sandbox, python=python, status=status)
    size = sandbox.memory or DEFAULT_MEMORY
    if uid is not None:
        user = f"{uid}:{uid}"
    else:
        user = f"{os.getuid()}:{os.getgid()}" if hasattr(os, "getuid") else "1000:1000"
    argv = [engine, "run", "--rm", "-i", "--init", "--name", name, "--network", "bridge" if sandbox.network else "none",
            "--read-only", "--tmpfs", f"/tmp:rw,nosuid,nodev,exec,size={size}", "--shm-size", str(size),
            "--user", user,
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--ipc", "private",
            "--env", f"HOME={SANDBOX_HOME}", "--workdir", cwd]
    if sandbox.memory:
        argv += ["--memory", str(sandbox.memory), "--memory-swap", str(sandbox.memory)]
    if sandbox.processes:
        argv += ["--pids-limit", str(sandbox.processes)]
    for folder in dict.fromkeys(writable):
        argv += ["--volume", f"{folder}:{folder}:rw"]
    return [*argv, sandbox.image, *inner]


def container_name(runtime: str) -> str:
    """The container of the kernel whose runtime folder is ``runtime`` (to stop it by name)."""
    return "junobench-" + Path(runtime).name.rsplit("-", 1)[-1].lower()


def stop_argv(sandbox: Sandbox, runtime: str) -> list[str] | None:
    """The command that removes what a kernel left behind in ``sandbox`` when it was killed
    (a container outlives its client), None when nothing can be left."""
    if sandbox.kind in ENGINES:
        return [sandbox.kind, "rm", "--force", container_name(runtime)]
    return None


def limit_reached(runtime: str | Path, sandbox: Sandbox) -> str | None:
    """What the watchdog said ended the notebook (``out of memory …``), None when nothing.
    The status file is read as a file a notebook could have replaced (inside a container
    it could): not through a link, never blocking, a few bytes at most."""
    folder = Path(runtime) if sandbox.kind == "bwrap" else Path(runtime) / IPC_DIR
    try:
        said = read_untrusted(folder / STATUS_FILE, limit=64).decode(errors="replace").strip()
    except OSError:
        return None
    if said == "memory":
        return f"out of memory: the notebook's processes used more than {format_size(sandbox.memory)}"
    if said == "processes":
        return f"too many processes: the notebook ran more than {sandbox.processes} processes and threads"
    return None


def format_size(size: int) -> str:
    """``4 GiB``, ``512 MiB``, ``10 KiB``, ``12 B``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} B"


def _identity(runtime: str) -> tuple[str, str]:
    """``/etc/passwd`` and ``/etc/group`` naming the sandbox's user only (in ``runtime``)."""
    passwd, group = Path(runtime) / "passwd", Path(runtime) / "group"
    passwd.write_text(f"junobench:x:{SANDBOX_UID}:{SANDBOX_UID}:junobench:{SANDBOX_HOME}:/bin/sh\n"
                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    group.write_text(f"junobench:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
    return str(passwd), str(group)


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _under_bound(prefix: str) -> bool:
    """Whether ``prefix`` is already visible through a bound system folder."""
    path = Path(prefix)
    return any(path == Path(folder) or Path(folder) in path.parents
               for folder in SYSTEM_DIRS if os.path.isdir(folder) and not os.path.islink(folder))
