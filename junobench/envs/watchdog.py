"""The first process inside a notebook's sandbox: limits, then the kernel, then watching it.

Run by the kernel's own interpreter (any Python 3, ``python -I -S``: standard library only,
no syntax newer than 3.8) as the sandbox's command, before the kernel::

    python -I -S -c <this file> <memory bytes> <max tasks> <status file> -- <kernel argv>

It sets resource limits that every process of the notebook inherits (``RLIMIT_DATA``: a
process's heap and private mappings, so an allocation past the memory limit fails with
``MemoryError``; ``RLIMIT_NPROC``: tasks of the sandbox's user, enforced for any user but
root; no core files), starts the kernel as its child and polls the sandbox's own ``/proc``
(a fresh PID namespace: only the notebook's processes) every few milliseconds. When the
notebook's processes together hold more than the memory limit in RAM, or run more tasks
(processes and threads) than allowed, it writes ``memory`` or ``processes`` to the status
file and kills every process of the sandbox. A kernel that dies near the memory limit (its
data size at the last look, or its peak in RAM that the system reports when it ends: it may
grow and die between two looks) is said to have run out of memory too. It exits with the
kernel; the sandbox's PID 1 exits with it and the kernel of the machine kills whatever the
notebook left behind.
"""

import os
import resource
import signal
import sys
import time

#: Seconds between two looks at the sandbox's processes.
INTERVAL = 0.05


def limit(kind: int, value: int) -> None:
    """Set a soft and hard limit (lowering only; a hard limit above ours stays ours)."""
    if value <= 0:
        return
    _soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def usage(page: int) -> "tuple[int, int]":
    """(resident bytes, tasks) of every process this one can see but itself; the bytes are
    an upper bound (pages a fork shares are counted in each process)."""
    rss = tasks = 0
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/" + name + "/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 22:
            tasks += int(fields[17])
            rss += int(fields[21]) * page
    return rss, tasks


def proportional() -> int:
    """The bytes the processes hold, each shared page split between its sharers (PSS:
    exact, slower to read than :func:`usage`, so read only past the limit)."""
    total = 0
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/" + name + "/smaps_rollup", "rb") as smaps:
                for line in smaps:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total


def data_size(pid: int, page: int) -> int:
    """The bytes of ``pid``'s data segment and private mappings (what RLIMIT_DATA counts)."""
    try:
        with open("/proc/" + str(pid) + "/statm", "rb") as statm:
            return int(statm.read().split()[5]) * page
    except (OSError, ValueError, IndexError):
        return 0


def kill_all() -> None:
    """SIGKILL every process of the sandbox but this one, until none is left."""
    for _ in range(1000):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.001)


def main(argv: "list[str]") -> int:
    memory, tasks, status = int(argv[0]), int(argv[1]), argv[2]
    command = argv[4:]
    limit(resource.RLIMIT_DATA, memory)
    limit(resource.RLIMIT_NPROC, tasks)
    limit(resource.RLIMIT_CORE, 0)
    kernel = os.fork()
    if kernel == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    page = os.sysconf("SC_PAGE_SIZE")
    near = 0  # the kernel's data size at the last look
    while True:
        done, code, used = os.wait4(kernel, os.WNOHANG)
        if done:
            peak = used.ru_maxrss * 1024  # kilobytes: the kernel's peak in RAM, seen by the system
            sys.stderr.write("junobench sandbox: the kernel ended (wait status " + str(code) + ", data "
                             + str(near >> 20) + " MiB, peak " + str(peak >> 20) + " MiB)\n")
            if memory > 0 and max(near, peak) >= memory * 0.9:
                # an allocation a library did not check (C++ new, a thread's stack) killed it;
                # the peak: it may have grown and died between two looks
                record(status, "memory")
            return os.waitstatus_to_exitcode(code) if hasattr(os, "waitstatus_to_exitcode") else code >> 8
        near = data_size(kernel, page) or near  # 0 once it is a zombie: keep the last size
        rss, running = usage(page)
        reason = ""
        if tasks > 0 and running > tasks:
            reason = "processes"
        elif memory > 0 and rss > memory and proportional() > memory:
            reason = "memory"
        if reason:
            record(status, reason)
            kill_all()
            return 137
        time.sleep(INTERVAL)


def record(status: str, reason: str) -> None:
    with open(status, "w") as out:
        out.write(reason + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
