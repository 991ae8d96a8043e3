"""The process that starts a notebook's sandbox, applies its limits and watches it from outside.

Run by an interpreter of the host (any Python 3.8+, ``python -I -S``: standard library
only) in front of the sandbox::

    python -I -S -c <this file> <base64 JSON settings> -- <bwrap argv …> -- <kernel argv>

**bubblewrap** (``"mode": "bwrap"``). The watchdog sets the resource limits every process
of the notebook inherits (``RLIMIT_DATA``: a process's heap and private mappings; no core
files; ``RLIMIT_NPROC``, the tasks of the sandbox's user, is set inside by
``junobench.envs.sandbox.SHIM``), hands bubblewrap the seccomp program (``--seccomp``)
and a pipe on which bubblewrap says the host PID of the sandbox's first process
(``--info-fd``), and starts it. As root, it also makes the sandbox's user namespace map
the notebook's user to an unprivileged uid of the host (``--userns-block-fd``: bubblewrap
waits until the maps are written). It stays outside the
sandbox, in the parent PID namespace: no process of the notebook can see it, signal it or
trace it, and it is not their parent; when its own parent (junobench) ends, killed outright,
it kills the sandbox (no kernel outlives the run that started it). Every few milliseconds
it reads the sandbox's own
``/proc`` (through ``/proc/<first>/root/proc``) and counts what the notebook holds in
memory: the processes' resident memory, the private ``/tmp`` and ``/dev/shm`` (tmpfs:
files count until deleted and closed), and the memfd objects the processes hold or map;
and the tasks (processes and threads). Past a limit it writes ``memory`` or ``processes``
to the status file (in a folder the notebook cannot write) and kills the sandbox's first
process, which takes every process of the sandbox with it. A kernel that dies near the
memory limit (the largest data segment at the last look, or the peak the system reports
when the sandbox ends) is said to have run out of memory too.

**Inside a container** (``"mode": "inside"``, ``--sandbox docker|podman``), where the
engine applies the limits with a cgroup, it runs as the container's first command, starts
the kernel as its child and watches the container's ``/proc`` the same way.
"""

import base64
import contextlib
import json
import os
import resource
import signal
import stat
import sys
import time

#: Seconds between two looks at the sandbox's processes.
INTERVAL = 0.05
#: The notebook's user inside the sandbox (mapped to an unprivileged uid as root).
SANDBOX_UID = 1000
#: Where the sandbox's in-memory folders are, inside it.
TMPFS = ("/tmp", "/dev/shm")
#: Names of shared-memory objects that no tmpfs folder of the sandbox holds.
SHMEM_NAMES = (b"/memfd:", b"/dev/zero", b"/SYSV", b"/anon_hugepage")


def limit(kind: int, value: int) -> None:
    """Set a soft and hard limit (lowering only; a hard limit above ours stays ours)."""
    if value <= 0:
        return
    _soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def set_limits(memory: int, tasks: int) -> None:
    """The limits every process of the notebook inherits (``tasks`` 0: set inside the
    sandbox instead, once its user namespace exists)."""
    limit(resource.RLIMIT_DATA, memory)
    limit(resource.RLIMIT_NPROC, tasks)
    limit(resource.RLIMIT_CORE, 0)


