"""``croissant.json``: an export described in Croissant 1.0 (JSON-LD), with its RAI fields.

The metadata names the two parquet files (``FileObject``\\ s with their sha256) and one
``RecordSet`` per config whose fields are the records' features (``datasets.Value`` → a
leaf field, ``List`` → ``repeated``, a struct → ``subField``\\ s read with ``jsonPath``
transforms), so that ``mlcroissant.Dataset(jsonld="croissant.json").records("cases")``
reads the rows. The Responsible-AI fields (``rai:``) say how the data were collected and
prepared, what personal information they may hold, their biases and limitations and
what they are for; ``license`` lists the licence of every input dataset, and
``isBasedOn`` each input dataset with its licence. Written as plain JSON (no mlcroissant
needed to export); :func:`validate_with_mlcroissant` checks it where mlcroissant is
installed (the ``croissant`` extra).

>>> context()["cr"]
'http://mlcommons.org/croissant/'
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench.data.export import CONFIG_NAMES, CROISSANT, PARQUET
from junobench.data.licences import lookup
from junobench.hub.card import TAGS, dataset_users, licence_names

__all__ = ["CROISSANT", "croissant", "rai_fields", "validate_with_mlcroissant"]
CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
PAPER_URL = "https://arxiv.org/abs/2510.18013"
CITATION = ("@misc{wang2025junobench, title={JunoBench: A Benchmark Dataset of Crashes in Python Machine "
            "Learning Jupyter Notebooks}, author={Wang, Yiran and Hern{\\'a}ndez L{\\'o}pez, Jos{\\'e} "
            "Antonio and Nilsson, Ulf and Varr{\\'o}, D{\\'a}niel}, year={2025}, eprint={2510.18013}, "
            "archivePrefix={arXiv}, primaryClass={cs.SE}, url={https://arxiv.org/abs/2510.18013}}")
DESCRIPTIONS = {
    "cases": "One row per case: labels, exception, traceback, crash line, diagnosis, the three notebooks "
             "as JSON text, execution orders, input datasets and requirements.",
    "notebooks": "One row per reproduced or fixed notebook, the unit of crash-detection evaluation: "
                 "the cells executed before the target cell, the target cell, the crash label.",
}
KEYS = {"cases": "case_id", "notebooks": "instance"}

_DATA_TYPES = {"string": "sc:Text", "large_string": "sc:Text", "int32": "sc:Integer", "int64": "sc:Integer",
               "bool": "sc:Boolean", "float32": "sc:Float", "float64": "sc:Float"}


def context() -> dict[str, Any]:
    """The JSON-LD ``@context`` of Croissant 1.0 with its RAI vocabulary."""
    return {
        "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
        "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/",
        "rai": "http://mlcommons.org/croissant/RAI/", "data": {"@id": "cr:data", "@type": "@json"},
        "dataType": {"@id": "cr:dataType", "@type": "@vocab"}, "dct": "http://purl.org/dc/terms/",
        "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
        "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet",
        "format": "cr:format", "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset",
        "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5", "parentField": "cr:parentField",
        "path": "cr:path", "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex",
        "repeated": "cr:repeated", "replace": "cr:replace", "sc": "https://schema.org/",
        "separator": "cr:separator", "source": "cr:source", "subField": "cr:subField",
        "transform": "cr:transform",
    }


def croissant(features: Mapping[str, Any], digests: Mapping[str, Mapping[str, Any]],
              cases: Sequence[Mapping[str, Any]], report: Mapping[str, Any], *, repo_id: str,
              version: str | None, published: str | None = None) -> dict[str, Any]:
    """The Croissant JSON-LD of an export: ``features`` and ``digests`` (sha256, size) per
    config, the ``cases`` records, the build ``report``, the dataset ``version`` and the
    release date ``published``."""
    metadata: dict[str, Any] = {
        "@context": context(),
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": "JunoBench",
        "description": "Real crashes in Python machine-learning Jupyter notebooks from Kaggle, each with a "
                       "reproduced notebook that crashes, a fixed one that does not, the cell execution "
                       "order, labels in four dimensions, a diagnosis and its input datasets.",
        "url": f"https://huggingface.co/datasets/{repo_id}",
        "sameAs": PAPER_URL,
        "citeAs": CITATION,
        "keywords": list(TAGS),
        "inLanguage": "en",
        **({"version": version} if version else {}),
        **({"datePublished": published} if published else {}),
        "license": _licences(cases),
        "isBasedOn": _input_datasets(cases),
        **rai_fields(cases, report),
        "distribution": [parquet_file(config, "test", PARQUET[config], digests[config]) for config in CONFIG_NAMES],
        "recordSet": [_record_set(config, features[config]) for config in CONFIG_NAMES],
    }
    return metadata


def file_id(config: str) -> str:
    """The ``@id`` of a config's parquet file."""
    return f"{config}-parquet"


