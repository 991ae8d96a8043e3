"""The benchmark's label vocabularies, as published (strings kept verbatim).

>>> library_of("tensorflow_3"), library_of("NBspecific_12")
('tensorflow', 'NBspecific')
>>> LIBRARY_LABELS["tensorflow"]
'tensorflow/keras'
"""

from __future__ import annotations

import re

#: Case-id prefixes, one per library cause; ``NBspecific`` is notebook-specific (no library).
LIBRARIES: tuple[str, ...] = (
    "tensorflow",
    "torch",
    "sklearn",
    "numpy",
    "pandas",
    "matplotlib",
    "seaborn",
    "statsmodels",
    "torchvision",
    "lightgbm",
    "NBspecific",
)

NOTEBOOK_SPECIFIC = "NBspecific"

#: Display names of the library causes (``Libs-cause`` in the labelling sheet).
LIBRARY_LABELS: dict[str, str] = {
    "tensorflow": "tensorflow/keras",
    "torch": "torch",
    "sklearn": "sklearn",
    "numpy": "numpy",
    "pandas": "pandas",
    "matplotlib": "matplotlib",
    "seaborn": "seaborn",
    "statsmodels": "statsmodels",
    "torchvision": "torchvision",
    "lightgbm": "lightgbm",
    "NBspecific": "notebook-specific",
}

#: ``label_root_cause``.
ROOT_CAUSES: tuple[str, ...] = (
    "API misuse",
    "data confusion",
    "NB specific",
    "implementation error",
    "ML model confusion",
    "library cause",
)

#: ``label_ML_pipeline``.
PIPELINE_STAGES: tuple[str, ...] = (
    "training",
    "data preparation",
    "evaluation/prediction",
    "data visualization",
    "model construction",
)

#: ``label_refined_exp_type``.
CRASH_TYPES: tuple[str, ...] = (
    "invalid argument",
    "tensor shape mismatch",
    "key error",
    "value error",
    "variable not found",
    "index error",
    "attribute error",
    "data value violation",
    "unsupported broadcast",
    "type error",
    "module not found",
    "runtime error",
    "feature name mismatch",
    "io error",
    "model initialization error",
)

#: ``source`` in the labelling sheet: where a case was found.
ORIGINS: tuple[str, ...] = ("labeled in empirical study", "newly sampled")
#: The former name of :data:`ORIGINS` (the values of the ``source`` record field).
SOURCES = ORIGINS

#: JunoBench as published (the PELAB-LiU/JunoBench dataset and its paper): how many cases
#: of each library, numbered from 1 (``tensorflow_1`` … ``tensorflow_15``), 111 in all.
PUBLISHED_CASES: dict[str, int] = {
    "tensorflow": 15, "torch": 15, "sklearn": 15, "numpy": 15, "pandas": 15,
    "matplotlib": 6, "seaborn": 6, "statsmodels": 2, "torchvision": 1, "lightgbm": 1,
    "NBspecific": 20,
}

#: Notebook versions of a case; ``reproduced`` and ``fixed`` are the evaluation instances.
VERSIONS: tuple[str, ...] = ("original", "reproduced", "fixed")
EVALUATED_VERSIONS: tuple[str, ...] = ("reproduced", "fixed")

#: Kinds of modification recorded for an input dataset.
MODIFICATIONS: tuple[str, ...] = ("downsampled", "synthetic")

#: The published table's dataset title for "this case reads no input dataset".
NO_DATA = "nodata"


def is_no_data(title: str | None) -> bool:
    """True for the published table's placeholder title of a case without input data."""
    return (title or "").strip().lower() == NO_DATA

#: A case id: a library name (letters and digits, at most 64) and a number (at most 9
#: digits). Nothing else, so that an id is always a safe folder name.
_CASE_ID = re.compile(r"^(?P<library>[A-Za-z][A-Za-z0-9]{0,63})_(?P<number>[0-9]{1,9})\Z")


def is_case_id(text: object) -> bool:
    """True for ids shaped ``<library>_<number>``, e.g. ``torch_7`` (a safe folder name)."""
    return isinstance(text, str) and bool(_CASE_ID.match(text))


def library_of(case_id: str) -> str:
    """The library named by a case id's prefix (``torch_7`` → ``torch``)."""
    match = _CASE_ID.match(case_id)
    if not match:
        raise ValueError(f"{case_id!r} is not a case id of the form <library>_<number>")
    return match["library"]


def library_label(library: str) -> str:
    """Display name for a library prefix; unknown prefixes are their own label."""
    return LIBRARY_LABELS.get(library, library)


def instance_id(case_id: str, version: str) -> str:
    """The evaluation instance of a case's notebook: ``torch_7_reproduced``."""
    return f"{case_id}_{version}"


def published_instances() -> frozenset[str]:
    """The 222 evaluation instances of JunoBench as published (:data:`PUBLISHED_CASES`).

    >>> len(published_instances()), "NBspecific_20_fixed" in published_instances()
    (222, True)
    """
    return frozenset(instance_id(f"{library}_{number}", version)
                     for library, count in PUBLISHED_CASES.items()
                     for number in range(1, count + 1) for version in EVALUATED_VERSIONS)


def is_instance(text: str) -> bool:
    """True for an instance id (:func:`split_instance` reads it), e.g. ``torch_7_fixed``."""
    return case_of_instance(text) is not None


def instance_labels(instance: str) -> dict[str, str]:
    """The labels an instance id carries: ``case_id``, ``version``, ``library`` and
    ``library_label``."""
    case_id, version = split_instance(instance)
    library = library_of(case_id)
    return {"case_id": case_id, "version": version, "library": library,
            "library_label": library_label(library)}


def split_instance(instance: str) -> tuple[str, str]:
    """Inverse of :func:`instance_id`: ``torch_7_fixed`` → ``("torch_7", "fixed")``."""
    case_id, _, version = instance.rpartition("_")
    if version not in EVALUATED_VERSIONS or not is_case_id(case_id):
        raise ValueError(f"{instance!r} is not an instance id like 'torch_7_reproduced'")
    return case_id, version


def case_of_instance(instance: object) -> str | None:
    """The case id of an instance id (:func:`split_instance`); None for anything else."""
    try:
        return split_instance(str(instance))[0]
    except ValueError:
        return None
