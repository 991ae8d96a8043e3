"""Every figure junobench draws: the benchmark's distributions (the paper's Figure 2, from
:mod:`junobench.stats`) and the grouped bars of a crash-detection report
(:func:`junobench.detection.evaluate.figure`).

Needs matplotlib (``pip install 'junobench[plot]'``), imported on first use. Figures are
built with matplotlib's object API on the Agg canvas (no pyplot state, no display
needed); pass ``ax=`` to draw into an axes of your own figure instead.

>>> from junobench.stats import stats
>>> s = stats("sample")
>>> fig = plot_dimension(s, "root_cause")
>>> save_plots(s, "figures")                               # doctest: +ELLIPSIS
[PosixPath('figures/library.png'), PosixPath('figures/library.svg'), ...]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from junobench import vocab
from junobench.errors import JunoBenchError
from junobench.safety.atomic import atomic_open
from junobench.stats import DIMENSIONS, SEGMENTED, TITLES, Stats

#: One colour per library, the same in every chart (tab10/tab20 hues; grey: notebook-specific).
LIBRARY_COLOURS: dict[str, str] = {
    "tensorflow": "#ff7f0e",
    "torch": "#d62728",
    "sklearn": "#1f77b4",
    "numpy": "#17becf",
    "pandas": "#9467bd",
    "matplotlib": "#2ca02c",
    "seaborn": "#8c564b",
    "statsmodels": "#e377c2",
    "torchvision": "#ff9896",
    "lightgbm": "#bcbd22",
    "NBspecific": "#9e9e9e",
}
_OTHER_COLOURS = ("#aec7e8", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5")
#: Single-colour bars (charts not segmented by library).
BAR_COLOUR = "#4c72b0"
#: Width of every figure in inches: a two-column paper's text width.
WIDTH = 6.5
FONT_SIZE = 9
#: Style of every figure; SVG ids are salted with a constant so the files are reproducible.
RC = {
    "font.size": FONT_SIZE,
    "axes.titlesize": FONT_SIZE + 1,
    "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE,
    "ytick.labelsize": FONT_SIZE,
    "legend.fontsize": FONT_SIZE - 1,
    "svg.hashsalt": "junobench",
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def library_colour(library: str, libraries: Sequence[str] = ()) -> str:
    """The colour of ``library`` (libraries outside the vocabulary get spare colours)."""
    if library in LIBRARY_COLOURS:
        return LIBRARY_COLOURS[library]
    others = [lib for lib in libraries if lib not in LIBRARY_COLOURS]
    index = others.index(library) if library in others else len(others)
    return _OTHER_COLOURS[index % len(_OTHER_COLOURS)]


def library_label(library: str) -> str:
    """``tensorflow`` → ``tensorflow/keras``, ``NBspecific`` → ``notebook-specific``."""
    return vocab.LIBRARY_LABELS.get(library, library)


def bar_chart(counts: Mapping[str, int], *, title: str = "", xlabel: str = "cases",
              labels: Mapping[str, str] | None = None, colours: Mapping[str, str] | None = None,
              ax: Any = None) -> Any:
    """Horizontal bars, one per value of ``counts`` (in its order, top to bottom), each
    with its count at its end; returns the figure. ``labels`` renames values, ``colours``
    colours them (default: :data:`BAR_COLOUR`)."""
    with _style():
        fig, ax = _axes(ax, len(counts))
        names = [(labels or {}).get(v, v) for v in counts]
        values = list(counts.values())
        bars = ax.barh(range(len(values)), values, height=0.7,
                       color=[(colours or {}).get(v, BAR_COLOUR) for v in counts])
        ax.bar_label(bars, padding=2, fontsize=FONT_SIZE - 1)
        _finish(ax, names, values, title, xlabel)
    return fig


def segmented_bar_chart(matrix: Mapping[str, Mapping[str, int]], *, libraries: Sequence[str],
                        title: str = "", xlabel: str = "cases", ax: Any = None, legend: str = "library") -> Any:
    """Horizontal bars for the values of ``matrix`` (``{value: {library: count}}``), each
    split into one segment per library in ``libraries`` order, with the segment's count
    inside when it fits and the total at the end; every library of ``libraries`` is in
    the legend (titled ``legend``: the segments may be other groups). Returns the figure."""
    with _style():
        fig, ax = _axes(ax, len(matrix), legend_entries=len(libraries))
        totals = [sum(row.values()) for row in matrix.values()]
        widest = max(totals, default=0) or 1
        left = [0] * len(matrix)
        for library in libraries:
            widths = [row.get(library, 0) for row in matrix.values()]
            bars = ax.barh(range(len(matrix)), widths, left=left, height=0.7,
                           color=library_colour(library, libraries), label=library_label(library),
                           edgecolor="white", linewidth=0.5)
            fits = [str(w) if w and w / widest >= 0.035 * len(str(w)) else "" for w in widths]
            ax.bar_label(bars, labels=fits, label_type="center", fontsize=FONT_SIZE - 2,
                         color=_text_colour(library_colour(library, libraries)))
            left = [a + b for a, b in zip(left, widths, strict=True)]
        for y, total in enumerate(totals):
            ax.annotate(str(total), (total, y), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=FONT_SIZE - 1)
        _finish(ax, list(matrix), totals, title, xlabel)
        ax.legend(title=legend, loc="upper left", bbox_to_anchor=(1.08, 1.0), frameon=False,
                  title_fontsize=FONT_SIZE - 1, handlelength=1.0, borderaxespad=0.0)
    return fig


def plot_dimension(stats: Stats, dimension: str, *, ax: Any = None) -> Any:
    """The chart of one statistic of ``stats``: root cause and pipeline stage segmented by
    library, the others plain bars (libraries under their display names)."""
    if dimension not in stats.counts:
        raise JunoBenchError(f"no statistic {dimension!r} to plot",
                             hint=f"statistics are {', '.join(stats.counts)}")
    title = f"{TITLES.get(dimension, dimension)} ({stats.cases} cases)"
    if dimension in SEGMENTED and dimension in stats.by_library:
        return segmented_bar_chart(stats.by_library[dimension], libraries=stats.libraries(),
                                   title=title, ax=ax)
    counts = stats.counts[dimension]
    labels = colours = None
    if dimension == "library":  # the colours of the segmented charts
        labels = {lib: library_label(lib) for lib in counts}
        colours = {lib: library_colour(lib, list(counts)) for lib in counts}
    xlabel = "datasets" if dimension == "license" else "cases"
    return bar_chart(counts, title=title, labels=labels, colours=colours, xlabel=xlabel, ax=ax)


def grouped_bar_chart(series: Mapping[str, Sequence[float]], groups: Sequence[str], *,
                      errors: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
                      title: str = "", ylabel: str = "", ylim: tuple[float, float] | None = None,
                      ax: Any = None) -> Any:
    """Vertical bars side by side: one bar per series in each group (``series`` maps a
    legend label to one value per group), the groups labelled below, the legend outside
    the axes, right of them, clear of the bars. ``errors`` gives a series its error bars
    (the lengths below and above each value). Returns the figure."""
    with _style():
        fig, ax = _axes(ax, 0, size=(max(6.0, 0.9 * len(groups) + 2), 4.6))
        width = 0.8 / max(1, len(series))
        middle = (len(series) - 1) / 2
        for i, (label, values) in enumerate(series.items()):
            positions = [x + (i - middle) * width for x in range(len(groups))]
            if errors and label in errors:
                ax.bar(positions, values, width, label=label, yerr=[list(e) for e in errors[label]],
                       capsize=2, error_kw={"elinewidth": 0.8})
            else:
                ax.bar(positions, values, width, label=label)
        ax.set_xticks(range(len(groups)), groups, rotation=35, ha="right", fontsize="small")
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title, fontsize="medium")
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0, frameon=False)
    return fig


def save_figure(fig: Any, path: str | Path, *, dpi: int = 120) -> Path:
    """Write ``fig`` to ``path`` (format from its suffix), beside and moved into place."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or "png"
    _save(fig, path, fmt, dpi)
    return path


