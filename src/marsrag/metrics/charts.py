"""Server-side SVG charts of daily metric series: pure functions returning markup, no JavaScript.

A chart is a line per series (a workflow, say) over consecutive days. A day without data (``None``) is a gap in
the line, never a zero. Rates are drawn on a fixed 0-100% axis; counts (session depth) on 0 to a round maximum.
Lines differ by colour *and* dash pattern, and the legend names each line in text, so colour is never the only
cue.

Every piece of text that reaches the markup (titles, labels, day names) goes through :func:`html.escape` here,
which is why the dashboard template may insert what :func:`line_chart` returns with ``|safe``. The SVG carries
``role="img"``, a ``<title>`` and a ``<desc>`` (referenced by ``aria-labelledby``); the numbers themselves belong
in a table next to the chart (see :func:`format_value`), since a picture of numbers is not a text alternative.

Styling uses presentation attributes (``fill``, ``stroke``, ``font-size``) and classes, never ``style=``: the
pages send a CSP without ``'unsafe-inline'``, and a standalone report must look right without the stylesheet.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from html import escape
from typing import Literal

#: Line colours (Okabe-Ito, distinguishable with the common colour-vision deficiencies), then cycled.
PALETTE: tuple[str, ...] = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#1d2330", "#e69f00", "#56b4e9")
#: Dash patterns, cycled with a different period than the palette so (colour, dash) pairs repeat late.
DASHES: tuple[str | None, ...] = (None, "6 3", "2 3", "8 3 2 3", "1 2")
#: Chart geometry in SVG user units (the chart scales to its container's width).
WIDTH = 480
PLOT_TOP = 12
PLOT_HEIGHT = 150
LEFT = 46  # the y labels, right-aligned; also half of the first day's label
RIGHT = 26  # room for half of the last day's label, centred under its point
AXIS_LABELS = 30  # room under the plot for the day labels
LEGEND_ROW = 20
FONT_SIZE = 14
#: Labels longer than this are cut with an ellipsis inside the chart (the table keeps the full text).
MAX_LABEL = 48

Kind = Literal["rate", "count"]


@dataclass(frozen=True)
class Series:
    """One line: its label (a workflow name, say) and one value per day (``None``: no data that day)."""

    label: str
    values: tuple[float | None, ...]


def format_value(value: float | None, kind: Kind = "rate") -> str:
    """A value as the charts and tables show it: ``57.1%`` for a rate, ``1.67`` for a count, ``n/a`` for None."""
    if value is None:
        return "n/a"
    if kind == "rate":
        return f"{value:.1%}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if not float(value).is_integer() else f"{int(value)}"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``value`` (1 for nothing above 0)."""
    if value <= 0 or math.isnan(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value - 1e-12:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def slug(text: str) -> str:
    """An id-safe form of ``text`` (letters, digits, ``-``), for element ids."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", text).strip("-").lower() or "chart"


def line_chart(
    chart_id: str,
    title: str,
    days: Sequence[date],
    series: Sequence[Series],
    *,
    kind: Kind = "rate",
    description: str | None = None,
) -> str:
    """An SVG line chart of ``series`` over ``days``: y axis 0-100% for rates, 0 to a round maximum for counts.

    ``chart_id`` makes the element ids unique on the page (it is reduced to ``[a-z0-9-]``). Each series must
    have one value per day; ``None`` values are gaps (the line stops and starts again), and a day with data
    between two gaps still shows as a dot. Returns the markup of one ``<svg>`` element, every text escaped.

    Raises:
        ValueError: a series whose length differs from ``days``.
    """
    for line in series:
        if len(line.values) != len(days):
            raise ValueError(f"series {line.label!r} has {len(line.values)} values for {len(days)} days")
    ident = slug(chart_id)
    plot_width = WIDTH - LEFT - RIGHT
    legend_rows = max(len(series), 1)
    height = PLOT_TOP + PLOT_HEIGHT + AXIS_LABELS + legend_rows * LEGEND_ROW + 6
    top = PLOT_TOP
    bottom = PLOT_TOP + PLOT_HEIGHT
    finite = [v for line in series for v in line.values if v is not None]
    y_max = 1.0 if kind == "rate" else nice_ceiling(max(finite, default=0.0))

    def x_of(index: int) -> float:
        if len(days) <= 1:
            return LEFT + plot_width / 2
        return LEFT + plot_width * index / (len(days) - 1)

    def y_of(value: float) -> float:
        clamped = min(max(value, 0.0), y_max)
        return bottom - PLOT_HEIGHT * clamped / y_max

    summary = description or _describe(title, days, series, kind)
    parts: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart-svg" id="{ident}" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" preserveAspectRatio="xMinYMin meet" '
        f'aria-labelledby="{ident}-title {ident}-desc" font-family="system-ui, sans-serif" font-size="{FONT_SIZE}">',
        f'<title id="{ident}-title">{escape(title)}</title>',
        f'<desc id="{ident}-desc">{escape(summary)}</desc>',
        f'<rect class="chart-plot" x="{LEFT}" y="{top}" width="{plot_width}" height="{PLOT_HEIGHT}" '
        'fill="#ffffff" stroke="#d8dde6"/>',
    ]
    # The y axis: gridlines with their labels.
    for tick in range(5):
        value = y_max * tick / 4
        y = y_of(value)
        label = f"{round(100 * value)}%" if kind == "rate" else format_value(value, "count")
        parts.append(
            f'<line class="chart-grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_width}" y2="{y:.1f}" '
            'stroke="#e6e9ef" stroke-width="1"/>'
        )
        parts.append(
            f'<text class="chart-tick chart-y-tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" '
            f'fill="#5b6475">{escape(label)}</text>'
        )
    # The x axis: the first, middle and last day (all of them for a week or less).
    for index in _day_ticks(len(days)):
        parts.append(
            f'<text class="chart-tick chart-x-tick" x="{x_of(index):.1f}" y="{bottom + 18}" '
            f'text-anchor="middle" fill="#5b6475">{escape(_day_label(days[index]))}</text>'
        )
    # The lines: one path per series, broken at the gaps, and a dot per day with data.
    for number, line in enumerate(series):
        colour, dash = PALETTE[number % len(PALETTE)], DASHES[number % len(DASHES)]
        dash_attribute = f' stroke-dasharray="{dash}"' if dash else ""
        path = _path(line.values, x_of, y_of)
        label = escape(_short(line.label))
        parts.append(f'<g class="chart-series" data-series="{escape(line.label)}">')
        if path:
            parts.append(
                f'<path class="chart-line" d="{path}" fill="none" stroke="{colour}" stroke-width="2" '
                f'stroke-linejoin="round" stroke-linecap="round"{dash_attribute}/>'
            )
        for index, known in enumerate(line.values):
            if known is None:
                continue
            point = f"{label}, {escape(days[index].isoformat())}: {escape(format_value(known, kind))}"
            parts.append(
                f'<circle class="chart-point" cx="{x_of(index):.1f}" cy="{y_of(known):.1f}" r="3" fill="{colour}">'
                f"<title>{point}</title></circle>"
            )
        parts.append("</g>")
    # The legend, in text: a sample of each line's stroke and its name.
    legend_top = bottom + AXIS_LABELS
    if not series:
        parts.append(
            f'<text class="chart-legend chart-empty" x="{LEFT}" y="{legend_top + 12}" fill="#5b6475">'
            "No runs in these days.</text>"
        )
    for number, line in enumerate(series):
        colour, dash = PALETTE[number % len(PALETTE)], DASHES[number % len(DASHES)]
        dash_attribute = f' stroke-dasharray="{dash}"' if dash else ""
        y = legend_top + number * LEGEND_ROW + 8
        parts.append(
            f'<line class="chart-legend-swatch" x1="{LEFT}" y1="{y}" x2="{LEFT + 24}" y2="{y}" stroke="{colour}" '
            f'stroke-width="2"{dash_attribute}/>'
        )
        parts.append(
            f'<text class="chart-legend" x="{LEFT + 30}" y="{y + 4}" fill="#1d2330">{escape(_short(line.label))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def sparkline(values: Sequence[float | None], *, kind: Kind = "rate") -> str:
    """A unicode sparkline (``▁▂▃▄▅▆▇█``), one character per value, ``·`` for no data (rates on 0-100%)."""
    blocks = "▁▂▃▄▅▆▇█"
    finite = [v for v in values if v is not None]
    top = 1.0 if kind == "rate" else nice_ceiling(max(finite, default=0.0))
    out = []
    for value in values:
        if value is None:
            out.append("·")
            continue
        share = min(max(value / top, 0.0), 1.0)
        out.append(blocks[min(int(share * len(blocks)), len(blocks) - 1)])
    return "".join(out)


# -- helpers ----------------------------------------------------------------------------------------------------


def _path(values: Sequence[float | None], x_of: Callable[[int], float], y_of: Callable[[float], float]) -> str:
    """``M x y L x y …`` over each run of two or more consecutive non-None values (lone values are dots only)."""
    runs: list[list[str]] = [[]]
    for index, value in enumerate(values):
        if value is None:
            runs.append([])
            continue
        runs[-1].append(f"{x_of(index):.1f} {y_of(value):.1f}")
    return " ".join("M" + " L".join(points) for points in runs if len(points) > 1)


def _day_ticks(count: int) -> list[int]:
    if count == 0:
        return []
    if count <= 8:
        return list(range(count))
    return sorted({0, (count - 1) // 2, count - 1})


def _day_label(day: date) -> str:
    return day.strftime("%b %d").replace(" 0", " ")


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def _describe(title: str, days: Sequence[date], series: Sequence[Series], kind: Kind) -> str:
    if not days:
        return f"{title}: no days."
    span = f"{days[0].isoformat()} to {days[-1].isoformat()}"
    if not series:
        return f"{title}, {span}: no runs."
    parts = []
    for line in series:
        known = [v for v in line.values if v is not None]
        if not known:
            parts.append(f"{line.label}: no data")
            continue
        latest = next(v for v in reversed(line.values) if v is not None)
        parts.append(f"{line.label}: {len(known)} days with data, latest {format_value(latest, kind)}")
    scale = "0 to 100%" if kind == "rate" else "count"
    return f"{title}, daily, {span} ({scale}). " + "; ".join(parts) + "."
