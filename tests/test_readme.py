"""The README stays in step with the code: its verb table, record schema and figure."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from junobench.cli import build_parser
from junobench.data.records import CASE_FEATURES, NOTEBOOK_FEATURES

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}.*?$(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"README has no section '## {title}'"
    return match.group(1)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def table_rows(text: str) -> dict[str, str]:
    """First backticked word of each table row → the row."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\| `([\w-]+)", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_verb_table_lists_every_cli_verb():
    verbs = subcommands(build_parser())
    rows = table_rows(section("Command-line verbs"))
    assert set(rows) == set(verbs), (
        "README's verb table and `junobench --help` differ: add or remove rows in "
        "'## Command-line verbs'")
    for step in subcommands(verbs["construct"]):
        assert f"`{step}`" in rows["construct"], step


def test_record_schema_names_every_feature():
    text = section("Records")
    for config, features in (("cases", CASE_FEATURES), ("notebooks", NOTEBOOK_FEATURES)):
        part = text.split(f"**`{config}`**", 1)[1]
        part = part.split("**`notebooks`**", 1)[0] if config == "cases" else part
        for name, feature in features.items():
            assert f"`{name}`" in part, f"{config}.{name} missing from the README schema"
            if isinstance(feature, dict):  # struct: its fields too
                for sub in feature:
                    assert f"`{sub}`" in part, f"{config}.{name}.{sub}"


def test_images_exist():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert images
    for image in images:
        assert (REPO / image).is_file(), image


def test_make_figures_script_draws_the_readme_figure(reference_snapshot, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_figures", REPO / "scripts" / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--source", str(reference_snapshot), "--out", str(tmp_path)]) == 0
    drawn = (tmp_path / "root_cause.png").read_bytes()
    committed = (REPO / "docs" / "root_cause.png").read_bytes()
    assert drawn[:8] == committed[:8] == b"\x89PNG\r\n\x1a\n"
    assert drawn[16:24] == committed[16:24]  # the same width and height (IHDR)