def save_plots(stats: Stats, out_dir: str | Path, *, dimensions: Sequence[str] = DIMENSIONS,
               formats: Sequence[str] = ("png", "svg"), dpi: int = 200) -> list[Path]:
    """Write ``<dimension>.<format>`` into ``out_dir`` (created) for each dimension; each
    file is written beside and moved into place. Returns the paths written."""
    return save_charts(((d, plot_dimension(stats, d)) for d in dimensions), out_dir, formats=formats, dpi=dpi)


def save_charts(charts: Iterable[tuple[str, Any]], out_dir: str | Path, *, formats: Sequence[str] = ("png", "svg"),
                dpi: int = 200) -> list[Path]:
    """Write ``<name>.<format>`` into ``out_dir`` (created first) for each ``(name, figure)``
    of ``charts``, each beside and moved into place. Returns the paths written."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise JunoBenchError(f"cannot create the plot directory: {error.strerror}", file=out) from None
    written = []
    for name, fig in charts:
        for fmt in formats:
            path = out / f"{name}.{fmt}"
            _save(fig, path, fmt, dpi)
            written.append(path)
    return written


def _text_colour(background: str) -> str:
    """Black on light colours, white on dark ones (``#rrggbb``)."""
    red, green, blue = (int(background[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.6 else "white"


def _save(fig: Any, path: Path, fmt: str, dpi: int) -> None:
    metadata = {"Date": None} if fmt in ("svg", "pdf") else None
    with _style(), atomic_open(path, "wb") as handle:
        fig.savefig(handle, format=fmt, dpi=dpi, bbox_inches="tight", metadata=metadata)


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise JunoBenchError("plotting needs matplotlib", hint="pip install 'junobench[plot]'") from None
    return matplotlib


def _style() -> Any:
    return _matplotlib().rc_context(RC)


def _axes(ax: Any, bars: int, *, legend_entries: int = 0,
          size: tuple[float, float] | None = None) -> tuple[Any, Any]:
    """``ax`` and its figure, or a new figure on the Agg canvas sized for ``bars``
    horizontal bars (or of ``size`` inches)."""
    if ax is not None:
        return ax.figure, ax
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = max(0.9 + 0.26 * bars, 0.4 + 0.17 * legend_entries)
    fig = Figure(figsize=size or (WIDTH, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _finish(ax: Any, names: Sequence[str], values: Sequence[int], title: str, xlabel: str) -> None:
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, (max(values, default=0) or 1) * 1.1)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, loc="left")
