"""The documentation pages stay in step with the code and with each other."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from docs_text import anchors, markdown_section, relative_links, subcommands, table_rows

from junobench.cli import build_parser
from junobench.data.filters import FILTER_FIELDS
from junobench.data.records import CASE_FEATURES, NOTEBOOK_FEATURES

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
RECORDS = (DOCS / "records.md").read_text(encoding="utf-8")


def test_records_page_names_every_feature():
    for config, features in (("cases", CASE_FEATURES), ("notebooks", NOTEBOOK_FEATURES)):
        part = RECORDS.split(f"**`{config}`**", 1)[1]
        part = part.split("**`notebooks`**", 1)[0] if config == "cases" else part.split("\n## ", 1)[0]
        for name, feature in features.items():
            assert f"`{name}`" in part, f"{config}.{name} missing from docs/records.md"
            if isinstance(feature, dict):  # struct: its fields too
                for sub in feature:
                    assert f"`{sub}`" in part, f"{config}.{name}.{sub}"


def test_records_page_lists_every_filter_with_its_field():
    rows = table_rows(markdown_section(RECORDS, "Filters"))
    assert set(rows) == set(FILTER_FIELDS), "docs/records.md's filter table and FILTER_FIELDS differ"
    for keyword, field in FILTER_FIELDS.items():
        assert f"| `{field}`" in rows[keyword], f"filter {keyword} filters the field {field}"
        assert f"`--{keyword.replace('_', '-')}`" in rows[keyword] or keyword == "pipeline_stage"
    assert "`--stage`" in rows["pipeline_stage"]


def test_home_page_verb_table_lists_every_cli_verb():
    verbs = subcommands(build_parser())
    rows = table_rows(markdown_section((DOCS / "index.md").read_text(encoding="utf-8"), "Command-line verbs"))
    assert set(rows) == set(verbs), "docs/index.md's verb table and `junobench --help` differ"


@pytest.mark.parametrize("page", [REPO / "README.md", *PAGES], ids=lambda p: p.name)
def test_relative_links_point_at_existing_files_and_headings(page):
    text = page.read_text(encoding="utf-8")
    for target in relative_links(text):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve()
        assert file.exists(), f"{page.name}: link to {target}: no such file"
        assert file.is_relative_to(REPO), f"{page.name}: link to {target} leaves the repository"
        if page.parent == DOCS:
            assert file.is_relative_to(DOCS), f"{page.name}: link to {target} leaves docs/ (broken on the site)"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file.read_text(encoding="utf-8")), f"{page.name}: no heading #{anchor} in {path}"


def test_every_page_is_in_the_site_nav():
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert f": {page.name}" in config, f"docs/{page.name} is not in mkdocs.yml's nav"


def test_docs_name_no_development_only_paths_outside_development_page():
    for page in PAGES:
        if page.name != "development.md":
            assert "shared/reference" not in page.read_text(encoding="utf-8"), page.name


def load_griffe_extension():
    spec = importlib.util.spec_from_file_location("griffe_markdown", DOCS / "griffe_markdown.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_renders_doctests_as_code_and_roles_as_inline_code():
    markdown = load_griffe_extension().docstring_markdown
    text = ("Use :func:`junobench.load` or :mod:`~junobench.stats`.\n\n"
            ">>> r.files['a']['size']  # doctest: +SKIP\n12\n\nMore.\n\n"
            "```python\n>>> kept  # doctest: +SKIP\n```")
    assert markdown(text).splitlines() == [
        "Use `junobench.load` or `junobench.stats`.", "",
        "```pycon", ">>> r.files['a']['size']", "12", "```", "",
        "More.", "",
        "```python", ">>> kept  # doctest: +SKIP", "```"]


def test_api_reference_indented_doctest_stays_indented():
    markdown = load_griffe_extension().docstring_markdown
    lines = markdown("Returns:\n    >>> x\n    1").splitlines()
    assert lines == ["Returns:", "    ```pycon", "    >>> x", "    1", "    ```"]


#: The modules whose docstring examples are skipped (``# doctest: +SKIP``), and why the
#: suite cannot run them: a Jupyter kernel, the network, a Ray cluster, or files of a
#: reader's own. Every other example runs (pytest --doctest-modules).
SKIPPED_EXAMPLES = {
    "junobench/__init__.py": "loads the full benchmark from the Hub",
    "junobench/runtime/__init__.py": "starts a Jupyter kernel",
    "junobench/runtime/extract.py": "starts a Jupyter kernel",
    "junobench/envs/create.py": "installs the pinned packages from PyPI",
    "junobench/envs/kernel.py": "starts a Jupyter kernel",
    "junobench/construct/reproduce.py": "starts kernels on a sampled table and notebooks of one's own",
    "junobench/verify/__init__.py": "starts Jupyter kernels",
    "junobench/verify/executor.py": "starts a Jupyter kernel",
    "junobench/verify/runner.py": "starts a Jupyter kernel",
    "junobench/verify/ray_executor.py": "joins a Ray cluster",
    "junobench/detection/detect.py": "asks a model behind an LLM endpoint",
    "junobench/hub/release.py": "releases a snapshot of one's own (mybench)",
}


def test_docstring_examples_are_skipped_only_where_they_need_what_the_suite_lacks():
    package = REPO / "junobench"
    skipped = {p.relative_to(REPO).as_posix() for p in package.rglob("*.py")
               if "sample" not in p.parts and "doctest: +SKIP" in p.read_text(encoding="utf-8")}
    assert skipped <= set(SKIPPED_EXAMPLES), (
        f"examples skipped without a reason: {sorted(skipped - set(SKIPPED_EXAMPLES))}; make "
        "them run, or name what they need in SKIPPED_EXAMPLES")


#: Names in the docs that look like API paths and are not: the configuration file and a
#: notebook metadata key.
_NOT_API = {"junobench.toml", "junobench.replay"}


def _resolves(dotted: str) -> bool:
    """Whether ``junobench.a.b.c`` is a module or an attribute reached from one."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_api_name_the_docs_give_exists():
    """A renamed or removed function is not left named in the docs (`junobench.x.y` in
    backquotes, in the README and every page)."""
    import re

    named = {match for page in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
             for match in re.findall(r"`(junobench(?:\.[A-Za-z_]\w*)+)", page.read_text(encoding="utf-8"))}
    assert len(named) > 50  # the pattern still finds the docs' references
    assert sorted(n for n in named - _NOT_API if not _resolves(n)) == []
