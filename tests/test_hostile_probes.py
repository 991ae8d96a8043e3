"""Containment, tried as a hostile notebook author would, as root and as an unprivileged user,
on local kernels (the Ray runs: tests/test_hostile_probes_ray.py, with the Ray modules).

A snapshot is built whose notebooks try, in their first cells: writing the kernel's
settings (``/proc/sys``, ``/proc/sysrq-trigger``), reading ``/proc/keys`` and
``/proc/kcore``, making setuid files, tracing and stopping every process they can see (the
watchdog must not be among them), the keyring, ``bpf``, ``perf_event_open``, a new user
namespace, ``mount``; reading a secret from their environment (``JUPYTER_*``, ``LC_*``,
``OMP_*`` variables included). Some then replace every file of every folder they can write
(the kernel's log, the runtime folder, the working copy) with a link to a secret of the
user's, a FIFO or a link to ``/dev/zero``, and kill themselves; one pins memory in
``/tmp``, ``/dev/shm`` and a memfd past ``--memory``; one raises an exception larger than
the output bound; two change how their kernel runs later cells (an input transformer,
``sys.settrace``); two forge the answer of the runtime-information inspection. An attempt
that works raises ``LeakError`` in the notebook, so the verdict shows it; the test checks
the verdicts, that no secret reaches what junobench prints or writes, junobench's own
peak memory, and that no folder or process is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
import unprivileged  # tests/ is on sys.path under pytest
from processes import process_mark
from snapshot_files import edit_cell

from junobench.data.checkout import checkout
from junobench.envs.sandbox import bwrap_problem
from junobench.verify.spec import case_specs

pytest.importorskip("nbclient", reason="verify needs the run extra")
pytestmark = [pytest.mark.kernel, pytest.mark.slow,
              pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")]

SECRET = "hf_probe_secret_in_the_environment_51c2"
HOST_SECRET = "hf_probe_secret_in_the_home_folder_9e07"
#: In the command line of every process a notebook starts; one per executor, as the local
#: and the Ray runs (tests/test_hostile_probes_ray.py) may run at the same time
#: (:func:`processes.process_mark`: another test run on the machine has marks of its own).
MARKS = {"local": process_mark("987651"), "ray": process_mark("987653")}
CTRL_C_MARK = process_mark("987652")

PRELUDE = '''
import ctypes, errno, glob, os, signal, stat, subprocess, sys
class LeakError(Exception):
    pass
libc = ctypes.CDLL(None, use_errno=True)
subprocess.Popen(["setsid", "sleep", "{mark}1"], start_new_session=True)
'''

PROBES = PRELUDE + '''
for path in ["/proc/sys/kernel/core_pattern", "/proc/sys/fs/file-max", "/proc/sys/vm/drop_caches",
             "/proc/sys/kernel/panic", "/proc/sys/kernel/sysrq", "/proc/sysrq-trigger"]:
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError:
        continue
    raise LeakError("could write " + path)
for path in ["/dev/probe", "/probe", "/etc/probe", "/usr/probe", "{home}/probe"]:  # outside the counted folders
    try:
        with open(path, "wb") as out:
            out.write(b"x")
    except OSError:
        continue
    raise LeakError("wrote " + path)
for path in ["/proc/keys", "/proc/key-users", "/proc/kcore", "/proc/timer_list"]:
    try:
        with open(path, "rb") as file:
            seen = file.read(4096)
    except OSError:
        continue
    if seen:
        raise LeakError("read " + path)
for mode in (0o4755, 0o2755):
    name = "probe-%o" % mode
    open(name, "w").close()
    try:
        os.chmod(name, mode)
    except PermissionError:
        pass
    try:
        os.close(os.open(name + "-new", os.O_CREAT | os.O_WRONLY, mode))
    except PermissionError:
        pass
    for made in (name, name + "-new"):
        if os.path.exists(made) and os.stat(made).st_mode & (stat.S_ISUID | stat.S_ISGID):
            raise LeakError("made a setuid or setgid file " + made)
me = os.getpid()
for entry in os.listdir("/proc"):
    if not entry.isdigit():
        continue
    pid = int(entry)
    try:
        command = open("/proc/%d/cmdline" % pid, "rb").read()
    except OSError:
        continue
    if b"'watchdog'" in command:
        raise LeakError("sees the watchdog: %d" % pid)
    if pid == me:
        continue
    for request in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE
        if libc.ptrace(request, pid, None, None) == 0:
            raise LeakError("traced %d" % pid)
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass
calls = {"keyctl": (250, 0, -4, 0), "bpf": (321, 0, 0, 0), "perf_event_open": (298, 0, 0, -1),
         "unshare": (272, 0x10000000, 0, 0), "mount": (165, 0, 0, 0)}
for name, (number, *args) in calls.items():
    if libc.syscall(number, *args) != -1:
        raise LeakError(name + " worked")
    if name in ("keyctl", "unshare") and ctypes.get_errno() != errno.EPERM:
        raise LeakError(name + " was not refused: errno %d" % ctypes.get_errno())
if {root_run}:  # junobench runs as root: the notebook's uid outside must not be root's
    with open("/proc/self/uid_map") as mapping:
        rows = [[int(v) for v in line.split()] for line in mapping]
    outside = [out + os.getuid() - inside for inside, out, count in rows if inside <= os.getuid() < inside + count]
    if outside == [0]:
        raise LeakError("runs as root outside the sandbox")
for name, value in os.environ.items():
    if "{secret}" in value:
        raise LeakError("the secret is in " + name)
    if name.startswith(("JUPYTER_", "LC_")) or (name.startswith("OMP_") and name != "OMP_NUM_THREADS"):
        raise LeakError("a variable that is not let through: " + name)
for path in ["{home}/.cache/huggingface/token", "{home}/.netrc"]:
    try:
        open(path).read()
    except OSError:
        continue
    raise LeakError("read " + path)
'''

#: Replace every file of every folder the notebook can write, then kill the kernel.
REPLACE = '''
def replacement(path):
    how = "{how}"
    if how == "link":
        os.symlink("{home}/.cache/huggingface/token", path)
    elif how == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
folders = set()
with open("/proc/self/mountinfo") as mounts:
    for line in mounts:
        fields = line.split()
        point, options = fields[4], fields[5]
        if "rw" in options.split(",") and not point.startswith(("/proc", "/dev/pts")):
            folders.add(point)
for top in sorted(folders):
    for current, _, files in os.walk(top):
        if not os.access(current, os.W_OK):
            continue
        for name in set(files) | {"limit", "kernel.log", "kernel.json", "status", "seccomp.bpf", "passwd"}:
            path = os.path.join(current, name)
            try:
                if os.path.lexists(path):
                    os.unlink(path)
                replacement(path)
            except OSError:
                pass
os.kill(os.getpid(), signal.SIGKILL)
'''

PIN_MEMORY = PRELUDE + '''
import time
chunk = b"x" * (1 << 20)
with open("/tmp/pinned", "wb") as out:
    for _ in range(200):
        out.write(chunk)
with open("/dev/shm/pinned", "wb") as out:
    for _ in range(200):
        out.write(chunk)
memory = os.memfd_create("pinned")
for _ in range(200):
    os.write(memory, chunk)
time.sleep(50)
raise LeakError("held 600 MiB in /tmp, /dev/shm and a memfd past --memory 512MiB")
'''

TRANSFORMER = '''
def forge(lines):
    return ["raise NameError('forged by an input transformer')\\n"]
get_ipython().input_transformers_post.append(forge)
'''

SETTRACE = '''
import sys
sys.settrace(lambda frame, event, arg: None)
'''

#: The runtime-information inspection's answer replaced by a forged one.
FORGE_ANSWER = '''
import IPython.display as shown
real = shown.display
def display(obj=None, *args, raw=False, **kwargs):
    if raw and isinstance(obj, dict) and any("junobench" in key for key in obj):
        return real({key: {forged} for key in obj}, raw=True)
    return real(obj, *args, raw=raw, **kwargs)
shown.display = display
'''

MEASURE = (
    "import re, sys\n"
    "from junobench.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "with open('/proc/self/status') as status:\n"
    "    peak = re.search(r'VmHWM:\\s+(\\d+)', status.read()).group(1)\n"
    "print('maxrss', peak, file=sys.stderr)\n"
    "sys.exit(code)\n")


def fill(text: str, **values: object) -> str:
    """``text`` with each ``{name}`` of ``values`` replaced (the code's own braces stay)."""
    for name, value in values.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def _first(snapshot: Path, case_id: str, version: str, index: int = 0) -> str:
    path = snapshot / "benchmark" / case_id / f"{case_id}_{version}.ipynb"
    return str([c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"][index].source)


def hostile_snapshot(root: Path, *, root_run: bool, mark: str) -> Path:
    """The sample's cases with the probes (see the module docstring) in their notebooks;
    ``root_run``: junobench will run as root (the notebook checks its uid outside);
    ``mark`` in the command line of every process the notebooks start."""
    snapshot = checkout(["NBspecific_2", "pandas_2", "pandas_1", "NBspecific_1", "seaborn_1"], "sample",
                        root / "snapshot")
    home = root / "home"
    probes = fill(PROBES, secret=SECRET, home=home, mark=mark, root_run=root_run)

    def prepend(case_id: str, version: str, code: str, index: int = 0) -> None:
        edit_cell(snapshot, case_id, version, index, code + "\n" + _first(snapshot, case_id, version, index))

    prepend("NBspecific_2", "reproduced", probes + fill(REPLACE, how="link", home=home))
    prepend("NBspecific_2", "fixed", probes + fill(REPLACE, how="fifo", home=home))
    prepend("pandas_2", "reproduced", fill(PIN_MEMORY, mark=mark))
    prepend("pandas_2", "fixed", fill(PRELUDE, mark=mark) + fill(REPLACE, how="zero", home=home))
    target = case_specs(snapshot, ["pandas_1"])[0].target
    assert target is not None
    edit_cell(snapshot, "pandas_1", "reproduced", target, 'raise KeyError("x" * 12_000_000)')
    prepend("NBspecific_1", "reproduced", TRANSFORMER)
    prepend("NBspecific_1", "fixed", SETTRACE)
    prepend("seaborn_1", "reproduced", fill(FORGE_ANSWER, forged="[1]"))
    prepend("seaborn_1", "fixed", fill(FORGE_ANSWER, forged="'[' * 100000 + ']' * 100000"))
    return snapshot


def _prepare(as_user: bool) -> tuple[Path, Callable[[list[str]], list[str]]]:
    """A folder for the run (the unprivileged user's when ``as_user``) and what makes a
    command line run as that user (:mod:`unprivileged`)."""
    root = Path(tempfile.mkdtemp(prefix="junobench-probes-", dir="/tmp"))
    if not as_user:
        return root, list
    os.chmod(root, 0o755)
    (root / "stash").mkdir()
    return root, lambda command: unprivileged.as_user(command, stash=root / "stash")


def _own(root: Path, as_user: bool) -> None:
    if as_user:
        uid, gid = unprivileged.user()
        for path in [root, *root.rglob("*")]:
            if path.name != "stash":
                os.lchown(path, uid, gid)


def _leftovers(mark: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in ps.splitlines() if mark in line and "ps -eo" not in line]


def _environment(root: Path) -> dict[str, str]:
    """verify's environment: secrets in variables and in a home folder of its own, a
    temporary folder of its own (to see that nothing is left in it)."""
    home = root / "home"
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".cache" / "huggingface" / "token").write_text(HOST_SECRET)
    (home / ".netrc").write_text(f"machine example.org password {HOST_SECRET}\n")
    (root / "tmp").mkdir()
    return {**os.environ, "HOME": str(home), "TMPDIR": str(root / "tmp"), "XDG_CACHE_HOME": str(root / "cache"),
            "HF_TOKEN": SECRET, "JUPYTER_GATEWAY_HEADERS": SECRET, "LC_JUNOBENCH": SECRET, "OMP_JUNOBENCH": SECRET,
            "RAY_TMPDIR": str(root / "ray")}


def _run(wrap: Callable[[list[str]], list[str]], args: list[str], env: dict[str, str],
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wrap([sys.executable, "-c", MEASURE, *args]), capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


def _check_clean(done: subprocess.CompletedProcess[str], root: Path, mark: str, *written: Path) -> None:
    for text, what in [(done.stdout, "stdout"), (done.stderr, "stderr"),
                       *((p.read_text(errors="replace"), p.name) for p in written)]:
        assert SECRET not in text and HOST_SECRET not in text, f"a secret in {what}"
    rss = int(done.stderr.rsplit("maxrss", 1)[1].split()[0]) * 1024  # kilobytes on Linux
    assert rss < 500 << 20, f"junobench itself peaked at {rss >> 20} MiB"
    assert sorted(os.listdir(root / "tmp")) == [], "folders left in the temporary folder"
    deadline = time.monotonic() + 20
    while _leftovers(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _leftovers(mark) == [], "processes outlived junobench"


@pytest.mark.parametrize("as_user", [False, True], ids=["as-root-or-self", "unprivileged"])
def test_a_hostile_notebook_s_every_probe_fails_or_ends_in_its_verdict(as_user):
    check_hostile_run(as_user, "local")


def check_hostile_run(as_user: bool, executor: str) -> None:
    """verify (and, on local kernels, runtime-info) of the hostile snapshot on ``executor``,
    as root (or the user running the tests) or as an unprivileged user: the verdicts, and
    nothing leaked or left."""
    mark = MARKS[executor]
    if as_user and os.geteuid() != 0:
        pytest.skip("the unprivileged run is made by a root test run (it already runs unprivileged)")
    root, wrap = _prepare(as_user)
    try:
        env = _environment(root)
        snapshot = hostile_snapshot(root, root_run=os.geteuid() == 0 and not as_user, mark=mark)
        report = root / "report.json"
        args = ["verify", "--source", str(snapshot), "--jobs", "2", "--no-progress", "--report", str(report),
                "--memory", "512MiB", "--max-processes", "64", "--max-output", "1MiB", "--timeout", "60"]
        if executor == "ray":  # a Ray instance of its own, started by verify as the user running it
            args += ["--executor", "ray"]
        _own(root, as_user)
        done = _run(wrap, args, env)
        assert done.returncode == 1 and report.exists(), done.stderr[-3000:]
        cases = json.loads(report.read_text())["cases"]

        probed = cases["NBspecific_2"]  # the probes failed, the links, FIFOs and the kill: a dead kernel
        for version in ("reproduced", "fixed"):
            assert "LeakError" not in probed[version]["reason"], probed
            assert "kernel died" in probed[version]["reason"], probed
        pinned = cases["pandas_2"]
        assert pinned["status"] == "out of memory", pinned
        assert pinned["reproduced"]["reason"].startswith("out of memory"), pinned
        assert "kernel died" in pinned["fixed"]["reason"], pinned
        large = cases["pandas_1"]  # an exception larger than the output bound: still the crash
        assert large["status"] == "passed" and large["reproduced"]["exception"] == "KeyError", large
        tampered = cases["NBspecific_1"]
        for version in ("reproduced", "fixed"):
            assert tampered[version]["reason"].startswith("tampered"), tampered
        assert cases["seaborn_1"]["status"] == "passed", cases["seaborn_1"]
        for case in cases.values():
            assert case["sandbox"] == "bwrap, network off"
        _check_clean(done, root, mark, report)

        if executor == "local":  # the runtime-information inspection's answer, forged
            records = root / "runtime.jsonl"
            done = _run(wrap, ["runtime-info", "seaborn_1", "pandas_1", "--source", str(snapshot), "--jobs", "2",
                                 "--no-progress", "--out", str(records), "--timeout", "60"], env)
            assert done.returncode == 1, done.stderr[-3000:]  # some records failed, none lost
            assert "Traceback" not in done.stderr and "2 failed, 2 ok" in done.stderr
            found = {r["instance"]: r for r in map(json.loads, records.read_text().splitlines())}
            assert {k: found[k]["status"] for k in sorted(found)} == {
                "pandas_1_fixed": "ok", "pandas_1_reproduced": "ok",
                "seaborn_1_fixed": "failed", "seaborn_1_reproduced": "failed"}
            for version in ("reproduced", "fixed"):
                assert "the kernel's answer" in found[f"seaborn_1_{version}"]["problem"]
            _check_clean(done, root, mark, records)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_ctrl_c_ends_verify_with_its_report_and_leaves_nothing(tmp_path):
    """A notebook that waits for ever on a FIFO of its working copy, another that finishes:
    SIGINT ends verify at once, the report holds the finished case, no folder or process
    is left."""
    root, wrap = _prepare(False)
    try:
        env = _environment(root)
        snapshot = checkout(["NBspecific_2", "pandas_2"], "sample", root / "snapshot")
        edit_cell(snapshot, "pandas_2", "reproduced", 0, fill(PRELUDE, mark=CTRL_C_MARK)
                  + "os.mkfifo('wait')\nopen('wait').read()\n")
        report = root / "report.json"
        process = subprocess.Popen(wrap([sys.executable, "-m", "junobench", "verify", "--source", str(snapshot),
                                         "--jobs", "2", "--no-progress", "--report", str(report), "--timeout", "600"]),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (report.exists() and "NBspecific_2" in report.read_text()):
            time.sleep(0.2)
        while time.monotonic() < deadline and not _leftovers(CTRL_C_MARK):  # the FIFO's notebook runs
            time.sleep(0.2)
        assert "NBspecific_2" in report.read_text(), "the finished case never reached the report"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr[-2000:]
        assert "interrupted" in stderr and "Traceback" not in stderr
        saved = json.loads(report.read_text())["cases"]
        assert saved["NBspecific_2"]["status"] == "passed"
        assert sorted(os.listdir(root / "tmp")) == [], "folders left in the temporary folder"
        deadline = time.monotonic() + 20
        while _leftovers(CTRL_C_MARK) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _leftovers(CTRL_C_MARK) == [], "processes outlived verify"
    finally:
        shutil.rmtree(root, ignore_errors=True)
