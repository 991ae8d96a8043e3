"""How a kernel for an environment is started, started ahead and stopped: the one place
that knows.

A :class:`KernelTarget` names the interpreter a notebook's kernel runs in: junobench's own
(:func:`own_kernel`) or that of an environment made by ``junobench env create``
(:func:`env_kernel`). :func:`start_kernel` starts an IPython kernel of that interpreter in
a working directory, with an environment dictionary (:func:`kernel_env`), inside a
sandbox (:mod:`junobench.envs.sandbox`; by default ``auto`` with its default limits: a
caller that says nothing still gets one), and returns it connected and ready;
:meth:`StartedKernel.shutdown` kills it. A :class:`KernelPool` keeps a few kernels
starting ahead, so that start-up overlaps execution. A confined kernel talks over Unix
sockets in a runtime folder of its own; the client's sockets refuse messages larger than
the output kept per cell (plus a margin), so that a kernel cannot make junobench itself
hold what it prints. Verify's runner, its local executor and a remote worker start their
kernels here.

>>> target = own_kernel()                                             # doctest: +SKIP
>>> kernel = run_sync(start_kernel(target, cwd=".", env=dict(os.environ)))  # doctest: +SKIP
>>> run_sync(kernel.shutdown())                                       # doctest: +SKIP
>>> pool = KernelPool(target, size=2, notebooks=10, env=kernel_env())      # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from junobench.envs.create import read_manifest
from junobench.envs.installer import venv_python
from junobench.envs.sandbox import (
    Sandbox,
    confine,
    confined_environ,
    hand_over,
    ipc_folder,
    limit_reached,
    reclaim,
    sandbox_uid,
    stop_argv,
)
from junobench.errors import JunoBenchError
from junobench.safety.env import scrub
from junobench.safety.paths import read_bounded

#: The kernel name clients ask for (any name resolves to the target's spec).
KERNEL_NAME = "python3"
#: How long a kernel may take to start and answer (seconds).
STARTUP_TIMEOUT = 120
#: Environment defaults for the kernel: single-threaded maths libraries (parallel kernels
#: do not oversubscribe the cores), a fixed hash seed, no debugger start-up chatter.
KERNEL_ENV_DEFAULTS: dict[str, str] = {
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}
#: Name of the working directory inside each pooled kernel's scratch folder.
WORK_DIR = "case"
#: A pooled kernel's own output, beside the working directory.
KERNEL_LOG = "kernel.log"
#: Largest message a client socket takes beyond the output kept per cell (headers, an
#: error's traceback); a larger one is refused by ZeroMQ before it is read into memory.
MESSAGE_MARGIN = 1 << 20
#: Messages a channel queues on junobench's side before it stops reading the kernel's
#: socket: what a kernel sends faster than it is read then waits in the kernel's own
#: (confined, memory-limited) queue, not in junobench's memory.
RECEIVE_QUEUE = 16
#: The type of the message a client reads in place of one from the kernel it cannot use
#: (:func:`dropped_message`).
DROPPED = "junobench_dropped"
#: Seconds a kernel may take to stop before its process is killed.
SHUTDOWN_TIMEOUT = 30.0
#: Bytes of the end of a kernel's log read back (to quote its last line).
LOG_TAIL = 4096
#: Characters kept of an error's value (and of each traceback line) in the messages the
#: kernel sends, and of its whole traceback: an exception whose message is larger than the
#: client's message cap still reaches junobench as an error (cut, and marked as cut).
ERROR_TEXT = 10_000
TRACEBACK_TEXT = 256 << 10

#: Run in the kernel as it starts (``exec_lines``, base64 so that no brace reaches Jupyter's
#: command templating): every message carrying an error is cut to the bounds above.
_CAP_ERRORS = """
def __junobench_cap(limit=LIMIT, total=TOTAL):
    from IPython import get_ipython
    session = get_ipython().kernel.session
    send = session.send
    def cut(text, most):
        text = str(text)
        if len(text) <= most:
            return text
        return text[:most] + "[junobench: cut, " + str(len(text) - most) + " more characters]"
    def capped(stream, msg_or_type, content=None, *args, **kwargs):
        if isinstance(content, dict) and ("evalue" in content or "traceback" in content):
            content = dict(content)
            content["ename"] = cut(content.get("ename", ""), 200)
            content["evalue"] = cut(content.get("evalue", ""), limit)
            kept, size = [], 0
            for line in content.get("traceback") or []:
                line = cut(line, limit)
                if size + len(line) > total:
                    kept.append("[junobench: traceback cut]")
                    break
                kept.append(line)
                size += len(line)
            content["traceback"] = kept
        return send(stream, msg_or_type, content, *args, **kwargs)
    session.send = capped