def parquet_file(config: str, split: str, path: str, digest: Mapping[str, Any]) -> dict[str, Any]:
    """The ``cr:FileObject`` of a config's parquet file at ``path`` (relative), with its
    sha256 and size (``digest``: :func:`junobench.data.export.file_digest`'s form)."""
    return {"@type": "cr:FileObject", "@id": file_id(config), "name": file_id(config),
            "description": f"config {config!r}, split {split!r}", "contentUrl": path,
            "encodingFormat": "application/x-parquet", "sha256": digest["sha256"],
            "contentSize": f"{digest['size']} B"}


def _record_set(config: str, features: Any) -> dict[str, Any]:
    return {"@type": "cr:RecordSet", "@id": config, "name": config, "description": DESCRIPTIONS[config],
            "key": {"@id": f"{config}/{KEYS[config]}"},
            "field": [field_node(f"{config}/{name}", name, feature, file_id(config), name, [])
                      for name, feature in features.items()]}


def field_node(field_id: str, name: str, feature: Any, file_id: str, column: str, path: list[str],
               repeated: bool = False) -> dict[str, Any]:
    """One field of ``feature`` (a ``datasets`` feature), read from ``column`` of the file
    ``file_id`` through ``path``; an image (``datasets.Image``) is an ``sc:ImageObject``
    read from its struct's ``bytes``."""
    import datasets

    node: dict[str, Any] = {"@type": "cr:Field", "@id": field_id, "name": name}
    if isinstance(feature, datasets.List):
        return field_node(field_id, name, feature.feature, file_id, column, path, repeated=True)
    if repeated:
        node["repeated"] = True
    if isinstance(feature, dict):
        node["subField"] = [field_node(f"{field_id}/{key}", key, sub, file_id, column, [*path, key])
                            for key, sub in feature.items()]
        return node
    if isinstance(feature, datasets.Image):
        node["dataType"] = "sc:ImageObject"
        path = [*path, "bytes"]
    else:
        node["dataType"] = _DATA_TYPES[feature.dtype]
    source: dict[str, Any] = {"fileObject": {"@id": file_id}, "extract": {"column": column}}
    if path:
        source["transform"] = [{"jsonPath": step} for step in path]
    node["source"] = source
    return node


# --------------------------------------------------------------------------- licences


def _licence_node(name: str) -> dict[str, Any]:
    known = lookup(name)
    node: dict[str, Any] = {"@type": "sc:CreativeWork", "name": name}
    if known is not None:
        node["url"] = known.url
        node["identifier"] = known.spdx
    return node