class Sandbox:
    """What the watchdog sees of one sandbox: its ``/proc`` (``proc``), its root, and the
    PID (as ``proc`` numbers them) not to count (the watchdog itself, inside a container)."""

    def __init__(self, proc: str, root: str, skip: str = "") -> None:
        self.proc, self.root, self.skip = proc, root, skip
        self.page = os.sysconf("SC_PAGE_SIZE")

    def pids(self) -> "list[str]":
        try:
            return [n for n in os.listdir(self.proc) if n.isdigit() and n != self.skip]
        except OSError:
            return []

    def usage(self, pids: "list[str]") -> "tuple[int, int, str]":
        """(resident bytes, tasks, the PID holding most) of the processes; the bytes are an
        upper bound (pages a fork shares are counted in each process)."""
        rss = tasks = most = 0
        largest = ""
        for pid in pids:
            try:
                with open(self.proc + "/" + pid + "/stat", "rb") as file:
                    fields = file.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue  # gone meanwhile
            if len(fields) > 22:
                tasks += int(fields[17])
                held = int(fields[21]) * self.page
                rss += held
                if held > most:
                    most, largest = held, pid
        return rss, tasks, largest

    def tmpfs(self) -> "tuple[int, set[tuple[int, int]]]":
        """Bytes the sandbox's tmpfs folders hold, and their devices (major, minor)."""
        used, devices = 0, set()
        for folder in TMPFS:
            try:
                fd = os.open(self.root + folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                device = os.fstat(fd).st_dev
                if (os.major(device), os.minor(device)) in devices:
                    continue
                devices.add((os.major(device), os.minor(device)))
                info = os.fstatvfs(fd)
                used += (info.f_blocks - info.f_bfree) * info.f_frsize
            except OSError:
                pass
            finally:
                os.close(fd)
        return used, devices

    def shared(self, pids: "list[str]", devices: "set[tuple[int, int]]") -> "dict[tuple[int, int, int], int]":
        """Shared-memory objects (memfd, shared anonymous memory) the processes hold open,
        outside the tmpfs ``devices``: (major, minor, inode) → bytes."""
        found: dict[tuple[int, int, int], int] = {}
        for pid in pids:
            folder = self.proc + "/" + pid + "/fd"
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                try:
                    target = os.readlink(folder + "/" + name).encode("utf-8", "surrogateescape")
                    if not target.startswith(SHMEM_NAMES):
                        continue
                    info = os.stat(folder + "/" + name)  # the open object itself (never opened here)
                except OSError:
                    continue
                key = (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
                if key[:2] not in devices and stat.S_ISREG(info.st_mode):
                    found[key] = info.st_blocks * 512
        return found

    def exact(self, pids: "list[str]", devices: "set[tuple[int, int]]",
              shared: "dict[tuple[int, int, int], int]") -> int:
        """The bytes the processes hold, each shared page split between its sharers (PSS),
        without their shared memory, which is counted once, as what it holds (``shared``,
        completed here with the objects that are mapped but no longer open)."""
        total = 0
        for pid in pids:
            try:
                with open(self.proc + "/" + pid + "/smaps_rollup", "rb") as file:
                    rollup = {line.split(b":")[0]: line.split()[1] for line in file if line.startswith(b"Pss")}
                pss = int(rollup.get(b"Pss", 0)) * 1024
                shmem = int(rollup.get(b"Pss_Shmem", 0)) * 1024
            except (OSError, ValueError, IndexError):
                continue
            total += pss - shmem
            if shmem:
                self._mapped(pid, devices, shared)
        return total + sum(shared.values())

    def _mapped(self, pid: str, devices: "set[tuple[int, int]]", shared: "dict[tuple[int, int, int], int]") -> None:
        key = None
        try:
            with open(self.proc + "/" + pid + "/smaps", "rb") as file:
                for line in file:
                    head = line.split(None, 5)
                    if len(head) >= 5 and b"-" in head[0] and b":" in head[3]:
                        key = None
                        name = head[5].strip() if len(head) > 5 else b""
                        if name.startswith(SHMEM_NAMES):
                            major, minor = (int(part, 16) for part in head[3].split(b":"))
                            if (major, minor) not in devices:
                                key = (major, minor, int(head[4]))
                    elif key is not None and line.startswith(b"Rss:"):
                        shared[key] = max(shared.get(key, 0), int(line.split()[1]) * 1024)
        except (OSError, ValueError):
            return

    def data_size(self, pid: str) -> int:
        """The bytes of ``pid``'s data segment and private mappings (what RLIMIT_DATA counts)."""
        try:
            with open(self.proc + "/" + pid + "/statm", "rb") as file:
                return int(file.read().split()[5]) * self.page
        except (OSError, ValueError, IndexError):
            return 0

    def over(self, memory: int, tasks: int) -> "tuple[str, int]":
        """(``memory``, ``processes`` or ``""``; the largest data size) of one look."""
        pids = self.pids()
        rss, running, largest = self.usage(pids)
        near = self.data_size(largest) if largest else 0
        if tasks > 0 and running > tasks:
            return "processes", near
        if memory > 0:
            held, devices = self.tmpfs()
            shared = self.shared(pids, devices)
            if rss + held + sum(shared.values()) > memory and self.exact(pids, devices, shared) + held > memory:
                return "memory", near
        return "", near


def exit_code(status: int) -> int:
    """The exit code of a wait status (128 + the signal for a killed process)."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def record(status: str, reason: str) -> None:
    """Write ``reason`` to the status file (a new file: never through a link)."""
    if not status:
        return
    fd = os.open(status, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, reason.encode() + b"\n")
    finally:
        os.close(fd)


def watch(sandbox: Sandbox, child: int, memory: int, tasks: int, status: str, kill: "object",
          parent: int = 0) -> int:
    """Look at ``sandbox`` until its process ``child`` ends or a limit is passed (then
    ``kill()``); the child's exit code (137 when a limit ended it). With ``parent`` (the
    process that started the watchdog), a watchdog whose parent ended (killed outright:
    nobody will ever stop the kernel) kills the sandbox too."""
    near = 0
    while True:
        if parent and os.getppid() != parent:  # orphaned: given to init or a subreaper
            kill()  # type: ignore[operator]
            os.waitpid(child, 0)
            return 137
        done, code, used = os.wait4(child, os.WNOHANG)
        if done:
            # kilobytes: the largest process's peak, seen by the system (the sandbox's PID 1,
            # which reaped the kernel, may have ended after bubblewrap: reaped here, a subreaper)
            peak = max(used.ru_maxrss, reap_rest()) * 1024
            sys.stderr.write("junobench sandbox: the kernel ended (wait status " + str(code) + ", data "
                             + str(near >> 20) + " MiB, peak " + str(peak >> 20) + " MiB)\n")
            if memory > 0 and max(near, peak) >= memory * 0.9:
                # an allocation a library did not check (C++ new, a thread's stack) killed it;
                # the peak: it may have grown and died between two looks
                record(status, "memory")
            return exit_code(code)
        reason, size = sandbox.over(memory, tasks)
        near = size or near  # 0 once the process is gone: keep the last size
        if reason:
            record(status, reason)
            kill()  # type: ignore[operator]
            os.waitpid(child, 0)
            return 137
        time.sleep(INTERVAL)


def reap_rest(seconds: float = 5.0) -> int:
    """Reap the children left to this process (a subreaper: the sandbox's processes whose
    parents ended first), for at most ``seconds``; the largest peak (KiB) among them."""
    peak = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            done, _code, used = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            peak = max(peak, used.ru_maxrss)
        else:
            time.sleep(0.005)
    return peak


def become_subreaper() -> None:
    """Make this process the one that orphaned descendants are given to (Linux), so that
    the peak of every process of the sandbox reaches it when they end."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _read_info(fd: int) -> "dict[str, object]":
    """What bubblewrap writes on ``--info-fd`` (a small JSON object), read to its end."""
    data = b""
    while len(data) < 65536:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    return json.loads(data.decode()) if data.strip() else {}


def _map_identity(pid: int, uid: int) -> None:
    """Map the sandbox's root to root (bubblewrap sets the sandbox up as it) and the
    notebook's user to ``uid``, an unprivileged uid of the host (and group)."""
    for name in ("uid_map", "gid_map"):
        fd = os.open("/proc/" + str(pid) + "/" + name, os.O_WRONLY)
        try:
            os.write(fd, ("0 0 1\n" + str(SANDBOX_UID) + " " + str(uid) + " 1\n").encode())
        finally:
            os.close(fd)


def bwrap(settings: "dict[str, object]", command: "list[str]") -> int:
    """Start ``command`` (bubblewrap's argv) and watch the sandbox it makes."""
    parent = int(settings.get("parent") or 0) or os.getppid()  # type: ignore[call-overload]
    memory, tasks = int(settings.get("memory") or 0), int(settings.get("tasks") or 0)  # type: ignore[call-overload]
    status, uid = str(settings.get("status") or ""), settings.get("uid")
    info_read, info_write = os.pipe()
    passed = [info_write]
    extra = ["--info-fd", str(info_write)]
    block = None
    if uid is not None:
        block = os.pipe()
        passed.append(block[0])
        extra += ["--userns-block-fd", str(block[0])]
    if settings.get("seccomp"):
        program = os.open(str(settings["seccomp"]), os.O_RDONLY | os.O_NOFOLLOW)
        passed.append(program)
        extra += ["--seccomp", str(program)]
    argv = [command[0], *extra, *command[1:]]
    become_subreaper()
    child = os.fork()
    if child == 0:
        try:
            set_limits(memory, 0)  # the tasks: by the shim inside (junobench.envs.sandbox.SHIM)
            for fd in passed:
                os.set_inheritable(fd, True)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    for fd in passed:
        os.close(fd)
    try:
        first = int(_read_info(info_read).get("child-pid") or 0)  # type: ignore[call-overload]
    except ValueError:
        first = 0
    if block is not None:
        if first:
            _map_identity(first, int(uid))  # type: ignore[call-overload]
        os.write(block[1], b"1")
        os.close(block[1])
    if not first:  # bubblewrap failed before it made the sandbox (it said why)
        return exit_code(os.waitpid(child, 0)[1])
    root = "/proc/" + str(first) + "/root"
    host_root = os.stat("/")
    while True:  # until bubblewrap has moved into the sandbox's root: its /proc is then the sandbox's
        try:
            here = os.stat(root + "/")
            if (here.st_dev, here.st_ino) != (host_root.st_dev, host_root.st_ino):
                break
        except OSError:
            pass
        done, code = os.waitpid(child, os.WNOHANG)
        if done:
            return exit_code(code)
        if os.getppid() != parent:  # orphaned while the sandbox starts: it ends with bubblewrap
            with contextlib.suppress(ProcessLookupError):
                os.kill(first, signal.SIGKILL)
            return exit_code(os.waitpid(child, 0)[1])
        time.sleep(0.005)

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(first, signal.SIGKILL)  # the sandbox's PID 1: every process of it ends with it

    return watch(Sandbox(root + "/proc", root), child, memory, tasks, status, kill, parent)


def inside(settings: "dict[str, object]", command: "list[str]") -> int:
    """Start the kernel ``command`` as this process's child in a container and watch it."""
    memory, tasks = int(settings.get("memory") or 0), int(settings.get("tasks") or 0)  # type: ignore[call-overload]
    set_limits(memory, tasks)
    kernel = os.fork()
    if kernel == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)

    def kill_all() -> None:
        for _ in range(1000):
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                return
            time.sleep(0.001)

    return watch(Sandbox("/proc", "", str(os.getpid())), kernel, memory, tasks,
                 str(settings.get("status") or ""), kill_all)


def main(argv: "list[str]") -> int:
    settings = json.loads(base64.b64decode(argv[0]).decode())
    command = argv[2:]  # after "--"
    if settings.get("mode") == "bwrap":
        return bwrap(settings, command)
    return inside(settings, command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
