"""The system calls a notebook never needs, refused inside the sandbox (a seccomp filter).

:func:`seccomp_program` compiles the filter with libseccomp (through ``pyseccomp``, its
ctypes bindings) into the BPF program that bubblewrap loads with ``--seccomp FD`` before it
starts the kernel: every process of the notebook inherits it, and nothing can remove it.
Everything is allowed but what :data:`REFUSED` lists, which fails with ``EPERM`` (a program
sees an ordinary "operation not permitted"):

- tracing other processes: ``ptrace`` attaching to a process (``PTRACE_ATTACH``,
  ``PTRACE_SEIZE``: a process may still ask its parent to trace it, ``PTRACE_TRACEME``, so
  debuggers work on their own children), ``process_vm_readv``/``process_vm_writev``;
- the kernel's keyrings (``keyctl``, ``add_key``, ``request_key``), ``bpf``,
  ``perf_event_open``, ``userfaultfd``, ``io_uring_*``;
- mounting (``mount``, ``umount2``, ``pivot_root``, the new mount API), new namespaces
  (``unshare``, ``setns``, ``clone`` with a namespace flag; ``clone3`` answers ``ENOSYS``
  so that the C library falls back to ``clone``, whose flags the filter can read);
- loading code into the kernel (``init_module``, ``finit_module``, ``delete_module``,
  ``kexec_load``, ``kexec_file_load``) and the machine's settings (``reboot``, ``swapon``,
  ``swapoff``, ``syslog``, ``acct``, ``settimeofday``, ``clock_settime``,
  ``clock_adjtime``, ``quotactl``, ``iopl``, ``ioperm``, ``vhangup``);
- file handles that bypass the mount's view (``open_by_handle_at``,
  ``name_to_handle_at``);
- setuid and setgid bits: ``chmod``, ``fchmod``, ``fchmodat``, ``fchmodat2``, ``open``,
  ``openat`` and ``creat`` with a mode holding ``S_ISUID`` or ``S_ISGID``;
- System V shared memory (``shmget``): its segments outlive the processes that made them,
  where no watchdog could count them against ``--memory`` (POSIX shared memory in
  ``/dev/shm`` and ``memfd_create`` work, and count);
- ``ioctl(TIOCSTI)``: typing into a terminal.

Calls of another architecture's ABI (a 32-bit ``int 0x80`` on x86-64) answer ``ENOSYS``.
Where libseccomp or its bindings are missing, :func:`seccomp_problem` says so and the
sandbox runs without the filter (the report says which).

>>> "keyctl" in REFUSED and "ptrace" in REFUSED
True
"""

from __future__ import annotations

import errno
import functools
import tempfile
from typing import Any

#: System calls refused outright (see the module docstring; the others are refused for
#: some arguments only: see :func:`_rules`).
REFUSED_ALWAYS: tuple[str, ...] = (
    "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2", "pivot_root",
    "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "setns",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "syslog", "acct", "settimeofday", "clock_settime", "clock_adjtime", "quotactl", "iopl", "ioperm",
    "vhangup", "open_by_handle_at", "name_to_handle_at", "shmget",
)
#: Every system call the filter refuses, outright or for some arguments.
REFUSED: tuple[str, ...] = (*REFUSED_ALWAYS, "ptrace", "unshare", "clone", "clone3", "chmod", "fchmod",
                            "fchmodat", "fchmodat2", "open", "openat", "creat", "ioctl")

PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
#: Every namespace flag of clone/unshare (user, mount, PID, network, IPC, UTS, cgroup, time).
NAMESPACE_FLAGS = (0x10000000, 0x00020000, 0x20000000, 0x40000000, 0x08000000, 0x04000000, 0x02000000,
                   0x00000080)
S_ISUID, S_ISGID = 0o4000, 0o2000
TIOCSTI = 0x5412
#: Which argument holds the mode, for the calls that set one.
MODE_ARGUMENT = {"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2, "open": 2, "openat": 3, "creat": 1}


@functools.lru_cache(maxsize=1)
def seccomp_problem() -> str | None:
    """Why no filter can be made here (None: it can)."""
    try:
        _program()
    except (ImportError, OSError, RuntimeError, ValueError, AttributeError) as error:
        return f"no seccomp filter ({type(error).__name__}: {error}; install libseccomp2 and pyseccomp)"
    return None


def seccomp_program() -> bytes:
    """The compiled filter (raw BPF, as bubblewrap's ``--seccomp`` reads it); raises when
    :func:`seccomp_problem` says why it cannot be made."""
    return _program()


@functools.lru_cache(maxsize=1)
def _program() -> bytes:
    import pyseccomp as seccomp

    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(errno.ENOSYS))
    for name, action, comparisons in _rules(seccomp, refuse):
        rules.add_rule(action, name, *comparisons)
    with tempfile.TemporaryFile() as file:  # libseccomp writes to a file descriptor
        rules.export_bpf(file)
        file.seek(0)
        program = file.read()
    if not program or len(program) % 8:
        raise RuntimeError("libseccomp exported an empty or truncated program")
    return program


def _rules(seccomp: Any, refuse: int) -> list[tuple[str, int, tuple[Any, ...]]]:
    """(system call, action, argument comparisons) of the filter."""
    rules: list[tuple[str, int, tuple[Any, ...]]] = [(name, refuse, ()) for name in REFUSED_ALWAYS]
    rules += [("ptrace", refuse, (seccomp.Arg(0, seccomp.EQ, request),)) for request in (PTRACE_ATTACH, PTRACE_SEIZE)]
    for name in ("unshare", "clone"):
        rules += [(name, refuse, (seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag),)) for flag in NAMESPACE_FLAGS]
    rules.append(("clone3", seccomp.ERRNO(errno.ENOSYS), ()))
    for name, argument in MODE_ARGUMENT.items():
        rules += [(name, refuse, (seccomp.Arg(argument, seccomp.MASKED_EQ, bit, bit),)) for bit in (S_ISUID, S_ISGID)]
    rules.append(("ioctl", refuse, (seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, TIOCSTI),)))
    return rules
