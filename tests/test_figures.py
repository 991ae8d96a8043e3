"""Figures are drawn by junobench.plots on Figure objects: a user's pyplot state (its
backend, its open figures) is never touched, and a figure can go into the user's axes."""

from __future__ import annotations

import pytest

matplotlib = pytest.importorskip("matplotlib")


def test_the_evaluation_figure_leaves_pyplot_alone(tmp_path):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from junobench.detection.detect import detect_static
    from junobench.detection.evaluate import evaluate, figure, plot
    from junobench.detection.tasks import tasks

    backend, before = matplotlib.get_backend(), plt.get_fignums()
    predictions = detect_static(tasks("sample")[0], tmp_path / "static.jsonl").out
    report = evaluate(predictions, "sample", resamples=50)
    fig = figure(report, "library")
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels and all("\n(n=" in label for label in labels)
    written = plot(report, tmp_path / "figs" / "acc.png")
    assert written.read_bytes().startswith(b"\x89PNG")
    assert matplotlib.get_backend() == backend and plt.get_fignums() == before
    own = Figure()
    axes = own.subplots(1, 2)
    assert figure(report, "root-cause", ax=axes[1]) is own
    assert len(axes[1].patches) > 0 and len(axes[0].patches) == 0
