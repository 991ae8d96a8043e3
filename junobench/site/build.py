"""``junobench site``: the benchmark and its evaluation results as a static site.

The site is plain files (HTML, one CSS and one JavaScript file, images), readable from
``file://`` or any static host. It is written into a new folder beside ``out`` and swapped
in whole when complete: at every instant ``out`` holds the previous site or the new one.
A page whose inputs and the site's code are unchanged is not rendered again: the new
folder takes the previous file (a hard link), so that rebuilding after a change to one
case renders one case page.

``out`` must be new, empty, or a site written before (its manifest lists every file; a
folder holding anything else is refused).

>>> summary = site("sample", "sample-site")
>>> len(summary.rendered), summary.reused, [f for f in summary.files if f.startswith("cases/pandas")]
(14, [], ['cases/pandas_1.html', 'cases/pandas_2.html'])
>>> site("sample", "sample-site").rendered      # unchanged: nothing rendered again
[]
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError
from junobench.render import some
from junobench.safety.atomic import locked, recover, swapped_in
from junobench.safety.paths import inside, is_within, read_regular, require_utf8_path, unlisted_files
from junobench.site.evaluation import Evaluation, evaluation

#: The manifest of a site: every file it holds, and each page's key.
MANIFEST = ".junobench-site.json"
MANIFEST_FORMAT = 1
#: The mark of a site being written (in its staging folder until the manifest is), so that
#: what a killed build left is known as the site's own and removed by the next build.
BUILDING = ".junobench-site.building"
#: The kinds of file a site holds.
SITE_SUFFIXES = frozenset({".html", ".json", ".css", ".js", ".png", ".jpg", ".gif"})
_PACKAGE = Path(__file__).resolve().parent


@dataclass
class SiteData:
    """What the pages show: the cases (``cases`` records, notebooks included), in case
    order, and the evaluation (None without predictions or judgments)."""

    title: str
    source: str
    cases: list[dict[str, Any]]
    evaluation: Evaluation | None = None
    filters: dict[str, Any] = field(default_factory=dict)
    #: A mined corpus (a folder ``junobench mine`` wrote) whose figures the gallery shows.
    figures: str | None = None


@dataclass
class SiteSummary:
    """What a build did: pages rendered and reused (by path), every file, the time."""

    out: Path
    rendered: list[str]
    reused: list[str]
    files: list[str]
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)


def site(
    source: str | Path,
    out: str | Path,
    predictions: Sequence[str | Path] = (),
    *,
    judgments: str | Path | None = None,
    names: Sequence[str] | None = None,
    vote: str | None = None,
    revision: str | None = None,
    truth: str | Path | Sequence[str | Path] | None = None,
    layout: str | None = None,
    sheet: str | None = None,
    resamples: int | None = None,
    seed: int | None = None,
    title: str = "JunoBench",
    figures: str | Path | None = None,
    **filters: Any,
) -> SiteSummary:
    """Build the site of ``source`` (a snapshot, an export, ``sample`` or a Hub dataset)
    into ``out``, with evaluation pages for ``predictions`` (any layout ``junobench
    evaluate`` reads) and ``judgments`` (as ``evaluate --judgments``). The options are
    ``evaluate``'s and give the same numbers; ``filters`` select cases by label; with
    ``figures`` (a folder ``junobench mine`` wrote), a gallery of its figures."""
    from junobench.data.snapshot import refuse_writing_inside
    from junobench.detection.uncertainty import DEFAULT_RESAMPLES, DEFAULT_SEED, check_resamples
    from junobench.detection.votes import DEFAULT_VOTE
    from junobench.loader import load

    started = time.perf_counter()
    timings: dict[str, float] = {}
    target = require_utf8_path(Path(out).expanduser().absolute())
    _check_target(target)
    refuse_writing_inside(target, source, what="the site's directory")
    resamples = DEFAULT_RESAMPLES if resamples is None else resamples
    check_resamples(resamples)
    if judgments is not None and any(filters.values()):
        raise JunoBenchError("filters do not apply to --judgments (evaluate scores every judged notebook)",
                             hint="build the judged site without filters, or filter the predictions only")
    cases = load(source, "cases", revision=revision, **filters).to_list()
    scored = evaluation(predictions, source, judgments=judgments, names=names,
                        vote=vote or DEFAULT_VOTE, revision=revision, truth=truth, layout=layout,
                        sheet=sheet, resamples=resamples, seed=DEFAULT_SEED if seed is None else seed,
                        **filters)
    if figures is not None:
        from junobench.mining.write import read_manifest

        read_manifest(Path(figures), hint="give --figures the folder `junobench mine --out` wrote")
        if is_within(target, Path(figures).expanduser()):
            raise JunoBenchError("the site's directory is inside the mined corpus (--figures)", file=target,
                                 hint="nothing in an input is ever modified: choose a directory outside it")
    data = SiteData(title, str(source), cases, scored, {k: v for k, v in filters.items() if v},
                    None if figures is None else str(Path(figures).resolve()))
    timings["load"] = time.perf_counter() - started
    with locked(target.parent):
        recover(target, owned=is_site_folder)
        _check_target(target)
        previous = _read_manifest(target) if (target / MANIFEST).is_file() else {}
        listed = [name for page in previous.values() for name in page["files"]]
        with swapped_in(target, [*listed, MANIFEST]) as staging:
            (staging / BUILDING).write_bytes(b"")
            rendered, reused, files = write_pages(data, staging, target, previous)
            timings["pages"] = time.perf_counter() - started - timings["load"]
            manifest = {"format": MANIFEST_FORMAT, "pages": files}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                                            encoding="utf-8")
            (staging / BUILDING).unlink()
    written = sorted({name for page in files.values() for name in page["files"]})
    return SiteSummary(target, rendered, reused, written, time.perf_counter() - started, timings)


def write_pages(data: SiteData, staging: Path, previous_root: Path,
                previous: dict[str, Any]) -> tuple[list[str], list[str], dict[str, Any]]:
    """Write every page into ``staging``: rendered, or linked from ``previous_root`` when
    its key is the one in the ``previous`` manifest. Returns the rendered and reused page
    paths and the new manifest's pages."""
    from junobench.site.pages import all_pages

    rendered: list[str] = []
    reused: list[str] = []
    pages: dict[str, Any] = {}
    code = code_digest()
    for page in all_pages(data):
        key = page_key(code, page.path, page.inputs)
        before = previous.get(page.path)
        if before is not None and before.get("key") == key and _link_all(
                previous_root, staging, before["files"]):
            reused.append(page.path)
            pages[page.path] = before
            continue
        contents = page.render()
        if page.path not in contents:
            raise AssertionError(f"the page {page.path} was not rendered")
        for name, content in contents.items():
            path = inside(staging, *name.split("/"))
            if path.exists():  # an image another page has too
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        rendered.append(page.path)
        pages[page.path] = {"key": key, "files": sorted(contents)}
    return rendered, reused, pages


