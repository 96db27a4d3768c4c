"""The SVG charts: well-formed, every label escaped, gaps for days without data, rates on a 0-100% axis."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest

from marsrag.metrics.charts import (
    LEFT,
    MAX_LABEL,
    PLOT_HEIGHT,
    PLOT_TOP,
    Series,
    format_value,
    line_chart,
    nice_ceiling,
    slug,
    sparkline,
)

SVG = "{http://www.w3.org/2000/svg}"
DAYS = tuple(date(2026, 11, 1) + timedelta(days=n) for n in range(5))
BOTTOM = PLOT_TOP + PLOT_HEIGHT


def parse(svg: str) -> ET.Element:
    """The chart as XML (it must be well-formed to be valid inline SVG)."""
    return ET.fromstring(svg)


def paths(root: ET.Element) -> list[str]:
    return [path.attrib["d"] for path in root.iter(f"{SVG}path")]


def points(root: ET.Element) -> list[tuple[float, float]]:
    return [(float(c.attrib["cx"]), float(c.attrib["cy"])) for c in root.iter(f"{SVG}circle")]


def texts(root: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if cls in t.attrib.get("class", "").split()]


def test_labels_and_titles_are_escaped() -> None:
    """A label or title with markup comes out as text: no element is injected, the XML parses, the text survives."""
    hostile = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    svg = line_chart("c1", f"rate of {hostile}", DAYS, [Series(hostile, (0.5, 0.5, None, 0.2, 0.1))])
    assert "<script" not in svg and "<img" not in svg
    assert "&lt;script&gt;" in svg
    root = parse(svg)
    assert {element.tag.removeprefix(SVG) for element in root.iter()} <= {
        "svg",
        "title",
        "desc",
        "rect",
        "line",
        "text",
        "g",
        "path",
        "circle",
    }
    assert root.find(f"{SVG}title") is not None and hostile in (root.find(f"{SVG}title").text or "")  # type: ignore[union-attr]
    assert texts(root, "chart-legend") == [hostile[: MAX_LABEL - 1] + "…"]  # long labels are cut, still escaped
    assert root.find(f"{SVG}g").attrib["data-series"] == hostile  # type: ignore[union-attr]


def test_accessible_name_and_description() -> None:
    """role=img, labelled by its own <title> and <desc>; ids are unique per chart id and safe."""
    root = parse(line_chart("chart loop_follow_rate!", "Follow rate", DAYS, [Series("support", (0.1,) * 5)]))
    assert root.attrib["role"] == "img"
    ident = slug("chart loop_follow_rate!")
    assert ident == "chart-loop-follow-rate" and root.attrib["id"] == ident
    assert root.attrib["aria-labelledby"] == f"{ident}-title {ident}-desc"
    assert root.find(f"{SVG}title").attrib["id"] == f"{ident}-title"  # type: ignore[union-attr]
    description = root.find(f"{SVG}desc").text or ""  # type: ignore[union-attr]
    assert "2026-11-01 to 2026-11-05" in description and "support" in description and "10.0%" in description
    assert "style" not in line_chart("c", "t", DAYS, [Series("a", (0.1,) * 5)])  # no inline style (CSP)


def test_null_days_are_gaps_not_zeros() -> None:
    """The line breaks at a None (a new M command), lone days are dots only, and no point is drawn at 0 for None."""
    root = parse(line_chart("gaps", "t", DAYS, [Series("a", (0.2, 0.4, None, 0.6, 0.8))]))
    (d,) = paths(root)
    assert d.count("M") == 2 and d.count("L") == 2
    assert len(points(root)) == 4
    assert all(cy < BOTTOM for _, cy in points(root))  # nothing dropped to the 0% line

    lone = parse(line_chart("lone", "t", DAYS, [Series("a", (None, 0.5, None, None, 0.0))]))
    assert paths(lone) == []  # no two consecutive days: no line
    assert [cy for _, cy in points(lone)] == [pytest.approx(PLOT_TOP + PLOT_HEIGHT / 2), pytest.approx(BOTTOM)]

    empty = parse(line_chart("none", "t", DAYS, [Series("a", (None,) * 5)]))
    assert paths(empty) == [] and points(empty) == []


def test_rates_use_a_fixed_0_to_100_percent_axis() -> None:
    """Ticks 0%..100% whatever the data; 0 sits on the bottom, 1 on the top; out-of-range values are clamped."""
    root = parse(line_chart("axis", "t", DAYS, [Series("a", (0.0, 0.25, 1.0, 1.5, -0.1))]))
    assert texts(root, "chart-y-tick") == ["0%", "25%", "50%", "75%", "100%"]
    ys = [cy for _, cy in points(root)]
    assert ys == [
        pytest.approx(BOTTOM),
        pytest.approx(BOTTOM - PLOT_HEIGHT / 4),
        pytest.approx(PLOT_TOP),
        pytest.approx(PLOT_TOP),
        pytest.approx(BOTTOM),
    ]
    xs = [cx for cx, _ in points(root)]
    assert xs[0] == pytest.approx(LEFT) and xs == sorted(xs)
    # Small values do not rescale the axis.
    small = parse(line_chart("small", "t", DAYS, [Series("a", (0.01,) * 5)]))
    assert texts(small, "chart-y-tick")[-1] == "100%"


def test_counts_use_a_round_maximum() -> None:
    """Session depth: the axis goes to the next round number above the largest value."""
    root = parse(line_chart("depth", "t", DAYS, [Series("a", (1.0, 1.5, None, 3.2, 2.0))], kind="count"))
    assert texts(root, "chart-y-tick") == ["0", "1.25", "2.5", "3.75", "5"]
    assert nice_ceiling(3.2) == 5 and nice_ceiling(1.0) == 1 and nice_ceiling(0) == 1 and nice_ceiling(11) == 20


def test_several_series_differ_by_colour_and_dash_and_are_named_in_text() -> None:
    """One path and one legend entry per series, in order, with distinct stroke/dash pairs."""
    names = ["support", "review", "triage"]
    root = parse(line_chart("many", "t", DAYS, [Series(n, (0.1, 0.2, 0.3, 0.4, 0.5)) for n in names]))
    assert texts(root, "chart-legend") == names
    styles = {(p.attrib["stroke"], p.attrib.get("stroke-dasharray")) for p in root.iter(f"{SVG}path")}
    assert len(styles) == 3
    no_data = parse(line_chart("empty", "t", DAYS, []))
    assert texts(no_data, "chart-empty") == ["No runs in these days."]


def test_day_labels_and_bad_lengths() -> None:
    """30 days show three day labels; a series of the wrong length is refused."""
    days = tuple(date(2026, 10, 5) + timedelta(days=n) for n in range(30))
    root = parse(line_chart("month", "t", days, [Series("a", (0.5,) * 30)]))
    assert texts(root, "chart-x-tick") == ["Oct 5", "Oct 19", "Nov 3"]
    with pytest.raises(ValueError, match="has 2 values for 5 days"):
        line_chart("bad", "t", DAYS, [Series("a", (0.1, 0.2))])


def test_format_value_and_sparkline() -> None:
    """Rates as percentages, counts as short numbers, None as n/a; sparklines with a dot for no data."""
    assert format_value(4 / 7) == "57.1%" and format_value(None) == "n/a" and format_value(0.0) == "0.0%"
    assert format_value(5 / 3, "count") == "1.67" and format_value(2.0, "count") == "2"
    line = sparkline([0.0, None, 0.5, 1.0])
    assert len(line) == 4 and line[1] == "·" and line[0] == "▁" and line[3] == "█"
    assert re.fullmatch(r"[▁-█·]+", sparkline([1.0, 2.0, None], kind="count"))
