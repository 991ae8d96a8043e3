"""The records' Arrow schemas, without ``datasets``: the worker processes that parse case
folders start from them before ``datasets`` is imported (an import of a second or two
that then overlaps the parsing); :mod:`.records` derives its ``datasets.Features`` from
them.

>>> CONFIGS, [f.name for f in NOTEBOOK_SCHEMA][:4]
(('cases', 'notebooks'), ['instance', 'case_id', 'version', 'crash'])
"""

from __future__ import annotations

import pyarrow as pa

from junobench.data.cases import LABEL_FIELDS, RUN_FIELDS, TABLE_FIELDS

_string = pa.string()
_runs = pa.list_(pa.struct(list(zip(RUN_FIELDS, (pa.int32(), pa.int32(), _string), strict=True))))
_labels = [(name, _string) for name in LABEL_FIELDS]

CASE_SCHEMA = pa.schema([
    ("case_id", _string),
    *_labels,
    ("dataset_note", _string),
    ("eid", _string),
    ("exception", _string),
    ("evalue", _string),
    ("traceback", pa.list_(_string)),
    ("crash_line", pa.int32()),
    ("diagnosis", _string),
    ("notebook_url", _string),
    ("original", _string),
    ("reproduced", _string),
    ("fixed", _string),
    ("target_cell_index", pa.int32()),
    ("execution_order", pa.struct([("reproduced", _runs), ("fixed", _runs)])),
    ("datasets", pa.list_(pa.struct([
        ("name", _string), ("title", _string), ("url", _string), ("license", _string),
        ("modifications", pa.list_(_string)), ("files", pa.list_(_string)),
    ]))),
    ("requirements", pa.list_(_string)),
    ("provenance", pa.struct([
        ("status", _string), ("verified_at", _string), ("python", _string),
        ("libraries", pa.list_(_string)), ("sandbox", _string), ("environment", _string),
        ("tool", _string), ("detail", _string), ("similar_to", pa.list_(_string)),
    ])),
])

NOTEBOOK_SCHEMA = pa.schema([
    ("instance", _string),
    ("case_id", _string),
    ("version", _string),
    ("crash", pa.bool_()),
    *_labels,
    ("exception", _string),
    ("executed_cells", _runs),
    ("target_cell", _runs.value_type),
    ("diagnosis", _string),
])

SCHEMAS = {"cases": CASE_SCHEMA, "notebooks": NOTEBOOK_SCHEMA}
CONFIGS: tuple[str, ...] = tuple(SCHEMAS)
#: The part of a cases record that its folder gives (the rest comes from the tables).
FOLDER_SCHEMA = pa.schema([f for f in CASE_SCHEMA if f.name not in TABLE_FIELDS])
