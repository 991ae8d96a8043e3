"""The output a replay keeps of each cell run: bounded as it arrives, and marked when cut.

A kernel is untrusted: it may print a gigabyte. :func:`bounded_client` makes an nbclient
``NotebookClient`` that counts the bytes of every message a cell run sends on IOPub
(outputs, display updates, widget messages) and, past ``max_output``, keeps none of them
but the error (trimmed) and the idle status, appending one line that says how much was
cut. The client's sockets refuse any single message larger than the limit plus a margin
(:data:`junobench.envs.kernel.MESSAGE_MARGIN`), so no message is read whole into memory
either; ZeroMQ then drops the connection, which the client notices (a socket monitor),
says in the cell's output and opens again for the next cell.

>>> marker_text(10 << 20, 3 << 30)
'[junobench: output cut: 10 MiB kept of this cell run, 3 GiB more not kept]\\n'
"""

from __future__ import annotations

import ast
import asyncio
import functools
from typing import Any

from junobench.envs.kernel import MESSAGE_MARGIN
from junobench.envs.sandbox import format_size

#: Characters kept of an error's value and of each traceback line past the limit.
ERROR_TEXT = 10_000
#: Messages that are never cut: they end a cell run or say what it raised.
ALWAYS_KEPT = frozenset({"status", "execute_input", "error"})


#: The name of junobench's expression in every execute request (``user_expressions``).
PROBE_KEY = "junobench_probe"
#: What it asks the kernel after each cell that ran without error: how the shell turns a
#: cell into code and runs it (input and AST transformers, its run methods, the compiler,
#: the builtins that run code) and whether a trace, profile or monitoring function is set.
#: A change from what a fresh kernel answers means a cell changed how later cells run.
PROBE = (
    "(lambda sys, ip, b, names: {"
    "'trace function': (sys.gettrace() is None, sys.getprofile() is None, "
    "getattr(__import__('threading'), 'gettrace', lambda: None)() is None), "
    "'monitoring tools': [sys.monitoring.get_tool(i) for i in range(6)] if hasattr(sys, 'monitoring') else None, "
    "'input transformers': (len(ip.input_transformers_cleanup), len(ip.input_transformers_post), "
    "len(ip.input_transformer_manager.line_transforms), len(ip.input_transformer_manager.token_transformers)), "
    "'AST transformers': len(ip.ast_transformers), "
    "'shell methods': [(getattr(getattr(ip, n), '__func__', None) is getattr(type(ip), n, None), "
    "id(getattr(type(ip), n, None))) for n in names], "
    "'compiler': (id(ip.compile), id(type(ip.compile).__call__)), "
    "'builtins': (id(b.exec), id(b.eval), id(b.compile))})"
    "(__import__('sys'), get_ipython(), __import__('builtins'), "
    "('run_cell', 'run_cell_async', 'run_ast_nodes', 'run_code', 'transform_cell', 'transform_ast', "
    "'user_expressions'))"
)
#: Looks (50 ms apart) at a kernel whose shell connection dropped, before it is taken for
#: alive: a kernel that died, or that a limit ended, drops its connections too.
DEATH_WAIT = 100


def refused_reply(max_output: int) -> str:
    """What a cell's outcome says when the kernel's reply to it was larger than the client
    takes (``max_output`` plus the margin) and was refused, unread."""
    return f"the kernel's reply was larger than {format_size(max_output + MESSAGE_MARGIN)} and was refused"


def probe_value(content: Any) -> dict[str, Any] | None:
    """The probe's answer in an execute reply's content, None when it has none that reads
    as one (never evaluated: a literal)."""
    try:
        answer = content["user_expressions"][PROBE_KEY]
        value = ast.literal_eval(answer["data"]["text/plain"]) if answer.get("status") == "ok" else None
    except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError, AttributeError):
        return None
    return value if isinstance(value, dict) else None


def changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    """What differs between two probe answers (everything when one is missing).

    >>> changes({"AST transformers": 0, "builtins": (1, 2)}, {"AST transformers": 1, "builtins": (1, 2)})
    ['AST transformers']
    """
    if before is None or after is None:
        return ["the kernel's answer to junobench's probe"]
    return [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


def marker_text(kept: int, cut: int) -> str:
    """The line that replaces what was not kept."""
    return f"[junobench: output cut: {format_size(kept)} kept of this cell run, {format_size(cut)} more not kept]\n"


def content_size(value: Any, depth: int = 0) -> int:
    """About how many bytes a message's content holds (its strings' lengths)."""
    if isinstance(value, str | bytes):
        return len(value)
    if depth > 20:
        return 0
    if isinstance(value, dict):
        return sum(len(str(k)) + content_size(v, depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(content_size(v, depth + 1) for v in value)
    return 8


def bounded_client(notebook: Any, *, max_output: int, **options: Any) -> Any:
    """An nbclient ``NotebookClient`` for ``notebook`` (``options`` as nbclient's) that
    keeps at most ``max_output`` bytes of output per cell run (0: no limit). Call its
    ``new_run()`` before each cell run."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_output

    class BoundedClient(NotebookClient):
        limit = max_output

        def set_max_output(self, limit: int) -> None:
            self.limit = limit

        def new_run(self) -> None:
            self.received = 0
            self.marker: Any = None

        async def _async_check_alive(self) -> None:
            # nbclient's poll of the kernel's life outlives a cell run that was cancelled
            # (Ctrl-C): once the replay has let go of the kernel client, the poll ends there
            # instead of failing on the missing client, an error nobody would retrieve
            from nbclient.exceptions import DeadKernelError

            if self.kc is None:
                raise DeadKernelError("the replay has ended")
            await super()._async_check_alive()

        def watch(self) -> None:
            """Watch the kernel client's IOPub and shell sockets for a connection dropped over
            a refused message."""
            import zmq

            kc: Any = self.kc
            self.monitor = kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            if getattr(self, "shell_monitor", None) is None:
                self.shell_monitor = kc.shell_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

        def unwatch(self) -> None:
            """Stop watching the shell socket (before the kernel client goes)."""
            monitor: Any = getattr(self, "shell_monitor", None)
            self.shell_monitor = None
            if monitor is not None:
                kc: Any = self.kc
                if kc is not None:
                    kc.shell_channel.socket.disable_monitor()
                monitor.close(linger=0)

        async def probe(self, timeout: float) -> None:
            """Ask the kernel the probe once before any cell (what a fresh kernel answers),
            then with every cell it runs. A kernel that dies or does not answer within
            ``timeout`` seconds leaves nothing to compare with (its cells say the rest)."""
            import queue

            kc: Any = self.kc
            km: Any = self.km
            msg_id = kc.execute("", silent=True, store_history=False, user_expressions={PROBE_KEY: PROBE})
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            self.expected: dict[str, Any] | None = None
            while loop.time() < deadline:
                try:
                    reply = await kc.get_shell_msg(timeout=1.0)
                except queue.Empty:
                    if not await km.is_alive():
                        break
                    continue
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    self.expected = probe_value(reply.get("content"))
                    break
            kc.execute = functools.partial(kc.execute, user_expressions={PROBE_KEY: PROBE})

        def tampered(self, reply: dict[str, Any]) -> list[str]:
            """What a cell changed of how the kernel runs code, by the probe's answer in its
            (successful) ``reply``; nothing before :meth:`probe` or when nothing changed."""
            if getattr(self, "expected", None) is None:  # no probe, or a kernel that never answered it
                return []
            return changes(self.expected, probe_value(reply.get("content")))

        async def run(self, cell: Any, index: int, limited: Any = lambda: None) -> bool:
            """Run ``cell`` as ``async_execute_cell`` does; True when the kernel's reply never
            came because it was refused, larger than the client takes, the kernel alive (its
            output then says so). A connection that drops because the kernel died, or a
            limit (``limited()`` says which) ended it, is a dead kernel."""
            from nbclient.exceptions import DeadKernelError

            monitor: Any = getattr(self, "shell_monitor", None)
            running = asyncio.ensure_future(self.async_execute_cell(cell, index))
            if monitor is None:
                await running
                return False
            dropped = asyncio.ensure_future(monitor.poll())
            try:
                await asyncio.wait({running, dropped}, return_when=asyncio.FIRST_COMPLETED)
            except BaseException:
                running.cancel()
                dropped.cancel()
                await asyncio.gather(running, dropped, return_exceptions=True)
                raise
            if running.done():
                dropped.cancel()
                await asyncio.gather(dropped, return_exceptions=True)
                running.result()
                return False
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            while await monitor.poll(0):
                await monitor.recv_multipart()
            km: Any = self.km
            for _ in range(DEATH_WAIT):  # a dying kernel's connection drops too: give it the time to end
                if limited() is not None or not await km.is_alive():
                    raise DeadKernelError("the kernel died")
                await asyncio.sleep(0.05)
            note = new_output("stream", name="stderr", text=f"[junobench: {refused_reply(self.limit)}]\n")
            cell.setdefault("outputs", []).append(note)
            return True

        async def recover(self, cell: Any) -> None:
            """After a cell run: when a message was refused, mark ``cell``'s output as cut
            and connect IOPub again (the refused connection stays down)."""
            monitor: Any = getattr(self, "monitor", None)
            refused = False
            while monitor is not None and await monitor.poll(0):
                await monitor.recv_multipart()
                refused = True
            if not refused:
                return
            if self.marker is None:
                self.marker = new_output("stream", name="stderr", text="")
                cell.setdefault("outputs", []).append(self.marker)
            self.marker["text"] = (f"[junobench: output cut: a message larger than {format_size(self.limit)} "
                                   "was refused]\n")
            kc: Any = self.kc
            kc.iopub_channel.socket.disable_monitor()
            monitor.close(linger=0)
            kc.iopub_channel.close()
            kc._iopub_channel = None  # the client makes a new channel on first use
            kc.iopub_channel.start()
            self.watch()

        def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
            kind = msg.get("msg_type")
            if not self.limit or kind == "status":
                return super().process_message(msg, cell, cell_index)
            size = content_size(msg.get("content"))
            self.received += size
            if self.received <= self.limit:
                return super().process_message(msg, cell, cell_index)
            if self.marker is None:
                self.marker = new_output("stream", name="stderr", text="")
                cell.setdefault("outputs", []).append(self.marker)
            kept = self.limit
            self.marker["text"] = marker_text(kept, self.received - kept)
            if kind in ALWAYS_KEPT:
                if kind == "error":
                    _trim_error(msg.get("content", {}))
                return super().process_message(msg, cell, cell_index)
            return None

    client = BoundedClient(notebook, **options)
    client.new_run()
    return client


def _trim_error(content: dict[str, Any]) -> None:
    if isinstance(content.get("evalue"), str):
        content["evalue"] = content["evalue"][:ERROR_TEXT]
    trace = content.get("traceback")
    if isinstance(trace, list):
        content["traceback"] = [line[:ERROR_TEXT] if isinstance(line, str) else "" for line in trace[:200]]
