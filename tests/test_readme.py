"""The README stays in step with the code: its verb table, examples, figure and size."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest
from cli_run import run_cli
from docs_text import markdown_section, subcommands, table_rows

from junobench.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
README_PATH = REPO / "README.md"
README = README_PATH.read_text(encoding="utf-8")
#: Verbs whose examples start Jupyter kernels (run only with the kernel tests).
KERNEL_VERBS = {"verify", "runtime-info"}
#: Verbs that serve until interrupted (tests/test_site.py runs `view` and stops it).
SERVING_VERBS = {"view"}


def test_verb_table_lists_every_cli_verb():
    verbs = subcommands(build_parser())
    rows = table_rows(markdown_section(README, "Command-line verbs"))
    assert set(rows) == set(verbs), (
        "README's verb table and `junobench --help` differ: add or remove rows in "
        "'## Command-line verbs'")
    for step in subcommands(verbs["construct"]):
        assert f"`{step}`" in rows["construct"], step


def test_readme_is_at_most_15_kb():
    size = README_PATH.stat().st_size
    assert size <= 15 * 1024, f"README.md is {size} bytes: move detail into docs/ (limit 15 KB)"


def test_readme_names_no_development_only_paths():
    assert "shared/reference" not in README  # users have no such folder: see docs/development.md


def test_readme_has_install_citation_and_licence():
    for title in ("Install", "Quick start", "Python API", "Citation", "Licence"):
        markdown_section(README, title)
    citation = markdown_section(README, "Citation")
    assert "2510.18013" in citation and "2602.18537" in citation  # both papers
    assert "MIT" in markdown_section(README, "Licence")
    quick = markdown_section(README, "Quick start")
    assert "make quickstart" in quick and "make test" in quick


def test_images_exist():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert images
    for image in images:
        assert (REPO / image).is_file(), image


def sample_examples() -> list[list[str]]:
    """The README's ``junobench`` shell commands that read the bundled sample."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", README, re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():  # continuation lines joined
            argv = shlex.split(line, comments=True)
            if argv[:1] == ["junobench"] and "sample" in argv and argv[argv.index("sample") - 1] == "--source":
                commands.append(argv[1:])
    return commands


def test_readme_has_sample_examples():
    assert len(sample_examples()) >= 3


@pytest.mark.parametrize("argv", [
    pytest.param(argv, marks=[pytest.mark.kernel] if argv[0] in KERNEL_VERBS else [], id=" ".join(argv))
    for argv in sample_examples() if argv[0] not in SERVING_VERBS
])
def test_readme_sample_example_runs(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # what an example writes (tasks.jsonl, mybench/) lands here
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert (out + err).strip(), f"`junobench {' '.join(argv)}` printed nothing"  # data, or a status
    assert "error:" not in err


def sample_statements() -> list[str]:
    """The statements of the README's Python examples, except those that need the Hub or
    a snapshot of the reader's own (``load()`` with no source, ``path/to/...``)."""
    statements = []
    for block in re.findall(r"^```python\n(.*?)^```", README, re.M | re.S):
        for node in ast.parse(block).body:
            code = ast.get_source_segment(block, node)
            if "path/to/" not in code and "load()" not in code:
                statements.append(code)
    return statements


def test_readme_python_examples_run_on_the_sample():
    statements = sample_statements()
    assert any("junobench.load(\"sample\"" in s for s in statements)
    namespace: dict = {}
    for code in statements:
        exec(compile(code, "README.md", "exec"), namespace)  # a failing example fails here
    assert len(namespace["cases"]) == 10 and namespace["case"]["library"] == "pandas"


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
