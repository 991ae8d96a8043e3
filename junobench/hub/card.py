"""The dataset card of an export: YAML metadata and a body computed from the records.

The card is rendered with huggingface_hub's :class:`~huggingface_hub.DatasetCard` from the
Jinja template ``data_cards/junobench.md``. Its YAML (``configs``, ``dataset_info``,
licence, tags, size category) comes from :class:`~huggingface_hub.DatasetCardData` and
``datasets``' own metadata classes; its body tables (label distributions, input-dataset
licences, absences) are computed from the records at export time.

>>> size_category(222)
'n<1K'
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.data.export import CONFIG_NAMES, DEFAULT_CONFIG, PARQUET, SPLIT
from junobench.data.layout import PACKAGE_DIR
from junobench.errors import JunoBenchError
from junobench.safety.paths import require_regular
from junobench.safety.text import markdown_link, markdown_text

#: The card template (Jinja): ``data_cards/`` of the source tree, or its installed copy.
TEMPLATE_NAME = "junobench.md"
TEMPLATE_PLACES = (
    PACKAGE_DIR.parent / "data_cards",
    Path(sys.prefix) / "share" / "junobench" / "data_cards",
)


def template_path() -> Path:
    """The dataset card template of this installation (the first place that has it)."""
    for place in TEMPLATE_PLACES:
        if (place / TEMPLATE_NAME).is_file():
            return place / TEMPLATE_NAME
    return TEMPLATE_PLACES[0] / TEMPLATE_NAME
#: The repo id the card's loading examples name.
DEFAULT_REPO_ID = "PELAB-LiU/JunoBench"

TAGS = ("jupyter", "notebooks", "crash-detection", "bug-detection", "machine-learning",
        "software-engineering", "python", "code", "benchmark")

#: Body tables of label counts (``cases`` fields, counted by :func:`junobench.data.distributions.compute`).
DISTRIBUTIONS: tuple[str, ...] = ("library", "root_cause", "crash_type", "pipeline_stage", "source")


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` value for ``rows`` rows."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M")):
        if rows < limit:
            return name
    return "n>1M"


def card_data(infos: Mapping[str, Any], rows: int, licences: Sequence[str] = (),
              version: str | None = None) -> Any:
    """The card's YAML metadata; ``infos`` maps each config to its ``datasets.DatasetInfo``,
    ``rows`` is the row count of the largest config, ``licences`` the input datasets'
    licences (named in ``license_details``: the repo's licence is ``other``)."""
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    extra: dict[str, Any] = {}
    if licences:
        extra["license_details"] = ("The input datasets' licences: " + "; ".join(licences)
                                    + ". Each dataset's licence is in the card's body and in croissant.json.")
    if version:
        extra["version"] = version
    data = DatasetCardData(
        pretty_name="JunoBench",
        license="other",
        license_name="junobench-mixed",
        language=["en"],
        annotations_creators=["expert-generated"],
        source_datasets=["original"],
        task_categories=["text-classification"],
        tags=list(TAGS),
        size_categories=[size_category(rows)],
        **extra,
    )
    MetadataConfigs({
        config: {"data_files": [{"split": SPLIT, "path": PARQUET[config]}],
                 **({"default": True} if config == DEFAULT_CONFIG else {})}
        for config in CONFIG_NAMES
    }).to_dataset_card_data(data)
    DatasetInfosDict(dict(infos)).to_dataset_card_data(data)
    return data


def body_context(cases: Sequence[Mapping[str, Any]], notebooks: Sequence[Mapping[str, Any]],
                 report: Mapping[str, Any]) -> dict[str, Any]:
    """The template's variables: counts, distributions, licence tables, absences."""
    from junobench.data.distributions import TITLES, compute

    n = len(cases)
    counts = compute(cases).counts
    distributions = [
        {"title": TITLES[field], "field": field, "rows": [
            {"value": markdown_text(value), "count": count, "share": f"{100 * count / n:.1f}%"}
            for value, count in counts[field].items()
        ]}
        for field in DISTRIBUTIONS if field in counts
    ]
    return {
        "n_cases": n,
        "n_notebooks": len(notebooks),
        "n_crashing": sum(1 for nb in notebooks if nb["crash"]),
        "distributions": distributions,
        **_licences(cases),
        "absences": _absences(cases, report),
        **_environment(cases, report),
        **_provenance(cases),
    }


def _provenance(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the cases' recorded provenance says (:mod:`junobench.data.provenance`): the
    card claims no verification that is not recorded."""
    from junobench.data.provenance import sentence, summary

    found = summary(cases)
    return {"provenance": {"all_verified": found["all_verified"], "verified": found["verified"],
                           "sentence": markdown_text(sentence(cases))}}


def _environment(cases: Sequence[Mapping[str, Any]], report: Mapping[str, Any]) -> dict[str, Any]:
    """The environment the requirements are pinned from, and the imports it does not pin."""
    env = report.get("environment") or {}
    unpinned = report.get("unpinned") or {}
    return {
        "environment": {k: markdown_text(v) for k, v in env.items() if v is not None},
        "n_with_requirements": sum(1 for c in cases if c.get("requirements")),
        "unpinned": [f"{markdown_text(case)}: {markdown_text(', '.join(names))}"
                     for case, names in sorted(unpinned.items())],
    }


def _licences(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Input datasets (title, url, licence) with the cases using each, and a per-licence summary."""
    users = dataset_users(cases)
    by_licence: dict[str, tuple[int, set[str]]] = {}
    for (_, _, license_), ids in users.items():
        count, cases_ = by_licence.get(license_, (0, set()))
        by_licence[license_] = (count + 1, cases_ | set(ids))
    return {
        "n_datasets": len(users),
        "licence_summary": [
            {"license": markdown_text(lic), "datasets": count, "cases": len(ids)}
            for lic, (count, ids) in sorted(by_licence.items(), key=lambda kv: (-kv[1][0], kv[0]))
        ],
        "dataset_licences": [
            {"dataset": markdown_link(title, url), "license": markdown_text(lic),
             "cases": markdown_text(", ".join(sorted(dict.fromkeys(ids))))}
            for (title, url, lic), ids in sorted(users.items(), key=lambda kv: (kv[0][0].lower(), kv[0]))
        ],
    }


def _absences(cases: Sequence[Mapping[str, Any]], report: Mapping[str, Any]) -> list[str]:
    n = len(cases)
    lines = []
    for what, ids in sorted((report.get("absent") or {}).items()):
        lines.append(f"{what}: absent for {_share(len(ids), n)}{_ids(sorted(ids), n)}")
    for field, what in (("diagnosis", "diagnosis"), ("notebook_url", "notebook URL"),
                        ("source", "source label (labelled in the empirical study / newly sampled)"),
                        ("crash_line", "crash line (not found in the traceback)")):
        missing = sorted(c["case_id"] for c in cases if c[field] is None)
        if missing:
            lines.append(f"{what}: null for {_share(len(missing), n)}{_ids(missing, n)}")
    without = sorted(c["case_id"] for c in cases if not _input_datasets(c))
    if without:
        lines.append(f"input datasets: none listed for {_share(len(without), n)}{_ids(without, n)}")
    if report.get("skipped"):
        skipped = sorted(report["skipped"])
        lines.append(f"left out as invalid: {len(skipped)} case(s){_ids(skipped, 0)}")
    return lines


def _input_datasets(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The case's input datasets; the published table's ``nodata`` placeholder is none."""
    return [d for d in case.get("datasets") or [] if not vocab.is_no_data(d.get("title"))]


def dataset_users(cases: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], list[str]]:
    """(title, url, licence) of every input dataset of ``cases``, sorted → the cases using it."""
    users: dict[tuple[str, str, str], list[str]] = {}
    for case in cases:
        for d in _input_datasets(case):
            key = (d.get("title") or d.get("name") or "(untitled)", d.get("url") or "", d.get("license") or "Unknown")
            users.setdefault(key, []).append(case["case_id"])
    return dict(sorted(users.items()))


def licence_names(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every distinct licence of the input datasets of ``cases`` (``Unknown`` for none)."""
    return sorted({licence for _, _, licence in dataset_users(cases)})


def render_card(infos: Mapping[str, Any], cases: Sequence[Mapping[str, Any]],
                notebooks: Sequence[Mapping[str, Any]], report: Mapping[str, Any], *,
                repo_id: str = DEFAULT_REPO_ID, template: str | Path | None = None,
                version: str | None = None) -> str:
    """The card's full text (YAML header and body)."""
    import jinja2
    from huggingface_hub import DatasetCard

    from junobench.data.snapshot import check_repo_id

    check_repo_id(repo_id)
    path = Path(template) if template is not None else template_path()
    if not path.is_file():
        raise JunoBenchError("the dataset card template is missing", file=path,
                             hint="reinstall junobench, or pass --template PATH")
    try:
        require_regular(path)
    except OSError as error:
        raise JunoBenchError(f"cannot read the card template ({error.strerror or error})",
                             file=path) from None
    context = body_context(cases, notebooks, report)
    context["version"] = version
    try:
        data = card_data(infos, max(len(cases), len(notebooks)), licence_names(cases), version)
        card = DatasetCard.from_template(data, template_path=str(path), repo_id=repo_id, **context)
    except jinja2.TemplateError as error:
        line = getattr(error, "lineno", None)  # syntax errors know their line
        where = f" (line {line})" if line else ""
        raise JunoBenchError(f"the card template is not a valid Jinja template: {error}{where}",
                             file=path, hint="fix the template, or leave out --template") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise JunoBenchError(f"cannot render the card template ({str(error)[:200]})", file=path,
                             hint="fix the template, or leave out --template") from None
    return str(card)


def _share(count: int, total: int) -> str:
    return "all cases" if count == total else f"{count} of {total} cases"


def _ids(ids: list[str], total: int, limit: int = 12) -> str:
    """`` (a, b, …)`` naming the cases, or nothing when they are all ``total`` of them."""
    if len(ids) == total:
        return ""
    shown = ", ".join(markdown_text(i) for i in ids[:limit])
    return f" ({shown}" + (f", … +{len(ids) - limit} more)" if len(ids) > limit else ")")
