"""The sandbox's policy and what a process run in it sees, without a kernel.

A short Python program runs under :func:`bwrap_argv` (the watchdog, bubblewrap, the shim)
and reports what it can see, write and do; the policy's checks, the container command
line and the helpers around them are called directly.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import junobench.envs.sandbox as sandbox
from junobench.envs.sandbox import (
    DEFAULT_MEMORY,
    SANDBOX_HOME,
    SANDBOX_UID,
    Sandbox,
    bwrap_argv,
    bwrap_problem,
    confine,
    container_argv,
    container_name,
    format_size,
    hand_over,
    interpreter_prefixes,
    ipc_folder,
    launcher,
    limit_reached,
    proc_masks,
    reclaim,
    sandbox_uid,
    stop_argv,
    with_parents,
)
from junobench.errors import JunoBenchError

REPO = Path(__file__).resolve().parent.parent
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")

#: Run inside the sandbox: what the process sees, as JSON on stdout.
PROBE = """
import ctypes, json, os, resource, socket, sys
work, outside = sys.argv[1], sys.argv[2]
def can_write(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        os.unlink(path)
        return True
    except OSError:
        return False
def size(path):
    found = os.statvfs(path)
    return found.f_blocks * found.f_frsize
with open(os.path.join(work, "made"), "w") as f:
    f.write("by the notebook")
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(), "hostname": socket.gethostname(),
    "env": {k: os.environ.get(k) for k in ("HOME", "TMPDIR", "USER", "LOGNAME", "DISPLAY", "SSH_AUTH_SOCK",
                                           "TMP", "KEPT")},
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
    "write": {name: can_write(path) for name, path in (
        ("tmp", "/tmp/x"), ("shm", "/dev/shm/x"), ("dev", "/dev/x"), ("root", "/x"),
        ("home", os.path.join(os.environ["HOME"], "x")), ("work", os.path.join(work, "x")),
        ("prefix", os.path.join(sys.prefix, "x")))},
    "sizes": {"tmp": size("/tmp"), "shm": size("/dev/shm")},
    "modes": {"tmp": oct(os.stat("/tmp").st_mode & 0o7777), "shm": oct(os.stat("/dev/shm").st_mode & 0o7777)},
    "flags": {name: os.statvfs(path).f_flag & (os.ST_NOSUID | os.ST_NODEV | os.ST_RDONLY)
              for name, path in (("tmp", "/tmp"), ("shm", "/dev/shm"), ("proc_sys", "/proc/sys"))},
    "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
    "passwd": open("/etc/passwd").read(),
    "masked": {name: os.stat(f"/proc/{name}").st_rdev == os.stat("/dev/null").st_rdev
               for name in ("kcore", "timer_list", "keys") if os.path.exists(f"/proc/{name}")},
    "seen": {name: os.path.exists(path) for name, path in (
        ("cpu", "/sys/devices/system/cpu"), ("resolv", "/etc/resolv.conf"), ("outside", outside),
        ("ssl", "/etc/ssl"))},
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "new_userns": ctypes.CDLL(None, use_errno=True).unshare(0x10000000),
    "seccomp": [line.split()[1] for line in open("/proc/self/status") if line.startswith("Seccomp:")],
}))
"""


def _confined(tmp_path: Path, policy: Sandbox, *, uid: int | None = None) -> tuple[dict, Path]:
    """What :data:`PROBE` saw in ``policy`` (as ``uid`` on the host), and its work folder."""
    work, runtime = tmp_path / "work", tmp_path / "runtime"
    work.mkdir()
    runtime.mkdir()
    outside = REPO / "pyproject.toml"  # on the machine, never bound in
    argv = bwrap_argv([sys.executable, "-c", PROBE, str(work), str(outside)], policy, python=sys.executable,
                      cwd=str(work), writable=[str(work)], runtime=str(runtime), fonts=False,
                      status=str(runtime / "limit"), uid=uid)
    env = {**os.environ, "DISPLAY": ":0", "SSH_AUTH_SOCK": "/run/agent", "TMP": "/var/tmp", "KEPT": "yes",
           "TMPDIR": "/var/tmp"}
    hand_over([work], uid)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=120, env=env, check=False)
    finally:
        reclaim([work], uid)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout), work


@needs_bwrap
def test_a_sandboxed_process_sees_only_its_folders_and_writes_only_its_own(tmp_path):
    policy = Sandbox("bwrap", memory=512 << 20, processes=64)
    seen, work = _confined(tmp_path, policy)
    assert seen["uid"] == seen["gid"] == SANDBOX_UID and seen["cwd"] == str(work)
    assert seen["hostname"] == "junobench" and seen["interfaces"] == ["lo"]
    assert seen["env"] == {"HOME": SANDBOX_HOME, "TMPDIR": "/tmp", "USER": "junobench", "LOGNAME": "junobench",
                           "DISPLAY": None, "SSH_AUTH_SOCK": None, "TMP": None, "KEPT": "yes"}
    assert seen["write"] == {"tmp": True, "shm": True, "dev": False, "root": False, "home": True, "work": True,
                             "prefix": False}
    assert seen["sizes"] == {"tmp": 512 << 20, "shm": 512 << 20}  # bounded by the memory limit
    assert seen["modes"] == {"tmp": "0o1777", "shm": "0o1777"}
    assert seen["flags"]["tmp"] & os.ST_NOSUID and seen["flags"]["tmp"] & os.ST_NODEV
    assert seen["flags"]["proc_sys"] & os.ST_RDONLY
    assert seen["nproc"] == 64
    assert f"junobench:x:{SANDBOX_UID}:{SANDBOX_UID}:" in seen["passwd"] and "root" not in seen["passwd"]
    present = {name for name in ("kcore", "timer_list", "keys") if os.path.exists(f"/proc/{name}")}
    assert present and seen["masked"] == dict.fromkeys(present, True)  # /dev/null in their place
    assert seen["seen"] == {"cpu": True, "resolv": False, "outside": False, "ssl": os.path.exists("/etc/ssl")}
    assert len(seen["pids"]) <= 3  # its own PID namespace: the sandbox's first process, the shim's exec, itself
    assert seen["new_userns"] == -1  # no user namespace of its own inside
    from junobench.envs.seccomp import seccomp_problem

    assert seen["seccomp"] == (["2"] if seccomp_problem() is None else ["0"])  # its system calls filtered
    made = work / "made"
    assert made.read_text() == "by the notebook" and made.stat().st_uid == os.getuid()


@needs_bwrap
def test_with_the_network_on_and_a_host_uid_of_its_own(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a host uid of its own is given as root only")
    policy = Sandbox("bwrap", network=True, memory=0, processes=0)
    uid = sandbox_uid(policy)
    assert uid is not None
    seen, work = _confined(tmp_path, policy, uid=uid)
    assert seen["uid"] == SANDBOX_UID and "lo" in seen["interfaces"] and len(seen["interfaces"]) > 1
    assert seen["seen"]["resolv"] == os.path.exists("/etc/resolv.conf")
    assert seen["write"]["home"] and seen["write"]["work"] and not seen["write"]["root"]
    assert seen["nproc"] == _hard_nproc()  # no limit asked: the one it inherits
    assert seen["sizes"]["tmp"] != 0  # no --size: the tmpfs' own default
    assert (work / "made").stat().st_uid == os.getuid()  # reclaimed once it ended


def _hard_nproc() -> int:
    import resource

    return resource.getrlimit(resource.RLIMIT_NPROC)[0]


def test_the_policy_refuses_limits_no_kernel_can_run_in():
    with pytest.raises(JunoBenchError, match="unknown sandbox 'chroot'"):
        Sandbox("chroot")
    for name, field in (("memory", "memory"), ("processes", "processes"), ("max-output", "max_output")):
        with pytest.raises(JunoBenchError, match=f"--{name} must not be negative"):
            Sandbox(**{field: -1})
    with pytest.raises(JunoBenchError, match="--max-processes 7 is too few"):
        Sandbox(processes=7)
    with pytest.raises(JunoBenchError, match="below 256M"):
        Sandbox(memory=(256 << 20) - 1)
    assert Sandbox(processes=8, memory=256 << 20, max_output=0).processes == 8
    assert Sandbox(processes=0, memory=0).memory == 0  # 0: no limit


def test_a_checked_policy_cannot_be_changed_afterwards():
    policy = Sandbox("bwrap", memory=1 << 30)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.memory = -1  # type: ignore[misc]
    assert len({Sandbox(), Sandbox(), Sandbox(network=True)}) == 2  # a policy is a value


def test_the_documented_defaults_are_the_policy_s():
    rows = {}
    for line in (REPO / "docs" / "verify.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) >= 3 and cells[0].startswith("`--"):
            rows[cells[0].strip("`").split()[0]] = cells[1]
    policy = Sandbox()
    assert rows["--memory"] == format_size(policy.memory) == "4 GiB"
    assert rows["--max-output"] == format_size(policy.max_output) == "10 MiB"
    assert rows["--max-processes"] == str(policy.processes)
    assert rows["--image"] == f"`{policy.image}`" and rows["--sandbox"] == f"`{policy.kind}`"
    assert rows["--network"] == ("on" if policy.network else "off")


def test_a_setting_named_to_pass_but_unset_keeps_junobench_s_value():
    assert sandbox.confined_environ({}, keep=["OMP_NUM_THREADS"]) == sandbox.SANDBOX_SETTINGS
    assert sandbox.confined_environ({"OMP_NUM_THREADS": "8"}, keep=["OMP_NUM_THREADS"])["OMP_NUM_THREADS"] == "8"


def test_auto_resolves_to_bubblewrap_where_it_runs_and_explicit_sandboxes_stay(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: None)
    assert Sandbox().resolved().kind == "bwrap" and Sandbox("docker").resolved().kind == "docker"
    assert Sandbox("bwrap").resolved() == Sandbox("bwrap")
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "no bwrap")
    assert Sandbox(network=True).resolved() == Sandbox("none", network=True)
    assert Sandbox("podman").resolved().kind == "podman"
    assert Sandbox("none").confined is False and Sandbox("podman").confined is True
    assert Sandbox("podman", network=True).describe() == "podman, network on"


def test_the_report_says_how_a_container_applies_its_limits(monkeypatch):
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    saved = Sandbox("docker").to_json()
    assert saved["kind"] == "docker" and saved["memory"] == DEFAULT_MEMORY
    assert saved["enforcement"]["identity"].startswith("an unprivileged uid of its own")
    assert "--pids-limit" in saved["enforcement"]["limits"]
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    assert Sandbox("podman").enforcement()["identity"].startswith("the caller's uid")
    assert f"uid {os.getuid()} outside (junobench's own, not root)" in Sandbox("bwrap").enforcement()["identity"]
    assert Sandbox("none").enforcement() == {} and Sandbox("auto").enforcement() == {}
    assert "enforcement" not in Sandbox("auto").to_json()


@pytest.mark.parametrize(("lines", "said"), [
    ("4:memory:/user.slice\n0::/\n", "the memory controller is on a cgroup v1 hierarchy here"),
    ("5:cpu,memory:/x\n", "the memory controller is on a cgroup v1 hierarchy here"),
    ("5:cpu:/x\n0::/\n", "cgroup v2 here, but junobench asks for no delegated subtree"),
    ("0::/memory\n", "cgroup v2 here, but junobench asks for no delegated subtree"),
    (None, "no cgroups here"),
])
def test_why_no_cgroup_bounds_the_sandbox(monkeypatch, lines, said):
    real = Path.read_text

    def read_text(path: Path, *args: object, **kwargs: object) -> str:
        if str(path) == "/proc/self/cgroup":
            if lines is None:
                raise OSError("no such file")
            return lines
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", read_text)
    assert sandbox.cgroup_problem.__wrapped__() == said


def test_why_bubblewrap_cannot_run(monkeypatch, tmp_path):
    check = sandbox.bwrap_problem.__wrapped__
    monkeypatch.setattr(sandbox.sys, "platform", "darwin")
    assert check() == "bubblewrap runs on Linux only, not darwin"
    monkeypatch.setattr(sandbox.sys, "platform", "linux")
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    assert check() == "bubblewrap (bwrap) is not installed"
    fake = tmp_path / "bwrap"  # a stand-in that answers as a refusing bubblewrap would
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: str(fake))
    for script, said in (
            ('echo "bwrap: loading" >&2\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n',
             "bwrap cannot make a sandbox (bwrap: setting up uid map: Permission denied; are user namespaces "
             "disabled?)"),
            ("exit 3\n", "bwrap cannot make a sandbox (exit status 3; are user namespaces disabled?)"),
            ('case "$*" in *--unshare-user*--die-with-parent*) exit 0;; esac\nexit 1\n', None)):
        fake.write_text("#!/bin/sh\n" + script)
        fake.chmod(0o755)
        assert check() == said
    fake.write_bytes(b"\x7fELF not really")
    assert check().startswith("bwrap did not run ([Errno 8] Exec format error")


def test_an_interpreter_says_where_it_lives_within_its_time(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "_PREFIXES", {})
    own = interpreter_prefixes(sys.executable)
    assert os.path.realpath(sys.prefix) in own and os.path.realpath(sys.base_prefix) in own
    assert str(Path(sys.executable).absolute().parent) in own or os.path.realpath(
        Path(sys.executable).parent) in own
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho \'["/srv/env", "/srv/env", "/srv/base", "/srv/base"]\'\n')
    fake.chmod(0o755)
    assert interpreter_prefixes(str(fake)) == ("/srv/env", "/srv/base", str(fake.parent))
    slow = tmp_path / "slow" / "python"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.5 s"):
        interpreter_prefixes(str(slow), timeout=0.5)
    broken = tmp_path / "broken" / "python"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho not json\n")
    broken.chmod(0o755)
    with pytest.raises(JunoBenchError, match="cannot ask the interpreter where it lives"):
        interpreter_prefixes(str(broken))
    failing = tmp_path / "failing" / "python"  # says something, but fails
    failing.parent.mkdir()
    failing.write_text('#!/bin/sh\necho \'["/srv/env", "/srv/env", "/srv/base", "/srv/base"]\'\nexit 1\n')
    failing.chmod(0o755)
    with pytest.raises(JunoBenchError, match="cannot ask the interpreter where it lives"):
        interpreter_prefixes(str(failing))


def test_what_this_bubblewrap_knows_decides_what_it_is_asked(tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\necho "usage: bwrap [OPTIONS...] [--] COMMAND"\n'
                    'echo "    --size BYTES       Set size of next tmpfs"\necho "    --disable-userns"\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert sandbox._bwrap_options.__wrapped__() == {"--size", "--disable-userns"}
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert sandbox._bwrap_options.__wrapped__() == frozenset()
    runtime = tmp_path / "rt"
    runtime.mkdir()
    monkeypatch.setattr(sandbox, "font_cache", lambda python: ())
    monkeypatch.setattr(sandbox, "interpreter_prefixes", lambda python, timeout=60: ())
    for known in (frozenset({"--size", "--disable-userns"}), frozenset()):
        monkeypatch.setattr(sandbox, "_bwrap_options", lambda known=known: known)
        for uid in (None, 1 << 30):
            argv = bwrap_argv(["true"], Sandbox("bwrap", memory=1 << 30), python="/srv/bin/python", cwd="/w",
                              writable=[], runtime=str(runtime), uid=uid)
            assert ("--disable-userns" in argv) == ("--disable-userns" in known and uid is None)
            assert ("--uid" in argv) == (uid is None)
            assert ("--size" in argv) == ("--size" in known)


def test_an_interpreter_living_in_the_root_or_the_home_is_refused(tmp_path, monkeypatch):
    runtime = tmp_path / "rt"
    runtime.mkdir()
    monkeypatch.setattr(sandbox, "font_cache", lambda python: ())
    for prefix in ("/", os.path.realpath(os.environ.get("HOME", "/root"))):
        monkeypatch.setattr(sandbox, "interpreter_prefixes", lambda python, timeout=60, p=prefix: (p,))
        with pytest.raises(JunoBenchError, match=f"prefix {prefix} is a folder the sandbox must not show"):
            bwrap_argv(["true"], Sandbox("bwrap"), python="/x/bin/python", cwd="/w", writable=[],
                       runtime=str(runtime))
    prefixes = ("/usr/lib/x", "/srv/env", "/bin/x", "/opt/conda/envs/x")
    monkeypatch.setattr(sandbox, "interpreter_prefixes", lambda python, timeout=60: prefixes)
    argv = bwrap_argv(["true"], Sandbox("bwrap"), python="/srv/env/bin/python", cwd="/w", writable=["/w", "/w"],
                      runtime=str(runtime))
    bound = [argv[i + 1] for i, word in enumerate(argv) if word == "--ro-bind"]
    assert "/srv/env" in bound and "/usr/lib/x" not in bound  # already seen through /usr
    if os.path.islink("/bin"):  # /bin is a link here, recreated as one: what is below it is bound itself
        assert "/bin/x" in bound
    if not os.path.exists("/opt/conda"):  # a system folder this machine lacks binds nothing
        assert "/opt/conda/envs/x" in bound
    assert [argv[i + 1] for i, word in enumerate(argv) if word == "--bind"] == ["/w"]


def test_confine_runs_each_kind_of_sandbox(tmp_path, monkeypatch):
    runtime = tmp_path / "rt"
    runtime.mkdir()
    command = ["/env/bin/python", "-m", "ipykernel_launcher"]
    assert confine(command, Sandbox("none"), python="/env/bin/python", cwd="/w", writable=[],
                   runtime=str(runtime)) == command
    ipc = runtime / "ipc"
    argv = confine(command, Sandbox("podman"), python="/env/bin/python", cwd="/w", writable=["/w"],
                   runtime=str(runtime))
    assert argv[:2] == ["podman", "run"] and f"{ipc}:{ipc}:rw" in argv and "/w:/w:rw" in argv
    assert argv[argv.index("--name") + 1] == container_name(str(runtime))
    settings = json.loads(base64.b64decode(argv[argv.index("--") - 1]))
    assert settings == {"mode": "inside", "memory": DEFAULT_MEMORY, "tasks": 512, "status": str(ipc / "limit")}
    assert stat.S_IMODE(ipc.stat().st_mode) == 0o700
    with pytest.raises(JunoBenchError, match="sandbox 'auto' is not resolved"):
        confine(command, Sandbox(), python="/env/bin/python", cwd="/w", writable=[], runtime=str(runtime))
    asked = []
    monkeypatch.setattr(sandbox, "interpreter_prefixes", lambda python, timeout=60: asked.append(timeout) or ())
    monkeypatch.setattr(sandbox, "font_cache", lambda python: ())
    argv = confine(command, Sandbox("bwrap"), python="/env/bin/python", cwd="/w", writable=["/w"],
                   runtime=str(runtime), timeout=7)
    assert asked[0] == 7
    binds = [argv[i + 1] for i, word in enumerate(argv) if word == "--bind"]
    assert binds == ["/w", str(ipc)]
    settings = json.loads(base64.b64decode(argv[argv.index("--") - 1]))
    assert settings["status"] == str(runtime / "limit") and settings["mode"] == "bwrap"
    assert settings["parent"] == os.getpid() and settings["tasks"] == 512 and settings["uid"] is None


def test_the_watchdog_is_told_its_parent(tmp_path):
    argv = launcher({"mode": "bwrap"})
    assert argv[0] == sys.executable and argv[1:3] == ["-I", "-S"] and argv[-1] == "--"
    assert json.loads(base64.b64decode(argv[-2])) == {"mode": "bwrap", "parent": os.getpid()}


def test_proc_masks_cover_what_exists_here(tmp_path):
    argv = proc_masks(str(tmp_path))
    empty = tmp_path / "empty"
    assert stat.S_IMODE(empty.stat().st_mode) == 0o555
    pairs = {argv[i + 2]: argv[i + 1] for i in range(0, len(argv), 3)}
    assert set(argv[0::3]) == {"--ro-bind"}
    assert pairs["/proc/sys"] == "/proc/sys"
    for name in ("kcore", "timer_list", "keys"):
        if os.path.isfile(f"/proc/{name}"):
            assert pairs[f"/proc/{name}"] == "/dev/null"
    for name in ("acpi", "scsi", "asound"):
        if os.path.isdir(f"/proc/{name}"):
            assert pairs[f"/proc/{name}"] == str(empty)
    assert "/proc/timer_stats" not in pairs or os.path.exists("/proc/timer_stats")


def test_every_bind_gets_parents_its_user_can_enter():
    argv = ["--tmpfs", "/tmp", "--ro-bind", "/a/b/c", "/a/b/c", "--bind", "/a/b/d", "/a/b/d", "--setenv", "X", "1",
            "--bind", "/tmp/w", "/tmp/w", "--", "--bind", "cmd"]
    assert with_parents(argv) == [
        "--tmpfs", "/tmp",
        "--perms", "0755", "--dir", "/a", "--perms", "0755", "--dir", "/a/b", "--ro-bind", "/a/b/c", "/a/b/c",
        "--bind", "/a/b/d", "/a/b/d", "--setenv", "X", "1", "--bind", "/tmp/w", "/tmp/w", "--", "--bind", "cmd"]


@needs_bwrap
def test_matplotlib_s_font_list_is_built_quietly_beside_others_and_never_through_a_link(tmp_path, monkeypatch,
                                                                                      capfd):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "cache" / "junobench" / "sandbox"
    root.mkdir(parents=True)  # another interpreter's font list is there already
    sandbox.font_cache.cache_clear()
    try:
        found = sandbox.font_cache(sys.executable)
        assert found and all(f.parent.parent == root for f in found)
        assert capfd.readouterr().err == ""  # the build's own output is not the user's
        planted = found[0].parent / "fontlist-v999.json"
        planted.symlink_to(tmp_path / "elsewhere.json")
        (tmp_path / "elsewhere.json").write_text("{}")
        sandbox.font_cache.cache_clear()
        assert planted not in sandbox.font_cache(sys.executable) and sandbox.font_cache(sys.executable) == found
    finally:
        sandbox.font_cache.cache_clear()


def test_every_option_s_values_are_read_as_its_own_and_the_next_bind_still_gets_its_parents():
    argv: list[str] = []
    expected: list[str] = []
    # the values bubblewrap's manual gives each option junobench writes (and some without one)
    options = [("--hostname", 1), ("--uid", 1), ("--gid", 1), ("--symlink", 2), ("--ro-bind", 2), ("--bind", 2),
               ("--proc", 1), ("--dev", 1), ("--perms", 1), ("--size", 1), ("--tmpfs", 1), ("--dir", 1),
               ("--remount-ro", 1), ("--chdir", 1), ("--setenv", 2), ("--unsetenv", 1), ("--unshare-all", 0),
               ("--die-with-parent", 0), ("--share-net", 0)]
    for number, (option, arity) in enumerate(options):
        values = [f"/value{number}"] * arity  # (in the root: no parent to make)
        bind = ["--bind", f"/o{number}/x", f"/o{number}/x"]
        argv += [option, *values, *bind]
        expected += [option, *values, "--perms", "0755", "--dir", f"/o{number}", *bind]
    assert with_parents([*argv, "--", "cmd"]) == [*expected, "--", "cmd"]
    assert with_parents(["--bind", "/a/b", "/a/b"]) == ["--perms", "0755", "--dir", "/a", "--bind", "/a/b", "/a/b"]


def test_each_sandbox_as_root_has_a_uid_made_of_the_process_and_a_counter(monkeypatch):
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    first, second = sandbox_uid(Sandbox("bwrap")), sandbox_uid(Sandbox("bwrap"))
    assert first is not None and second is not None
    for uid in (first, second):  # 2^30 + the process id × 256 + a counter (docs/trust.md)
        assert uid >> 8 == ((1 << 30) >> 8) + (os.getpid() & 0x3FFFFF)
    monkeypatch.setattr(sandbox, "_counter", itertools.count())
    assert sandbox_uid(Sandbox("podman")) == (1 << 30) + ((os.getpid() & 0x3FFFFF) << 8)
    assert (second - first) % 256 == 1


def test_a_notebook_s_folders_are_handed_over_and_taken_back_without_following_links(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("changing owners needs root")
    folder, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.write_text("the host's")
    (folder / "sub").mkdir()
    (folder / "sub" / "data.csv").write_text("a,b\n")
    (folder / "link").symlink_to(elsewhere)
    hand_over([folder], None)
    assert (folder / "sub" / "data.csv").stat().st_uid == 0
    hand_over([folder], 123456)
    assert {p.lstat().st_uid for p in (folder, folder / "sub", folder / "sub" / "data.csv", folder / "link")} \
        == {123456}
    assert elsewhere.stat().st_uid == 0  # the link's target stays the host's
    tool = folder / "sub" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o6755)
    (folder / "shared").mkdir()
    (folder / "shared").chmod(0o2775)  # a folder's setgid bit only says who owns what is made in it
    reclaim([folder], 123456)
    assert {p.lstat().st_uid for p in (folder, folder / "sub", tool)} == {os.getuid()}
    assert stat.S_IMODE((folder / "shared").stat().st_mode) == 0o2775
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755  # setuid and setgid cleared
    os.chown(tool, 123456, 123456)
    tool.chmod(0o4755)
    reclaim([folder], None)
    assert tool.stat().st_uid == 123456 and stat.S_IMODE(tool.stat().st_mode) == 0o755


def test_the_container_command_without_limits_and_as_a_uid_of_its_own():
    argv = container_argv("docker", ["/env/bin/python", "-c", "pass"], Sandbox("docker", memory=0, processes=0),
                          cwd="/w", writable=["/w"], name="n", status="/s", uid=1 << 30)
    assert argv[argv.index("--user") + 1] == f"{1 << 30}:{1 << 30}"
    assert "--memory" not in argv and "--pids-limit" not in argv
    assert argv[argv.index("--tmpfs") + 1].endswith(f"size={DEFAULT_MEMORY}")
    assert argv[argv.index("--shm-size") + 1] == str(DEFAULT_MEMORY)
    settings = json.loads(base64.b64decode(argv[argv.index("--") - 1]))
    assert settings == {"mode": "inside", "memory": 0, "tasks": 0, "status": "/s"}
    assert argv[-2:] == ["-c", "pass"]


def test_a_container_is_named_and_stopped_by_its_runtime_folder():
    assert container_name("/tmp/junobench-rt-AbC12") == "junobench-abc12"
    assert stop_argv(Sandbox("podman"), "/tmp/junobench-rt-x") == ["podman", "rm", "--force", "junobench-x"]
    assert stop_argv(Sandbox("bwrap"), "/tmp/junobench-rt-x") is None


def test_the_limit_that_ended_a_notebook_is_read_where_its_watchdog_wrote_it(tmp_path):
    bwrap, podman = Sandbox("bwrap", memory=1 << 30), Sandbox("podman", processes=64)
    assert limit_reached(tmp_path, bwrap) is None
    (tmp_path / "limit").write_text("memory\n")
    assert limit_reached(tmp_path, bwrap) == "out of memory: the notebook's processes used more than 1 GiB"
    assert limit_reached(tmp_path, podman) is None  # a container's watchdog writes into the ipc folder
    ipc = Path(ipc_folder(tmp_path))
    (ipc / "limit").write_text("processes")
    assert limit_reached(tmp_path, podman) == ("too many processes: the notebook ran more than 64 processes "
                                               "and threads")
    (ipc / "limit").write_text("something else")
    assert limit_reached(tmp_path, podman) is None


@pytest.mark.parametrize(("size", "said"), [
    (4 << 30, "4 GiB"), ((3 << 29), "1.5 GiB"), (512 << 20, "512 MiB"), ((1 << 20) - 1, "1024.0 KiB"),
    (1 << 10, "1 KiB"), (1023, "1023 B"), (0, "0 B"),
])
def test_sizes_are_said_in_binary_units(size, said):
    assert format_size(size) == said
