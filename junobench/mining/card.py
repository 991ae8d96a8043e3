"""The dataset card and ``croissant.json`` of a mined corpus.

The card's YAML comes from huggingface_hub's :class:`~huggingface_hub.DatasetCardData` and
``datasets``' metadata classes, as the benchmark export's does (:mod:`junobench.hub.card`):
the three configs with their parquet files (``figures`` the default, so that the Hub's
viewer opens on the pictures) and their features. Its body gives the counts of the
:class:`~junobench.mining.summary.Summary` (figures by kind, purpose, library and stage,
problems), the chart-kind mapping's version and how to load each config; every value from
a notebook is escaped (:func:`junobench.safety.text.markdown_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from junobench.hub.card import size_category
from junobench.hub.croissant import CONFORMS_TO, context, field_node, file_id, parquet_file
from junobench.mining.features import CONFIGS, DEFAULT_CONFIG, DESCRIPTIONS, KEYS, PARQUET, SPLIT, features
from junobench.safety.text import markdown_text

TAGS = ("jupyter", "notebooks", "visualization", "charts", "machine-learning", "code", "image")
#: Rows of each count table shown in the card (the rest summed up in one row).
TABLE_ROWS = 20


def render_card(rows: Mapping[str, int], summary: Mapping[str, Any], digests: Mapping[str, Any], *,
                mapping: str, inputs: list[str], repo_id: str, version: str) -> str:
    """The card's full text (YAML header and body)."""
    from datasets import DatasetInfo
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData


    data = DatasetCardData(
        pretty_name="Figures of Jupyter notebooks", license="other", language=["en"],
        task_categories=["image-classification", "image-to-text"], tags=list(TAGS),
        size_categories=[size_category(max(rows.values(), default=0))], version=version,
        license_details="The notebooks' own licences apply to their code, text and figures: junobench does "
                        "not relicense them. Check each source's terms before redistributing.")
    MetadataConfigs({config: {"data_files": [{"split": SPLIT, "path": PARQUET[config]}],
                              **({"default": True} if config == DEFAULT_CONFIG else {})}
                     for config in CONFIGS}).to_dataset_card_data(data)
    infos = {config: DatasetInfo(features=features()[config], download_size=digests[config]["size"])
             for config in CONFIGS}
    DatasetInfosDict(infos).to_dataset_card_data(data)
    text = body(rows, summary, mapping=mapping, inputs=inputs, repo_id=repo_id)
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{text}"))


def body(rows: Mapping[str, int], summary: Mapping[str, Any], *, mapping: str, inputs: list[str],
         repo_id: str) -> str:
    """The card's Markdown body."""
    lines = [
        "# Figures of Jupyter notebooks",
        "",
        "The text, code and pictures of Jupyter notebooks as data, mined by `junobench mine` "
        f"(chart-kind mapping {markdown_text(mapping)}): {rows.get('notebooks', 0):,} notebooks, "
        f"{rows.get('cells', 0):,} cells, {rows.get('figures', 0):,} figures.",
        "",
        "## Configs",
        "",
        "| config | rows | one row per | key |",
        "|---|---|---|---|",
    ]
    for config in CONFIGS:
        lines.append(f"| `{config}` | {rows.get(config, 0):,} | {DESCRIPTIONS[config]} | "
                     f"{', '.join(KEYS[config])} |")
    lines += ["", "```python", "from datasets import load_dataset", "",
              f'figures = load_dataset("{markdown_text(repo_id)}", "figures", split="{SPLIT}")',
              'figures[0]["image"]          # a PIL image', 'figures[0]["calls"], figures[0]["kind"]', "```", ""]
    for title, key in (("Figures by kind", "kind"), ("Figures by purpose", "purpose"),
                       ("Figures by library", "library"), ("Figures by pipeline stage", "stage"),
                       ("Figures by MIME type", "mime")):
        counts = summary.get("figures_by", {}).get(key) or {}
        if counts:
            lines += [f"## {title}", "", f"| {key} | figures |", "|---|---|", *_table(counts), ""]
    unknown = summary.get("unknown_calls") or {}
    if unknown:
        lines += ["## Plotting calls the mapping does not know", "",
                  "Named in each figure's `unknown_calls`; their figures have no kind from them.", "",
                  "| call | figures |", "|---|---|", *_table(unknown), ""]
    problems = summary.get("problems") or {}
    lines += ["## Problems", "",
              f"{summary.get('notebooks_with_problems', 0):,} notebooks and "
              f"{summary.get('figures_with_problems', 0):,} figures have a problem (the notebooks' "
              "`problems`, the figures' `problem`).", ""]
    if problems:
        lines += ["| problem | count |", "|---|---|", *_table(problems), ""]
    executed = summary.get("execution") or {}
    if executed:
        lines += ["## Notebooks run by junobench", "", "| outcome | notebooks |", "|---|---|", *_table(executed), ""]
    lines += ["## Inputs", "", *[f"- {markdown_text(i)}" for i in inputs[:TABLE_ROWS]],
              *([f"- … and {len(inputs) - TABLE_ROWS} more"] if len(inputs) > TABLE_ROWS else []), ""]
    return "\n".join(lines)


def _table(counts: Mapping[str, int]) -> list[str]:
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [f"| {markdown_text(name)} | {count:,} |" for name, count in ordered[:TABLE_ROWS]]
    rest = sum(count for _, count in ordered[TABLE_ROWS:])
    return shown + ([f"| (other {len(ordered) - TABLE_ROWS}) | {rest:,} |"] if rest else [])


def render_croissant(rows: Mapping[str, int], summary: Mapping[str, Any], digests: Mapping[str, Any], *,
                     mapping: str, repo_id: str, version: str) -> dict[str, Any]:
    """The Croissant JSON-LD of a mined corpus: one ``FileObject`` per parquet file (with its
    sha256) and one ``RecordSet`` per config."""

    return {
        "@context": context(),
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": "Figures of Jupyter notebooks",
        "description": f"Notebooks, cells and figures mined by junobench (chart-kind mapping {mapping}): "
                       f"{rows.get('notebooks', 0)} notebooks, {rows.get('cells', 0)} cells, "
                       f"{rows.get('figures', 0)} figures.",
        "url": f"https://huggingface.co/datasets/{repo_id}",
        "keywords": list(TAGS),
        "inLanguage": "en",
        "version": version,
        "license": {"@type": "sc:CreativeWork", "name": "the notebooks' own licences"},
        "rai:dataCollection": "Jupyter notebooks given to junobench mine (files, folders, a benchmark snapshot or "
                              "a construction listing); notebooks without outputs were run in a sandbox when "
                              "asked to. Every output is kept as the notebook holds it, within bounds.",
        "rai:dataLimitations": [
            "Plotting calls are found by static analysis of Python code: a figure drawn by a function of "
            "another module, or by code built at run time, has no calls; a call the mapping does not know is "
            "named, not classified.",
            f"{summary.get('figures_with_problems', 0)} figures have no image or text (their 'problem' says why).",
        ],
        "rai:personalSensitiveInformation": [
            "Notebooks may name their authors, and their figures may show the data they read. junobench does "
            "not screen them: check a source's terms before reuse."],
        "distribution": [parquet_file(config, SPLIT, PARQUET[config], digests[config]) for config in CONFIGS],
        "recordSet": [
            {"@type": "cr:RecordSet", "@id": config, "name": config, "description": DESCRIPTIONS[config],
             "field": [field_node(f"{config}/{name}", name, feature, file_id(config), name, [])
                       for name, feature in features()[config].items()]}
            for config in CONFIGS
        ],
    }
