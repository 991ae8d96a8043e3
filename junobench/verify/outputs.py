"""The output a replay keeps of each cell run: bounded as it arrives, and marked when cut.

A kernel is untrusted: it may print a gigabyte. :func:`junobench.verify.client.bounded_client`
makes an nbclient ``NotebookClient`` that counts the bytes of every message a cell run sends on IOPub
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
from typing import Any

from junobench.envs.kernel import ERROR_TEXT, MESSAGE_MARGIN
from junobench.envs.sandbox import format_size

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
    return [key for key in sorted(set(before) | set(after), key=str) if before.get(key) != after.get(key)]


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


def trim_error(content: dict[str, Any]) -> None:
    """An error's value and traceback lines cut to
    :data:`~junobench.envs.kernel.ERROR_TEXT` characters each (as the kernel cuts them)."""
    if isinstance(content.get("evalue"), str):
        content["evalue"] = content["evalue"][:ERROR_TEXT]
    trace = content.get("traceback")
    if isinstance(trace, list):
        content["traceback"] = [line[:ERROR_TEXT] if isinstance(line, str) else "" for line in trace[:200]]
