"""The Croissant metadata's figures from records with gaps (no source, no label, no title,
no licence, no modification), the input datasets and their licences, and mlcroissant's
verdict on files it cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from junobench.hub import croissant

CASES = [
    {"case_id": "a_1", "source": None, "library_label": None, "library": "a", "root_cause": None,
     "notebook_url": "http://x",
     "datasets": [{"title": None, "name": "n1", "url": None, "license": None, "modifications": None}]},
    {"case_id": "b_1", "source": "newly sampled", "library_label": "B", "root_cause": "API misuse",
     "notebook_url": None, "datasets": None},
    {"case_id": "c_1", "source": "newly sampled", "library_label": "B", "root_cause": "API misuse",
     "notebook_url": "http://y",
     "datasets": [{"title": "T", "url": "u", "license": "CC0: Public Domain", "modifications": ["downsampled"]},
                  {"title": "T2", "url": "u2", "license": "CC0: Public Domain"}, {"title": "nodata"}]},
    {"case_id": "d_1", "source": "labeled in empirical study", "library_label": "", "library": "",
     "root_cause": "data confusion", "notebook_url": None,
     "datasets": [{"title": "", "name": "", "url": "", "license": "", "modifications": []},
                  {"title": "Closed", "url": "v", "license": "Proprietary"}]},
]


def test_the_rai_figures_of_records_with_gaps():
    rai = croissant.rai_fields(CASES, {"absent": {"input data": ["b_1"], "original notebook": ["a_1", "b_1"]}})
    assert rai["rai:dataCollection"].endswith(
        "This release: 4 cases; origin: newly sampled 2, labeled in empirical study 1, not recorded 1; "
        "2 of them link their source notebook.")
    assert rai["rai:dataBiases"][1:3] == ["Libraries are unevenly represented: B 2, ? 1, a 1.",
                                          "Root causes are unevenly represented: API misuse 2, ? 1, "
                                          "data confusion 1."]
    assert rai["rai:dataPreprocessingProtocol"][1].endswith("In this release: downsampled 1.")
    assert rai["rai:dataLimitations"][3] == (
        "Input-dataset licences differ (3 licence(s) over 5 dataset(s)); 2 dataset(s) state no licence, "
        "and these licences are not open: Proprietary. Check each dataset's licence before reusing its data.")
    assert rai["rai:dataLimitations"][4] == ("Absent from this release: input data: 1 case(s); "
                                             "original notebook: 2 case(s).")
    plain = croissant.rai_fields(CASES[1:2], {})
    assert plain["rai:dataPreprocessingProtocol"][1].endswith("In this release: no modification recorded.")
    assert not any(line.startswith("Absent") for line in plain["rai:dataLimitations"])


def test_input_datasets_are_named_with_their_users_and_licences():
    nodes = croissant._input_datasets(CASES)
    assert [(n["name"], n.get("url"), n["license"]["name"], n["description"]) for n in nodes] == [
        ("(untitled)", None, "Unknown", "input data of d_1"),
        ("Closed", "v", "Proprietary", "input data of d_1"),
        ("T", "u", "CC0: Public Domain", "input data of c_1"),
        ("T2", "u2", "CC0: Public Domain", "input data of c_1"),
        ("n1", None, "Unknown", "input data of a_1"),
    ]
    assert nodes[2]["license"]["identifier"] == "CC0-1.0"
    assert [n["name"] for n in croissant._licences(CASES)] == ["CC0: Public Domain", "Proprietary", "Unknown"]


@pytest.mark.parametrize(("text", "expected"), [
    ("[]", "AttributeError: "), ("not json", "JSONDecodeError: "), ('{"@context": 5}', "ValueError: "),
])
def test_a_file_mlcroissant_cannot_read_is_one_error_line(tmp_path: Path, text: str, expected: str):
    pytest.importorskip("mlcroissant")
    path = tmp_path / "croissant.json"
    path.write_text(text)
    (error,) = croissant.validate_with_mlcroissant(path)
    assert error.startswith(expected) and "\n" not in error


def test_mlcroissant_s_validation_errors_come_line_by_line(tmp_path: Path):
    pytest.importorskip("mlcroissant")
    path = tmp_path / "croissant.json"
    path.write_text('{"@context": {}, "@type": "sc:Dataset", "name": "x"}')
    errors = croissant.validate_with_mlcroissant(path)
    assert errors is not None and len(errors) >= 2 and all("\n" not in e and e.strip() for e in errors)
    assert errors[0].startswith("Found the following")
