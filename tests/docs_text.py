"""Reading the README and the docs pages in tests: sections, tables, links, CLI verbs."""

from __future__ import annotations

import argparse
import re


def markdown_section(text: str, title: str, level: int = 2) -> str:
    """The body of the first heading of ``level`` whose title starts with ``title``."""
    hashes = "#" * level
    match = re.search(rf"^{hashes} {re.escape(title)}.*?$(.*?)(?=^#{{1,{level}}} |\Z)", text, re.M | re.S)
    assert match, f"no section '{hashes} {title}'"
    return match.group(1)


def table_rows(text: str) -> dict[str, str]:
    """First backticked word of each table row → the row."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\| `([\w-]+)", line)
        if match:
            rows[match.group(1)] = line
    return rows


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def without_code(text: str) -> str:
    """Markdown text without fenced code blocks and inline code (where links are not links)."""
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def relative_links(text: str) -> list[str]:
    """Targets of Markdown links and images that are not URLs or in-page anchors."""
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", without_code(text))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I) and not t.startswith("#")]


def anchors(text: str) -> set[str]:
    """The ids MkDocs' toc extension gives the headings of a page (its default slugify)."""
    ids = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", without_code_blocks(text), re.M):
        slug = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
        ids.add(re.sub(r"[-\s]+", "-", slug))
    return ids


def without_code_blocks(text: str) -> str:
    return re.sub(r"^(`{3,}|~{3,}).*?^\1", "", text, flags=re.M | re.S)