def page_key(code: str, path: str, inputs: Any) -> str:
    """The digest of a page's inputs, path and the site's code."""
    digest = hashlib.sha256(code.encode())
    digest.update(path.encode())
    digest.update(json.dumps(inputs, sort_keys=True, ensure_ascii=False, default=str).encode())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of the site's code, templates and assets (and junobench's version): a
    change to any of them renders every page again."""
    import junobench

    digest = hashlib.sha256(junobench.__version__.encode())
    for path in sorted(_PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".j2", ".css", ".js", ".html"):
            digest.update(path.relative_to(_PACKAGE).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _link_all(root: Path, staging: Path, names: Iterable[str]) -> bool:
    """Link (or copy) the files ``names`` of the previous site into ``staging``; False when
    one is missing or not a regular file (the page is then rendered again)."""
    for name in names:
        source = inside(root, *name.split("/"))
        target = inside(staging, *name.split("/"))
        if target.exists():
            continue
        if source.is_symlink() or not source.is_file():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
    return True


def is_site_folder(folder: Path) -> bool:
    """Whether ``folder`` (one a killed build left beside the site) is a site or a site
    being written, holding nothing else: its manifest or :data:`BUILDING` mark, and only
    regular files of the kinds a site has."""
    if not ((folder / MANIFEST).is_file() or (folder / BUILDING).is_file()):
        return False
    for current, folders, files in os.walk(folder):
        if any(Path(current, name).is_symlink() for name in folders):
            return False
        for name in files:
            path = Path(current, name)
            if path.is_symlink() or not path.is_file() or (
                    name not in (MANIFEST, BUILDING) and path.suffix not in SITE_SUFFIXES):
                return False
    return True


def _read_manifest(out: Path) -> dict[str, Any]:
    """The pages of the site at ``out`` (checked: a site lists only relative paths)."""
    try:
        manifest = json.loads(read_regular(out / MANIFEST, limit=64 << 20))
        pages = manifest["pages"]
        if manifest.get("format") != MANIFEST_FORMAT or not isinstance(pages, dict):
            raise ValueError("unknown format")
        for page in pages.values():
            if not isinstance(page["key"], str) or not all(
                    isinstance(name, str) and inside(out, *name.split("/")) for name in page["files"]):
                raise ValueError("a file that is not a path in the site")
    except (OSError, ValueError, KeyError, TypeError, JunoBenchError) as error:
        raise JunoBenchError(f"the site's manifest cannot be read ({error})", file=out / MANIFEST,
                             hint="build into a new or empty directory") from None
    return pages


def _check_target(out: Path) -> None:
    """Refuse an ``out`` that is a link, a file, or a folder holding anything a site
    written before does not."""
    if out.is_symlink():
        raise JunoBenchError("the site's directory is a symbolic link", file=out,
                             hint="give the real path of the directory")
    if out.exists() and not out.is_dir():
        raise JunoBenchError("exists and is not a directory", file=out, hint="choose a new directory")
    if not out.is_dir() or not any(out.iterdir()):
        return
    hint = ("a site replaces only a site written before, and nothing else: choose a new or "
            "empty directory, or move those files away")
    if not (out / MANIFEST).is_file():
        raise JunoBenchError(f"the directory is not empty and holds no {MANIFEST}: not a site "
                             "written before", file=out, hint=hint)
    pages = _read_manifest(out)
    listed = {name for page in pages.values() for name in page["files"]}
    foreign = unlisted_files(out, listed | {MANIFEST})
    if foreign:
        raise JunoBenchError(f"the directory holds files the site did not write: {some(foreign, 5)}", file=out,
                             hint=hint)
