"""NBspecific_2: a cell dropping a constant column was run twice (KeyError)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sample_cases import Case, Dataset, code, md, rng, synthetic


def make() -> dict[str, pd.DataFrame]:
    r = rng(202)
    n = 300
    label = r.choice(["normal", "neptune", "smurf", "satan"], n, p=[0.55, 0.2, 0.15, 0.1])
    attack = label != "normal"
    frame = pd.DataFrame({
        "duration": np.where(attack, 0, r.exponential(40, n)).round(0).astype(int),
        "protocol_type": r.choice(["tcp", "udp", "icmp"], n, p=[0.7, 0.2, 0.1]),
        "service": r.choice(["http", "private", "ecr_i", "smtp", "ftp_data"], n),
        "flag": np.where(attack & (r.random(n) < 0.6), "S0", "SF"),
        "src_bytes": np.where(attack, r.integers(0, 1100, n), r.integers(100, 40000, n)),
        "dst_bytes": np.where(attack, 0, r.integers(0, 90000, n)),
        "num_failed_logins": (r.random(n) < 0.02).astype(int),
        "num_outbound_cmds": 0,
        "is_guest_login": (r.random(n) < 0.01).astype(int),
        "count": np.where(attack, r.integers(100, 511, n), r.integers(1, 40, n)),
        "labels": label,
    })
    return {"network_traffic.csv": frame}


CASE = Case(
    case_id="NBspecific_2",
    fname="network-intrusion-detection-feature-cleaning.ipynb",
    kaggle_slug="network-intrusion-records",
    root_cause="NB specific",
    crash_type="key error",
    pipeline_stage="data preparation",
    cells=[
        md("""
        # Network intrusion detection: cleaning the connection records
        Each row is a network connection with its traffic features and a label
        (`normal` or the name of an attack).
        """),
        code("""
        import numpy as np
        import pandas as pd
        """),
        code("""
        df = pd.read_csv('data/network_traffic.csv')
        df.head()
        """),
        code("""
        print('number of classes:', df['labels'].nunique())
        df['labels'].value_counts()
        """),
        md("Columns with a single value carry no information for a classifier."),
        code("""
        constant_columns = [column for column in df.columns if df[column].nunique() == 1]
        constant_columns
        """),
        code("""
        # [reexecute]
        df = df.drop(columns='num_outbound_cmds')
        df.shape
        """),
        md("## Encoding the categorical features"),
        code("""
        categorical_columns = ['protocol_type', 'service', 'flag']
        df = pd.get_dummies(df, columns=categorical_columns)
        df.shape
        """),
    ],
    order=[0, 1, 2, 3, 4],
    fixed={4: """df = df.drop(columns='num_outbound_cmds')
df.shape"""},
    diagnosis=(
        "The crash is a KeyError because the cell df = df.drop(columns='num_outbound_cmds') "
        "runs a second time: its first run already removed the column from df, so the "
        "column is no longer in the DataFrame when the cell is executed again."
    ),
    runinfo_help="runinfo should know the column is no longer there",
    datasets=[Dataset(
        name="network_traffic",
        title="Network connection records with intrusion labels (synthetic)",
        make=make,
        modifications=[synthetic(
            "numpy default_rng(202): columns and value ranges in the style of "
            "KDD-99-like connection records; num_outbound_cmds is constant 0")],
        note="Generated for the junobench sample by scripts/build_sample.py; CC0.",
    )],
    dataset_note="synthetic",
)
