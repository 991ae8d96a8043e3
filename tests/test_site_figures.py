"""``junobench site --figures DIR``: the gallery of a mined corpus, filterable by kind,
purpose, library and stage, each figure linking to its notebook's page at its cell; a
notebook's hostile markdown and code run nothing there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("nh3", reason="the site needs the site extra")

from site_hostile import HTML_PAYLOADS, LEAK
from test_mine_hostile import b64, code, display, notebook, png
from test_site import read
from test_site_browser import browser, tab  # noqa: F401  (the browser fixtures)

from junobench.cli import main
from junobench.mining import mine
from junobench.site import site

MARKDOWN = {"cell_type": "markdown", "metadata": {}, "source": "# Payloads\n\n" + "\n".join(HTML_PAYLOADS)}
SCRIPT_SVG = f'<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned=\'svg\'"><image href="{LEAK}/x.png"/></svg>'


@pytest.fixture(scope="module")
def gallery(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gallery")
    corpus = folder / "corpus"
    corpus.mkdir()
    image = display({"image/png": b64(png(30, 20))})
    cells = [MARKDOWN,
             code("import seaborn as sns\nimport matplotlib.pyplot as plt\n"
                  "title = \"<script>window.pwned='code'</script>\"\nsns.histplot(x)\nplt.title(title)", [image]),
             code("plt.scatter(a, b)", [display({"image/png": b64(png(20, 30))})]),
             code("plt.imshow(m)", [display({"image/svg+xml": SCRIPT_SVG})])]
    (corpus / "hostile.ipynb").write_text(json.dumps(notebook(cells)))
    (corpus / "plain.ipynb").write_text(json.dumps(notebook([code("import pandas as pd\ndf = pd.read_csv('x')\n"
                                                                  "df.plot.pie(y='a')", [image])])))
    mine([corpus], folder / "mined", jobs=1, progress=False)
    out = folder / "site"
    site("sample", out, figures=folder / "mined")
    return out


def test_the_gallery_lists_every_figure_filterable_and_linked_to_its_cell(gallery: Path) -> None:
    page = read(gallery / "figures" / "index.html")
    rows = page.having("tr", **{"data-kind": None})
    assert [(r["data-kind"], r["data-purpose"], r["data-library"], r["data-stage"]) for r in rows] == [
        ("histogram", "distribution", "seaborn", "data visualization"),
        ("scatter plot", "relationship", "matplotlib", "data visualization"),
        ("image", "image samples", "matplotlib", "data visualization"),
        ("pie chart", "composition", "pandas", "data visualization")]
    assert {s["data-field"] for s in page.having("select")} == {"kind", "purpose", "library", "stage"}
    links = [a["href"] for a in page.having("a") if (a["href"] or "").startswith("nb/")]
    assert len(links) == 8  # the picture and the notebook's name, per figure
    for link in links:
        path, _, anchor = link.partition("#")
        target = read(gallery / "figures" / path)
        assert target.having(id=anchor), link
    images = [img["src"] for img in page.having("img")]
    assert len(images) == 3  # the SVG with a script was refused by mine: no picture
    for src in images:
        assert (gallery / "figures" / src).read_bytes().startswith(b"\x89PNG")
    assert read(gallery / "index.html").having("a", href="figures/index.html")  # in the navigation bar


def test_no_script_of_a_notebook_reaches_a_page(gallery: Path) -> None:
    for path in [gallery / "figures" / "index.html", *(gallery / "figures" / "nb").glob("*.html")]:
        page = read(path)
        scripts = page.having("script")
        assert [s["src"] for s in scripts] == [("../" * (len(path.relative_to(gallery).parts) - 1))
                                                + "assets/site.js"], path
        assert not page.having("iframe") and not page.having("object") and not page.having("base")
        assert not [a for _, a in page.elements if any(k.startswith("on") for k in a)], path
        sources = [a.get("src") or "" for a in page.having("img")]
        assert all(src.startswith(("../", "img/", "data:image/")) for src in sources if src), path


def test_the_cli_builds_the_gallery_and_refuses_a_folder_that_is_not_mined(gallery: Path, tmp_path: Path,
                                                                         capsys) -> None:
    code_ = main(["site", "--source", "sample", "--out", str(tmp_path / "s"), "--figures", str(tmp_path)])
    err = capsys.readouterr().err
    assert code_ == 1 and "not a mined corpus" in err
    inside = gallery.parent / "mined" / "site"
    code_ = main(["site", "--source", "sample", "--out", str(inside), "--figures", str(gallery.parent / "mined")])
    err = capsys.readouterr().err
    assert code_ == 1 and err.startswith(f"error: {inside}: the site's directory is inside the mined corpus"), err
    assert not inside.exists()


def test_the_gallery_filters_and_leads_to_the_cell_in_the_browser(tab, gallery: Path) -> None:  # noqa: F811
    t = tab(gallery)
    t.open("figures/index.html#kind=scatter%20plot")
    page = t.page
    page.wait_for_load_state("load")
    assert page.locator("#shown").text_content() == "1"
    page.select_option('#filters select[data-field="kind"]', "")
    page.select_option('#filters select[data-field="library"]', "matplotlib")
    assert page.locator("#shown").text_content() == "2"
    page.locator("#figures tbody tr:not([hidden]) td a").first.click()
    page.wait_for_load_state("load")
    assert "#cell-2" in page.url and page.locator("#cell-2 img.output-image").count() == 1
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert t.outside() == [] and t.errors == []
