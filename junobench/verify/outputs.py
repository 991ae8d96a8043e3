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

from typing import Any

from junobench.envs.sandbox import format_size

#: Characters kept of an error's value and of each traceback line past the limit.
ERROR_TEXT = 10_000
#: Messages that are never cut: they end a cell run or say what it raised.
ALWAYS_KEPT = frozenset({"status", "execute_input", "error"})


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

        def watch(self) -> None:
            """Watch the kernel client's IOPub socket for a connection dropped over a refused message."""
            import zmq

            kc: Any = self.kc
            self.monitor = kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

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
