"""Charts of a mined corpus's :class:`~junobench.mining.summary.Summary`: figures by kind,
purpose and stage, kinds segmented by library and by stage, figures per notebook; drawn
with the benchmark's own chart functions (:mod:`junobench.plots`, the plot extra).

>>> from junobench.mining.summary import Summary
>>> s = Summary()
>>> s.add_figure({"kind": "histogram", "purpose": "distribution", "library": "seaborn", "stage": None,
...               "mime": "image/png", "problem": None, "unknown_calls": []})
>>> [p.name for p in save_summary_plots(s, "mined-plots", formats=("png",))]  # doctest: +ELLIPSIS
['kind.png', 'purpose.png', ...]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench.mining.summary import Summary

#: Kinds shown one by one in a chart; the others summed up as one bar.
TOP = 15


def charts(summary: Summary) -> dict[str, Any]:
    """Chart name → its figure."""
    from junobench.plots import bar_chart, segmented_bar_chart

    figures = summary.figures
    out = {}
    for name in ("kind", "purpose", "stage", "library"):
        out[name] = bar_chart(_top(summary.figures_by[name]), title=f"Figures by {name} ({figures} figures)",
                              xlabel="figures")
    for name, table, legend in (("kind_by_library", summary.kind_by_library, "library"),
                                ("kind_by_stage", summary.kind_by_stage, "stage")):
        matrix = _transpose(table)
        out[name] = segmented_bar_chart(matrix, libraries=sorted(table, key=lambda g: -sum(table[g].values())),
                                        title=f"Kinds by {legend} ({figures} figures)", xlabel="figures",
                                        legend=legend)
    per = {str(k): v for k, v in sorted(summary.per_notebook.items())}
    out["per_notebook"] = bar_chart(per, title=f"Figures per notebook ({summary.notebooks} notebooks)",
                                    xlabel="notebooks")
    return out


def save_summary_plots(summary: Summary, out_dir: str | Path, *, formats: Sequence[str] = ("png", "svg"),
                       dpi: int = 150) -> list[Path]:
    """Write ``<chart>.<format>`` into ``out_dir`` (created) for each chart of :func:`charts`."""
    from junobench.plots import save_charts

    return save_charts(charts(summary).items(), out_dir, formats=formats, dpi=dpi)


def _top(counts: Counter[str]) -> dict[str, int]:
    ordered = counts.most_common()
    shown = dict(ordered[:TOP])
    rest = sum(count for _, count in ordered[TOP:])
    if rest:
        shown[f"({len(ordered) - TOP} others)"] = rest
    return shown


def _transpose(table: Mapping[str, Counter[str]]) -> dict[str, dict[str, int]]:
    """``{group: {kind: n}}`` → ``{kind: {group: n}}`` for the :data:`TOP` kinds."""
    kinds = [k for k, _ in sum(table.values(), Counter()).most_common(TOP)]
    return {kind: {group: counts.get(kind, 0) for group, counts in table.items()} for kind in kinds}