__junobench_cap()
del __junobench_cap
""".replace("LIMIT", str(ERROR_TEXT)).replace("TOTAL", str(TRACEBACK_TEXT))


@dataclass(frozen=True)
class KernelTarget:
    """The interpreter a kernel runs in; ``env_dir`` the environment folder (None: junobench's
    own interpreter); ``environment`` the environment's name, when it has one."""

    python: str
    env_dir: str | None = None
    environment: str | None = None

    def argv(self) -> list[str]:
        """The kernel's command line (Jupyter fills in the connection file); the kernel cuts
        the errors it sends (:data:`ERROR_TEXT`)."""
        code = base64.b64encode(_CAP_ERRORS.encode()).decode()
        return [self.python, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                f"--IPKernelApp.exec_lines=import base64; exec(base64.b64decode('{code}')); del base64"]

    def environ(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with the environment's ``bin`` first on ``PATH`` and ``VIRTUAL_ENV`` set,
        so that shell lines (``!python``, ``!pip``) reach the same environment."""
        env = dict(base)
        if self.env_dir is not None:
            bin_dir = str(Path(self.python).parent)
            env["PATH"] = bin_dir + (os.pathsep + env["PATH"] if env.get("PATH") else "")
            env["VIRTUAL_ENV"] = self.env_dir
            for leak in ("PYTHONHOME", "PYTHONPATH"):  # never junobench's own packages
                env.pop(leak, None)
        return env


def kernel_env(base: Mapping[str, str] | None = None, *, keep: Iterable[str] = ()) -> dict[str, str]:
    """The kernel's environment: ``base`` (default: ours) without its credential-like
    variables (:mod:`junobench.safety.env`; those named in ``keep`` stay), plus
    :data:`KERNEL_ENV_DEFAULTS` where unset; ``MPLBACKEND`` is dropped so figures render
    inline as in Jupyter."""
    env = scrub(os.environ if base is None else base, keep=keep)
    env.pop("MPLBACKEND", None)
    for key, value in KERNEL_ENV_DEFAULTS.items():
        env.setdefault(key, value)
    return env


def own_kernel() -> KernelTarget:
    """Kernels of the interpreter running junobench (not a registered ``python3`` spec)."""
    return KernelTarget(sys.executable)


def env_kernel(env_dir: str | Path) -> KernelTarget:
    """Kernels of an environment folder made by ``junobench env create``."""
    folder = Path(env_dir).expanduser().absolute()
    manifest = read_manifest(folder)
    python = venv_python(folder)
    if not python.is_file():
        raise JunoBenchError("the environment has no interpreter", file=python,
                             hint=f"recreate it with `junobench env create {env_dir}`")
    return KernelTarget(str(python), str(folder), manifest["environment"]["name"])


@dataclass
class StartedKernel:
    """A started, ready kernel: its manager and client, its process id, the file its own
    output goes to, how long it took to start and, for a kernel started ahead, how long
    its user waited for it (``waited``)."""

    km: Any
    kc: Any
    target: KernelTarget
    cwd: str
    log: str | None = None
    seconds: float = 0.0
    pid: int | None = None
    waited: float = 0.0
    sandbox: Sandbox = field(default_factory=lambda: Sandbox("none"))
    runtime: str | None = None
    uid: int | None = None  # the host uid its notebook runs as (as root), None: ours
    writable: tuple[str, ...] = ()  # the folders its notebook may write
    _sinks: ExitStack = field(default_factory=ExitStack)
    _log_fd: int | None = None  # the kernel's log, as opened before it started

    def limit(self) -> str | None:
        """The sandbox's limit that ended the kernel (``out of memory: …``), if one did."""
        return None if self.runtime is None else limit_reached(self.runtime, self.sandbox)

    def log_tail(self) -> str:
        """The end of the kernel's own output (a few KiB at most), read from the file opened
        before the kernel started: a notebook that replaced the log's name with a link, a
        FIFO or a device changes nothing of what is read."""
        if self._log_fd is None:
            return ""
        try:
            return read_bounded(self._log_fd, limit=LOG_TAIL, tail=True).decode(errors="replace")
        except OSError:
            return ""

    def hand_over(self) -> None:
        """Give the notebook's user (as root) what its folders hold now (the task's files
        copied in after the kernel started)."""
        hand_over(self.writable, self.uid)

    async def shutdown(self) -> None:
        """Kill the kernel and release its channels and connection files, with
        jupyter_client's public calls (safe to call twice)."""
        km, kc = self.km, self.kc
        self.km = self.kc = None
        try:
            if kc is not None:
                kc.stop_channels()
        finally:
            try:
                if km is not None:
                    await asyncio.wait_for(_stop(km), SHUTDOWN_TIMEOUT)
            except asyncio.TimeoutError:  # a kernel that does not stop: its process is killed
                pid = self.pid or _pid(km)
                if pid is not None:
                    with suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                _remove(getattr(km, "connection_file", None))
            finally:
                self._sinks.close()
                await asyncio.to_thread(reclaim, self.writable, self.uid)
                self.writable = ()
                self._remove_runtime()

    def _remove_runtime(self) -> None:
        runtime, self.runtime = self.runtime, None
        if runtime is None:
            return
        stop = stop_argv(self.sandbox, runtime)
        if stop is not None:  # a container outlives its killed client
            subprocess.run(stop, capture_output=True, timeout=60, check=False)
        shutil.rmtree(runtime, ignore_errors=True)


def kernel_manager_class(target: KernelTarget, argv: list[str] | None = None) -> type:
    """An ``AsyncKernelManager`` whose every kernel name means ``target``'s interpreter,
    started with ``argv`` (default: :meth:`KernelTarget.argv`; no kernelspec directories are
    searched). Interrupts travel as messages (a signal would reach the sandbox, not the
    kernel). Its clients read each message the kernel sends as data from the notebook:
    one that cannot be read, or whose parts are not the JSON objects Jupyter's clients
    take them for (:func:`message_problem`), is replaced by :func:`dropped_message`."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.session import Session
    from traitlets import default

    spec = KernelSpec(argv=argv or target.argv(), display_name=target.environment or "Python 3 (ipykernel)",
                      language="python", metadata={"debugger": False}, interrupt_mode="message")

    class TargetSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return spec

        def find_kernel_specs(self) -> dict[str, str]:
            return {}

    class CheckedSession(Session):
        def deserialize(self, msg_list: Any, content: bool = True, copy: bool = True) -> dict[str, Any]:
            try:
                message: dict[str, Any] = super().deserialize(msg_list, content=content, copy=copy)
            except Exception as error:  # whatever the kernel sent that cannot be read
                return dropped_message(f"unreadable ({type(error).__name__})")
            problem = message_problem(message)
            return message if problem is None else dropped_message(problem)

    class TargetKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _target_specs(self) -> KernelSpecManager:
            return TargetSpecs(parent=self)

        @default("session")
        def _checked_session(self) -> Session:
            return CheckedSession(parent=self)

    return TargetKernelManager


def message_problem(message: Mapping[str, Any]) -> str | None:
    """What makes a message read from a kernel unfit for nbclient and jupyter_client,
    which index it without checking (None: nothing): a header without ``msg_id`` and
    ``msg_type`` strings, a parent header, metadata or content that is not a JSON object,
    a reply without a ``status`` string, an error reply whose ``ename``, ``evalue`` and
    ``traceback`` are not text, an ``execution_count`` that is not an integer, a ``status``
    message without an ``execution_state`` string.

    >>> message_problem({"header": {"msg_id": "1", "msg_type": "execute_reply"},
    ...                  "parent_header": {}, "metadata": {}, "content": [1]})
    'its content is not a JSON object'
    """
    header = message.get("header")
    if not isinstance(header, dict) or not isinstance(header.get("msg_id"), str) \
            or not isinstance(header.get("msg_type"), str):
        return "a header without msg_id and msg_type strings"
    parts = ("parent_header", "metadata", "content") if not isinstance(message.get("content"), bytes) \
        else ("parent_header", "metadata")  # content left packed: not read here
    for part in parts:
        if not isinstance(message.get(part), dict):
            return f"its {part.replace('_', ' ')} is not a JSON object"
    content, kind = message["content"], header["msg_type"]
    if not isinstance(content, dict):
        return None
    count = content.get("execution_count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
        return "an execution_count that is not an integer"
    if kind.endswith("_reply") and not isinstance(content.get("status"), str):
        return f"a {kind} without a status string"
    if kind == "execute_reply" and content["status"] == "error" and not (
            isinstance(content.get("ename"), str) and isinstance(content.get("evalue"), str)
            and isinstance(content.get("traceback", []), list)
            and all(isinstance(line, str) for line in content.get("traceback", []))):
        return "an error reply whose ename, evalue and traceback are not text"
    if kind == "status" and not isinstance(content.get("execution_state"), str):
        return "a status message without an execution_state string"
    return None


def dropped_message(problem: str) -> dict[str, Any]:
    """What a client reads in place of a message from the kernel that it could not use
    (``problem`` says why): a message of type :data:`DROPPED` with no parent, which no
    cell run and no request awaits, so that every reader passes it by."""
    header = {"msg_id": "", "msg_type": DROPPED, "session": "", "username": "", "date": None,
              "version": "5.3"}
    return {"header": header, "msg_id": "", "msg_type": DROPPED, "parent_header": {}, "metadata": {},
            "content": {"problem": problem}, "buffers": []}


async def start_kernel(target: KernelTarget, *, cwd: str | Path, env: Mapping[str, str],
                       log: str | Path | None = None, timeout: float = STARTUP_TIMEOUT, sandbox: Sandbox | None = None,
                       writable: Iterable[str | Path] = (), pass_env: Iterable[str] = ()) -> StartedKernel:
    """Start a kernel of ``target`` working in ``cwd`` with environment ``env`` (its own
    stdout/stderr appended to ``log``, default discarded) in ``sandbox`` (default: the
    default :class:`~junobench.envs.sandbox.Sandbox`), where ``cwd`` and the folders
    ``writable`` are the only places it may write, and ``env`` is cut down to what
    :func:`~junobench.envs.sandbox.confined_environ` lets through (and ``pass_env``); returns
    it once it answers. A kernel that does not start is killed and raises
    ``RuntimeError``/``TimeoutError``."""
    import zmq
    import zmq.asyncio

    started = time.perf_counter()
    cwd = Path(cwd).absolute()
    policy = (sandbox or Sandbox()).resolved()
    if policy.confined:
        env = confined_environ(env, pass_env)
    runtime = tempfile.mkdtemp(prefix="junobench-rt-")
    folders = tuple(dict.fromkeys([str(cwd), *(str(w) for w in writable)]))
    kernel = StartedKernel(None, None, target, str(cwd), None if log is None else str(log), sandbox=policy,
                           runtime=runtime, uid=sandbox_uid(policy), writable=folders if policy.confined else ())
    try:
        ipc = ipc_folder(runtime)
        argv = confine(target.argv(), policy, python=target.python, cwd=str(cwd), writable=folders,
                       runtime=runtime, timeout=timeout, uid=kernel.uid)
        context = zmq.asyncio.Context()
        if policy.max_output:
            context.setsockopt(zmq.MAXMSGSIZE, policy.max_output + MESSAGE_MARGIN)
        context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
        kernel._sinks.callback(context.destroy, linger=0)
        transport = {"transport": "ipc", "ip": os.path.join(ipc, "k")} if policy.confined else {}
        kernel.km = kernel_manager_class(target, argv)(
            kernel_name=KERNEL_NAME, context=context, connection_file=os.path.join(ipc, "kernel.json"),
            **transport)
        if kernel.uid is not None:  # the notebook's user reads the connection file and makes the sockets
            kernel.km.write_connection_file()
            await asyncio.to_thread(hand_over, [ipc, *folders], kernel.uid)
        sink = _open_log(kernel, log)
    except BaseException:
        await kernel.shutdown()
        raise
    manager = kernel.km
    try:
        # Every step has a deadline: a kernel that never answers (or a channel that never
        # sends) ends as a TimeoutError instead of a wait without end.
        await asyncio.wait_for(manager.start_kernel(cwd=str(cwd), env=target.environ(env), stdout=sink,
                                                    stderr=sink,
                                                    extra_arguments=["--HistoryManager.hist_file=:memory:"]),
                               timeout)
        kernel.pid = _pid(manager)
        kernel.kc = manager.client(context=context)
        kernel.kc.start_channels()
        left = max(1.0, timeout - (time.perf_counter() - started))
        await asyncio.wait_for(kernel.kc.wait_for_ready(timeout=left), left + 5)
        kernel.kc.allow_stdin = False
    except asyncio.TimeoutError:  # Python 3.10's is not the builtin TimeoutError callers catch
        await kernel.shutdown()
        raise TimeoutError(f"the kernel did not start and answer within {timeout:g} s") from None
    except BaseException:
        await kernel.shutdown()
        raise
    kernel.pid = _pid(manager)
    kernel.seconds = time.perf_counter() - started
    return kernel


class KernelPool:
    """Up to ``size`` kernels of ``target`` started ahead for ``notebooks`` notebooks, their
    folders in ``scratch`` (default: the temporary directory), each in ``sandbox`` (default:
    the default one) with its folder writable.

    Each kernel starts in a new, empty working directory and is handed out once, to one
    notebook, which copies its case folder there; a kernel is never reused. While
    notebooks run, the pool keeps ``size`` kernels starting or ready, never more than the
    notebooks still to come. :meth:`close` kills the kernels nobody took and removes their
    directories."""

    def __init__(self, target: KernelTarget, *, size: int, notebooks: int, env: Mapping[str, str],
                 startup_timeout: float = STARTUP_TIMEOUT, scratch: Path | None = None,
                 sandbox: Sandbox | None = None, pass_env: Sequence[str] = ()) -> None:
        self.target = target
        self.sandbox = sandbox or Sandbox()
        self.pass_env = tuple(pass_env)
        self.size = max(0, size)
        self.remaining = notebooks  # kernels still to hand out
        self.env = dict(env)
        self.startup_timeout = startup_timeout
        self.scratch = None if scratch is None else str(scratch)
        self._starting: deque[asyncio.Task[StartedKernel]] = deque()
        self._closed = False

    def _fill(self) -> None:
        while not self._closed and len(self._starting) < min(self.size, self.remaining):
            self._starting.append(asyncio.ensure_future(self._start()))

    async def _start(self, attempts: int = 2) -> StartedKernel:
        """A kernel in a new empty folder; one that dies while starting (a busy machine,
        a port taken meanwhile) is tried once more."""
        for attempt in range(1, attempts + 1):
            scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="junobench-kernel-",
                                                      dir=self.scratch))
            work = scratch / WORK_DIR
            work.mkdir()
            try:
                # the whole scratch folder is the task's: its other files go beside the case
                return await start_kernel(self.target, cwd=work, env=self.env, log=scratch / KERNEL_LOG,
                                          timeout=self.startup_timeout, sandbox=self.sandbox, writable=[scratch],
                                          pass_env=self.pass_env)
            except BaseException as error:
                await asyncio.to_thread(shutil.rmtree, scratch, True)
                if not isinstance(error, RuntimeError) or attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    async def acquire(self) -> StartedKernel:
        """A started kernel for one notebook (its ``cwd`` is empty and its own); the caller
        shuts it down and removes ``Path(kernel.cwd).parent`` when done."""
        if self._closed:
            raise RuntimeError("the kernel pool is closed")
        asked = time.perf_counter()
        self._fill()
        task = self._starting.popleft() if self._starting else asyncio.ensure_future(self._start())
        self.remaining = max(0, self.remaining - 1)
        self._fill()  # the next kernel starts while this one is used
        kernel = await task
        if not await kernel.km.is_alive():  # died while it waited: never hand out a dead kernel
            await kernel.shutdown()
            await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)
            kernel = await self._start()
        kernel.waited = time.perf_counter() - asked
        return kernel

    async def close(self) -> None:
        """Kill every kernel not handed out and remove its directory."""
        self._closed = True
        while self._starting:
            task = self._starting.popleft()
            task.cancel()
            try:
                kernel = await task
            except BaseException:  # cancelled or failed to start: nothing left running
                continue
            await kernel.shutdown()
            await asyncio.to_thread(shutil.rmtree, Path(kernel.cwd).parent, True)


def _open_log(kernel: StartedKernel, log: str | Path | None) -> IO[bytes]:
    """The file the kernel's own output goes to (appended; never through a link, never a
    FIFO or a device), and a second descriptor of it kept to read its end back
    (:meth:`StartedKernel.log_tail`)."""
    if log is None:
        return kernel._sinks.enter_context(open(os.devnull, "ab"))
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(log, flags, 0o600)
    sink = kernel._sinks.enter_context(os.fdopen(fd, "ab"))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise OSError(f"the kernel's log {log} is not a regular file")
    if os.path.isdir("/proc/self/fd"):  # the same file, read-only
        kernel._log_fd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    else:  # no sandbox runs here: nothing could have replaced it yet
        kernel._log_fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    kernel._sinks.callback(os.close, kernel._log_fd)
    return sink


async def _stop(km: Any) -> None:
    if await km.is_alive():
        await km.shutdown_kernel(now=True)  # also cleans up its resources
    else:
        await _maybe_await(km.cleanup_resources())


def _remove(path: str | None) -> None:
    if path:
        with suppress(OSError):
            os.unlink(path)


def _pid(manager: Any) -> int | None:
    provisioner = getattr(manager, "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    if pid is None:
        pid = getattr(getattr(provisioner, "process", None), "pid", None)
    return pid


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
