"""Griffe extension for the API reference: the project's docstrings rendered as Markdown.

The docstrings are written for ``help()`` and doctest: examples are bare ``>>>`` lines,
cross-references are Sphinx roles (``:func:`load```). mkdocstrings renders docstrings as
Markdown, where those would run into the prose (and ``x["a"]["b"]`` reads as a link).
This extension, named in ``mkdocs.yml``, fences each run of doctest lines as a ``pycon``
code block (doctest directives dropped) and turns each role into inline code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|meth|class|mod|data|attr|exc|obj):`~?([^`]+)`")
_DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


def docstring_markdown(text: str) -> str:
    """Fence doctest examples (each run of ``>>>`` lines up to a blank line) as ``pycon``
    code blocks without doctest directives, and turn Sphinx roles into inline code;
    existing code fences are left alone."""
    out: list[str] = []
    in_fence = in_example = False
    indent = ""
    for line in text.splitlines():
        stripped = line.strip()
        if in_example and not stripped:
            out.append(f"{indent}```")
            in_example = False
        elif stripped.startswith("```") and not in_example:
            in_fence = not in_fence
        elif stripped.startswith(">>>") and not (in_fence or in_example):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            in_example = True
        if in_example:
            line = _DIRECTIVE.sub("", line)
        elif not in_fence:
            line = _ROLE.sub(r"`\1`", line)
        out.append(line)
    if in_example:
        out.append(f"{indent}```")
    return "\n".join(out)


class DocstringMarkdown(griffe.Extension):
    """Rewrite every loaded object's docstring with :func:`docstring_markdown`."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = docstring_markdown(obj.docstring.value)