def _licences(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every distinct licence of the input datasets."""
    return [_licence_node(name) for name in licence_names(cases)]


def _input_datasets(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for (title, url, licence), users in dataset_users(cases).items():
        node: dict[str, Any] = {"@type": "sc:Dataset", "name": title, "license": _licence_node(licence),
                                "description": f"input data of {', '.join(sorted(set(users)))}"}
        if url:
            node["url"] = url
        out.append(node)
    return out


# --------------------------------------------------------------------------- RAI


def rai_fields(cases: Sequence[Mapping[str, Any]], report: Mapping[str, Any]) -> dict[str, Any]:
    """The Responsible-AI fields, their figures computed from the records."""
    from junobench.data.provenance import sentence as provenance_sentence
    from junobench.data.provenance import summary as provenance_summary

    n = len(cases)
    origins = Counter(c.get("source") or "not recorded" for c in cases)
    libraries = Counter(c.get("library_label") or c.get("library") or "?" for c in cases)
    roots = Counter(c.get("root_cause") or "?" for c in cases)
    datasets = dataset_users(cases)
    licences = Counter(licence for _, _, licence in datasets)
    unknown = sum(count for name, count in licences.items() if name.strip().casefold() in ("unknown", ""))
    closed = sorted(name for name in licences if not _is_open(name) and name.strip().casefold() != "unknown")
    inputs = [d for c in cases for d in c.get("datasets") or []]
    modified = Counter(m for d in inputs for m in d.get("modifications") or [])
    absences = [f"{what}: {len(ids)} case(s)" for what, ids in sorted((report.get("absent") or {}).items())]
    return {
        "rai:dataCollection": (
            "Crashes in public Kaggle notebooks (Python, machine-learning libraries). Part of the cases "
            "were labelled in an earlier empirical study of crashes in ML notebooks, the others newly "
            "sampled from Kaggle notebooks whose imports name a target library. Each crash was reproduced "
            "(minimal edits so that the notebook crashes reliably in its recorded cell order) and fixed; "
            "its input datasets were downloaded from their sources. Provenance: "
            f"{provenance_sentence(cases)} This release: {n} cases; origin: {_counts(origins)}; "
            f"{sum(1 for c in cases if c.get('notebook_url'))} of them link their source notebook."),
        "rai:dataCollectionType": ["Secondary Data Analysis", "Manual Human Curation", "Experiments"],
        "rai:dataPreprocessingProtocol": [
            "Reproduced notebooks: minimal edits to the collected notebook so that it crashes reliably in "
            "its recorded cell order; fixed notebooks: the crash repaired, the rest unchanged.",
            "Input data larger than needed were downsampled (seeded, per class), and data whose licence "
            "forbids redistribution replaced by synthetic stand-ins (same columns and types); each "
            "dataset's metadata records its modifications. In this release: "
            + (_counts(modified) or "no modification recorded") + ".",
        ],
        "rai:dataAnnotationProtocol": [
            "Each case is labelled in four dimensions (library cause, crash type, root cause, ML pipeline "
            "stage) with the published vocabularies, and each reproduced notebook has a natural-language "
            "diagnosis written by the benchmark's authors."],
        "rai:personalSensitiveInformation": [
            "The notebooks are public Kaggle notebooks: their URLs and code may name their authors "
            "(Kaggle user names, file paths, comments as written). No personal data were sought.",
            "Input datasets are as their sources published them, except the synthetic ones; junobench does "
            "not screen them for personal or sensitive information: check a dataset before reusing it.",
        ],
        "rai:dataBiases": [
            "Kaggle only: notebooks written for Kaggle's environment and its public datasets.",
            f"Libraries are unevenly represented: {_counts(libraries)}.",
            f"Root causes are unevenly represented: {_counts(roots)}.",
            "Only crashes that could be reproduced are included: crashes that "
            "depend on hardware, randomness or the network are under-represented.",
        ],
        "rai:dataLimitations": [
            f"{n} cases: too few for fine-grained statistics per library or label.",
            "The notebooks need the library versions of the environment they were reproduced in (each "
            "case's 'provenance' names them where a verification is recorded); under other versions a "
            "crash may not reproduce, or the fixed notebook may crash.",
            *([f"Not verified in this release: {', '.join(provenance_summary(cases)['unverified'])}."]
              if provenance_summary(cases)["unverified"] else []),
            f"Input-dataset licences differ ({len(licences)} licence(s) over {len(datasets)} dataset(s)); "
            f"{unknown} dataset(s) state no licence"
            + (f", and these licences are not open: {'; '.join(closed)}" if closed else "")
            + ". Check each dataset's licence before reusing its data.",
            *(["Absent from this release: " + "; ".join(absences) + "."] if absences else []),
        ],
        "rai:dataUseCases": [
            "Evaluating crash detectors (LLMs, static analysers) on the reproduced and fixed notebooks "
            "(config 'notebooks': predict 'crash' from the executed cells and the target cell).",
            "Studying the causes of crashes in ML notebooks and evaluating diagnoses against the reference.",
        ],
        "rai:dataSocialImpact": (
            "Meant to improve tools that find bugs in ML notebooks before they run; the crashes are "
            "programming errors, not statements about people."),
        "rai:dataReleaseMaintenancePlan": (
            "Versioned releases on the Hugging Face Hub, each tagged v<version> with a changelog entry "
            "listing the cases added, removed, renamed and changed (junobench release)."),
    }


def _is_open(name: str) -> bool:
    known = lookup(name)
    return known is not None and known.open


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


# --------------------------------------------------------------------------- checking


def validate_with_mlcroissant(path: str | Path) -> list[str] | None:
    """mlcroissant's errors for the Croissant file ``path`` (empty when it validates); None
    when mlcroissant is not installed."""
    try:
        import mlcroissant
    except ImportError:
        return None
    logging.getLogger("absl").setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # rdflib's, not ours
            mlcroissant.Dataset(jsonld=str(path))
    except mlcroissant.ValidationError as error:
        return [line for line in str(error).splitlines() if line.strip()] or [str(error)]
    except Exception as error:  # mlcroissant raises assorted errors on malformed input
        return [f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"]
    return []
