"""The nbclient client a replay runs a notebook's cells with (:func:`bounded_client` makes
it; :mod:`junobench.verify.outputs` holds the bounds it applies): the output of each cell
run bounded as it arrives, a message too large refused and said, a message that is no
output nbclient can keep (malformed MIME data, a display id that is not text) left out and
said, the kernel's probe answered with every cell. Needs nbclient (the ``run`` extra).
"""

from __future__ import annotations

import asyncio
import functools
import queue
from typing import Any

import zmq
from nbclient import NotebookClient
from nbclient.exceptions import CellControlSignal, DeadKernelError
from nbformat.v4 import new_output

from junobench.envs.sandbox import format_size
from junobench.verify.outputs import (
    ALWAYS_KEPT,
    DEATH_WAIT,
    PROBE,
    PROBE_KEY,
    changes,
    content_size,
    marker_text,
    probe_value,
    refused_reply,
    trim_error,
)


class BoundedClient(NotebookClient):
    """nbclient's client, with the output of a cell run bounded (see the module's notes)."""

    limit = 0  # bytes of output kept per cell run (0: no limit): set_max_output

    def set_max_output(self, limit: int) -> None:
        self.limit = limit

    def new_run(self) -> None:
        self.received = 0
        self.marker: Any = None
        self.dropped: Any = None  # the note of the messages dropped in this cell run
        self.dropped_count = 0

    async def _async_check_alive(self) -> None:
        # nbclient's poll of the kernel's life outlives a cell run that was cancelled
        # (Ctrl-C): once the replay has let go of the kernel client, the poll ends there
        # instead of failing on the missing client, an error nobody would retrieve
        if self.kc is None:
            raise DeadKernelError("the replay has ended")
        await super()._async_check_alive()

    def watch(self) -> None:
        """Watch the kernel client's IOPub and shell sockets for a connection dropped over
        a refused message."""
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
        try:
            return self._process_bounded(msg, cell, cell_index)
        except CellControlSignal:  # nbclient's own flow (a cell run complete)
            raise
        except Exception as error:  # an output nbclient cannot keep (bad MIME data, …)
            self._drop(cell, str(msg.get("msg_type")), error)
            return None

    def _drop(self, cell: Any, kind: str, error: Exception) -> None:
        """Leave out a message the kernel sent that is no output nbclient can keep, and
        say so in one note per cell run, however many are left out."""
        self.dropped_count += 1
        if self.dropped is None:
            self.dropped = new_output("stream", name="stderr", text="")
            cell.setdefault("outputs", []).append(self.dropped)
        self.dropped["text"] = (f"[junobench: {self.dropped_count} malformed message(s) from the kernel "
                                f"left out; the last: {kind[:40]!r} ({type(error).__name__})]\n")

    def _process_bounded(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
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
                trim_error(msg.get("content", {}))
            return super().process_message(msg, cell, cell_index)
        return None


def bounded_client(notebook: Any, *, max_output: int, **options: Any) -> BoundedClient:
    """An nbclient ``NotebookClient`` for ``notebook`` (``options`` as nbclient's) that
    keeps at most ``max_output`` bytes of output per cell run (0: no limit). Call its
    ``new_run()`` before each cell run."""
    client = BoundedClient(notebook, **options)
    client.set_max_output(max_output)
    client.new_run()
    return client
