"""The weekly loop review (spec section 9, step 5): one ISO week's metrics against the week before.

:func:`weekly_review` gathers, for an ISO week (default: the last complete one), the six metrics of the runs
created in it and in the week before (and their change, None when either side has no data), the daily series
per workflow, the workflows and tasks with the most repairs and fallbacks, and a few example failures.
:func:`render_markdown` and :func:`render_html` turn that into a report; the HTML is one standalone file
(inline SVG charts, its CSS in a ``<style>`` element, no script).

Every figure comes from the same store counts as ``marsrag metrics`` (:mod:`marsrag.metrics.compute`); the
rankings (:meth:`marsrag.store.RunStore.repair_rankings` and ``fallback_rankings``) are GROUP BY queries over
the same rows the repair and fallback rates count: a task execution "repaired" when
its attempt 2 is an in-run repair, a transition "fallback" when its current (not superseded) row is in
fallback mode. A fallback is counted against the transition's *source* task, the one whose loop could not be
used. :func:`daily_metrics` and :func:`metric_chart` are shared with the web dashboard.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from html import escape
from typing import Any

from marsrag.errors import InputError
from marsrag.metrics.charts import Kind, Series, format_value, line_chart, sparkline
from marsrag.metrics.compute import compute_metrics, metrics_by
from marsrag.metrics.definitions import DEFINITIONS, METRIC_NAMES, Depth, LoopMetrics
from marsrag.metrics.failures import Failure, latest_failures
from marsrag.metrics.window import FIRST_DAY, LAST_DAY, Window
from marsrag.store import OutcomeCount, RunStore
from marsrag.terminal import visible

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
#: Rows per ranking and example failures in a review.
TOP = 5
EXAMPLES = 5


# -- weeks ------------------------------------------------------------------------------------------------------


def parse_week(text: str) -> date:
    """The Monday of an ISO week written ``YYYY-Www`` (``2026-W45``).

    Raises:
        InputError: another form, a week the year does not have (``2026-W53``), or a year outside the
            supported range (:data:`marsrag.metrics.window.FIRST_DAY`..``LAST_DAY``).
    """
    matched = _WEEK.match(text.strip())
    if matched is None:
        raise InputError(f"{text!r} is not an ISO week: write it as YYYY-Www, e.g. 2026-W45", field="week")
    year, week = int(matched.group(1)), int(matched.group(2))
    # An ISO week belongs to the year of its Thursday: the weeks of these years, and the week before each,
    # lie within the supported days (give or take the three days a week spans into its neighbour years).
    if not FIRST_DAY.year <= year <= LAST_DAY.year:
        raise InputError(
            f"week {text!r} is out of range: ISO weeks of the years {FIRST_DAY.year} to {LAST_DAY.year} are supported",
            field="week",
        )
    try:
        return date.fromisocalendar(year, week, 1)
    except ValueError:
        raise InputError(f"{text!r} is not an ISO week: {year} has no week {week}", field="week") from None


def week_name(monday: date) -> str:
    """``YYYY-Www`` of the ISO week containing ``monday``."""
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def last_complete_week(now: datetime | None = None) -> date:
    """The Monday of the last ISO week that has ended by ``now`` (UTC)."""
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    return today - timedelta(days=today.weekday() + 7)


def day_window(first: date, last: date) -> Window:
    """Runs created from the start of ``first`` to the end of ``last`` (UTC days)."""
    return Window(_midnight(first), _midnight(last + timedelta(days=1)))


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


# -- figures shared with the dashboard -----------------------------------------------------------------------


def metric_value(metrics: LoopMetrics, name: str) -> float | None:
    """A metric's headline value: the rate, or the mean session depth (None: no data)."""
    value: float | None = getattr(metrics, name).value
    return value


def metric_counts(metrics: LoopMetrics, name: str) -> str:
    """What a value is computed over: ``4/7`` for a rate, ``3 sessions`` for the session depth."""
    record = getattr(metrics, name)
    if isinstance(record, Depth):
        return f"{record.sessions} session{'' if record.sessions == 1 else 's'}"
    return f"{record.numerator}/{record.denominator}"


def metric_text(metrics: LoopMetrics, name: str) -> str:
    """A metric's value in words: ``57.1%``, ``mean 1.67 (p50 1, max 3)`` or ``n/a``."""
    record = getattr(metrics, name)
    if isinstance(record, Depth):
        if record.value is None:
            return "n/a"
        return f"mean {record.value:.2f} (p50 {record.p50:g}, max {record.max})"
    return format_value(record.value, "rate")


def kind_of(name: str) -> Kind:
    """``count`` for session_depth, ``rate`` for the others."""
    return "count" if name == "session_depth" else "rate"


def change_text(change: float | None, name: str) -> str:
    """A change as shown: ``+7.1 pp`` for a rate (percentage points), ``-0.50`` for the depth, ``n/a``."""
    if change is None:
        return "n/a"
    if kind_of(name) == "rate":
        return f"{100 * change:+.1f} pp"
    return f"{change:+.2f}"


def days_between(first: date, last: date) -> tuple[date, ...]:
    """Every day from ``first`` to ``last``, both included."""
    return tuple(first + timedelta(days=offset) for offset in range((last - first).days + 1))


def daily_metrics(
    store: RunStore, days: Sequence[date], workflow: str | None = None
) -> dict[str, tuple[LoopMetrics | None, ...]]:
    """Per workflow with runs in these days, its metrics on each day (None: no run of it that day).

    One grouped query (:func:`marsrag.metrics.compute.metrics_by` by workflow and day); workflows sorted.
    """
    if not days:
        return {}
    grouped = metrics_by(store, day_window(days[0], days[-1]), workflow, by=("workflow", "day"))
    names = sorted({key[0] for key in grouped})
    return {name: tuple(grouped.get((name, day)) for day in days) for name in names}


def metric_chart(
    chart_id: str, name: str, days: Sequence[date], daily: dict[str, tuple[LoopMetrics | None, ...]]
) -> str:
    """The SVG line chart of one metric: a line per workflow over ``days`` (escaped by :mod:`charts`)."""
    series = [
        Series(workflow, tuple(None if day is None else metric_value(day, name) for day in values))
        for workflow, values in daily.items()
    ]
    unit = "mean runs per session" if name == "session_depth" else "daily rate"
    return line_chart(chart_id, f"{name} ({unit}) per workflow", days, series, kind=kind_of(name))


# -- the review ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """A workflow (``task_id`` None) or a task of one, with how many repairs or fallbacks it had, out of how many."""

    workflow: str
    task_id: str | None
    count: int
    total: int

    @property
    def name(self) -> str:
        """``workflow`` or ``workflow / task``."""
        return self.workflow if self.task_id is None else f"{self.workflow} / {self.task_id}"

    @property
    def rate(self) -> float | None:
        """count / total (None when total is 0)."""
        return self.count / self.total if self.total else None

    def to_dict(self) -> dict[str, Any]:
        """``{"workflow", "task_id", "count", "total", "rate"}``."""
        return {
            "workflow": self.workflow,
            "task_id": self.task_id,
            "count": self.count,
            "total": self.total,
            "rate": self.rate,
        }


@dataclass(frozen=True)
class Review:
    """One week's review: metrics this week and the week before, daily series, rankings, example failures."""

    week: str
    previous_week: str
    window: Window
    previous_window: Window
    current: LoopMetrics
    previous: LoopMetrics
    days: tuple[date, ...]
    daily: dict[str, tuple[LoopMetrics | None, ...]]
    repairs_by_workflow: tuple[Ranking, ...]
    repairs_by_task: tuple[Ranking, ...]
    fallbacks_by_workflow: tuple[Ranking, ...]
    fallbacks_by_task: tuple[Ranking, ...]
    failures: tuple[Failure, ...]
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    #: The one workflow reviewed (None: all of them).
    workflow: str | None = None

    @property
    def title(self) -> str:
        """``Loop review 2026-W48``, with ``, workflow NAME`` when the review covers one workflow."""
        return f"Loop review {self.week}" + (f", workflow {self.workflow}" if self.workflow else "")

    def change(self, name: str) -> float | None:
        """This week's value minus the week before's (None when either has no data)."""
        now, before = metric_value(self.current, name), metric_value(self.previous, name)
        return None if now is None or before is None else now - before

    def to_dict(self) -> dict[str, Any]:
        """The review as JSON-ready data."""
        return {
            "week": self.week,
            "previous_week": self.previous_week,
            "since": _iso(self.window.since),
            "until": _iso(self.window.until),
            "metrics": self.current.to_dict(),
            "previous": self.previous.to_dict(),
            "change": {name: self.change(name) for name in METRIC_NAMES},
            "days": [day.isoformat() for day in self.days],
            "daily": {
                workflow: [None if day is None else day.to_dict() for day in values]
                for workflow, values in self.daily.items()
            },
            "repairs_by_workflow": [r.to_dict() for r in self.repairs_by_workflow],
            "repairs_by_task": [r.to_dict() for r in self.repairs_by_task],
            "fallbacks_by_workflow": [r.to_dict() for r in self.fallbacks_by_workflow],
            "fallbacks_by_task": [r.to_dict() for r in self.fallbacks_by_task],
            "failures": [f.to_dict() for f in self.failures],
        }


def weekly_review(
    store: RunStore, week: str | None = None, now: datetime | None = None, workflow: str | None = None
) -> Review:
    """The review of ISO week ``week`` (``YYYY-Www``; default the last complete week before ``now``), of one
    workflow or (None) all.

    Raises:
        InputError: an unreadable week.
    """
    monday = parse_week(week) if week is not None else last_complete_week(now)
    before = monday - timedelta(days=7)
    days = days_between(monday, monday + timedelta(days=6))
    this_window = day_window(monday, days[-1])
    previous_window = day_window(before, monday - timedelta(days=1))
    repairs = store.repair_rankings(since=this_window.since, until=this_window.until)
    fallbacks = store.fallback_rankings(since=this_window.since, until=this_window.until)
    repairs_workflow, repairs_task = _ranked(repairs[0], workflow), _ranked(repairs[1], workflow)
    fallbacks_workflow, fallbacks_task = _ranked(fallbacks[0], workflow), _ranked(fallbacks[1], workflow)
    return Review(
        week=week_name(monday),
        previous_week=week_name(before),
        window=this_window,
        previous_window=previous_window,
        current=compute_metrics(store, this_window, workflow),
        previous=compute_metrics(store, previous_window, workflow),
        days=days,
        daily=daily_metrics(store, days, workflow),
        repairs_by_workflow=repairs_workflow,
        repairs_by_task=repairs_task,
        fallbacks_by_workflow=fallbacks_workflow,
        fallbacks_by_task=fallbacks_task,
        failures=tuple(latest_failures(store, EXAMPLES, this_window, workflow)),
        generated_at=now or datetime.now(UTC),
        workflow=workflow,
    )


# -- rankings -------------------------------------------------------------------------------------------------


def _ranked(found: list[OutcomeCount], workflow: str | None = None) -> tuple[Ranking, ...]:
    """The groups with a count above 0 (of ``workflow`` only, when given): most first, then the higher share,
    then by name; at most :data:`TOP`."""
    rows = [Ranking(row.workflow, row.task_id, row.count, row.total) for row in found]
    rows = [row for row in rows if workflow is None or row.workflow == workflow]
    rows = [row for row in rows if row.count > 0]
    rows.sort(key=lambda r: (-r.count, -(r.rate or 0.0), r.name))
    return tuple(rows[:TOP])


# -- Markdown -------------------------------------------------------------------------------------------------


def render_markdown(review: Review) -> str:
    """The review as Markdown: tables, unicode sparklines for the daily series, links to failed tasks."""
    lines = [
        f"# {review.title}",
        "",
        f"Runs created {_span(review.window)}, compared with {review.previous_week} ({_span(review.previous_window)}).",
        f"Generated {review.generated_at.astimezone(UTC).strftime('%Y-%m-%d %H:%M')} UTC.",
        "",
        "## The six metrics",
        "",
        f"| metric | {review.week} | of | {review.previous_week} | of | change |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in METRIC_NAMES:
        lines.append(
            f"| {_md(name)} | {_md(metric_text(review.current, name))} | {metric_counts(review.current, name)} "
            f"| {_md(metric_text(review.previous, name))} | {metric_counts(review.previous, name)} "
            f"| {change_text(review.change(name), name)} |"
        )
    lines += ["", "Definitions:", ""]
    lines += [f"- **{_md(name)}**: {_md(DEFINITIONS[name])}" for name in METRIC_NAMES]
    lines += ["", "## Daily, per workflow", ""]
    if not review.daily:
        lines += ["No runs this week.", ""]
    else:
        day_heads = " | ".join(day.strftime("%a %m-%d") for day in review.days)
        for name in METRIC_NAMES:
            lines += [f"### {_md(name)}", "", f"| workflow | trend | {day_heads} |"]
            lines.append("| --- | --- |" + " ---: |" * len(review.days))
            for workflow, values in review.daily.items():
                numbers = [None if day is None else metric_value(day, name) for day in values]
                cells = " | ".join(_day_cell(day, name) for day in values)
                lines.append(f"| {_md(workflow)} | `{sparkline(numbers, kind=kind_of(name))}` | {cells} |")
            lines.append("")
    lines += ["## Most repairs", ""]
    lines += _md_rankings(review.repairs_by_workflow, review.repairs_by_task, "repairs", "task executions")
    lines += ["## Most fallbacks", ""]
    lines += _md_rankings(review.fallbacks_by_workflow, review.fallbacks_by_task, "fallbacks", "transitions")
    lines += ["## Example failures", ""]
    if not review.failures:
        lines.append("No failed or partial tasks this week.")
    for failure in review.failures:
        message = f": {_md(failure.message)}" if failure.message else ""
        lines.append(
            f"- [{_md(failure.run_id)} / {_md(failure.task_id)}]({failure.link}) **{failure.status}**{message} "
            f"({_md(failure.workflow)}, goal “{_md(_cut(failure.goal, 120))}”)"
        )
    return "\n".join(lines).rstrip() + "\n"


def _md_rankings(workflows: Sequence[Ranking], tasks: Sequence[Ranking], what: str, total: str) -> list[str]:
    if not workflows:
        return [f"No {what} this week.", ""]
    lines: list[str] = []
    for heading, rows in (("Workflows", workflows), ("Tasks", tasks)):
        lines += [f"{heading}:", "", f"| {heading[:-1].lower()} | {what} | of {total} | share |"]
        lines.append("| --- | ---: | ---: | ---: |")
        lines += [f"| {_md(r.name)} | {r.count} | {r.total} | {format_value(r.rate)} |" for r in rows]
        lines.append("")
    return lines


def _day_cell(day: LoopMetrics | None, name: str) -> str:
    return _md(day_text(day, name))


_MD_SPECIAL = re.compile(r"([\\`*\[\]|])")


def _md(text: str) -> str:
    """Text safe in a Markdown table cell or list item: specials escaped, ``<``/``>``/``&`` as entities, one line.

    Control characters are made visible (``\\x1b``): the Markdown is printed on terminals as it is.
    """
    flat = visible(" ".join(text.split()))
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", flat)


# -- HTML -----------------------------------------------------------------------------------------------------

_CSS = """
body { margin: 0 auto; max-width: 60rem; padding: 1rem; font: 16px/1.5 system-ui, sans-serif; color: #1d2330; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; } h3 { font-size: 1rem; margin: 0 0 .4rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #d8dde6; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #5b6475; font-size: .9rem; }
.up { color: #1b6e3a; } .down { color: #a11a1a; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(20rem, 1fr)); gap: 1rem; }
figure { margin: 0; border: 1px solid #d8dde6; border-radius: 6px; padding: .6rem; overflow-x: auto; }
svg.chart-svg { display: block; width: 100%; height: auto; }
.table-scroll { overflow-x: auto; }
.status-failed { color: #a11a1a; font-weight: 600; } .status-partial { color: #7a5200; font-weight: 600; }
"""


def render_html(review: Review) -> str:
    """The review as one standalone HTML document (inline SVG charts, CSS in a ``<style>`` element, no script)."""
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(review.title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{escape(review.title)}</h1>",
        f'<p class="muted">Runs created {escape(_span(review.window))}, compared with '
        f"{escape(review.previous_week)} ({escape(_span(review.previous_window))}). Generated "
        f"{escape(review.generated_at.astimezone(UTC).strftime('%Y-%m-%d %H:%M'))} UTC.</p>",
        '<section id="metrics"><h2>The six metrics</h2><div class="table-scroll"><table class="metrics">',
        f'<thead><tr><th scope="col">metric</th><th scope="col" class="num">{escape(review.week)}</th>'
        f'<th scope="col" class="num">of</th><th scope="col" class="num">{escape(review.previous_week)}</th>'
        '<th scope="col" class="num">of</th><th scope="col" class="num">change</th></tr></thead><tbody>',
    ]
    for name in METRIC_NAMES:
        change = review.change(name)
        direction = "" if not change else (" up" if _better(name, change) else " down")
        out.append(
            f'<tr data-metric="{escape(name)}"><th scope="row" title="{escape(DEFINITIONS[name])}">{escape(name)}</th>'
            f'<td class="num">{escape(metric_text(review.current, name))}</td>'
            f'<td class="num">{escape(metric_counts(review.current, name))}</td>'
            f'<td class="num">{escape(metric_text(review.previous, name))}</td>'
            f'<td class="num">{escape(metric_counts(review.previous, name))}</td>'
            f'<td class="num{direction}">{escape(change_text(change, name))}</td></tr>'
        )
    out.append("</tbody></table></div>")
    out.append('<details><summary>Definitions</summary><dl class="muted">')
    out += [f"<dt>{escape(name)}</dt><dd>{escape(DEFINITIONS[name])}</dd>" for name in METRIC_NAMES]
    out.append("</dl></details></section>")

    out.append('<section id="daily"><h2>Daily, per workflow</h2>')
    if not review.daily:
        out.append("<p>No runs this week.</p>")
    out.append('<div class="charts">')
    for name in METRIC_NAMES if review.daily else ():
        out.append(f'<figure data-metric="{escape(name)}"><h3>{escape(name)}</h3>')
        out.append(metric_chart(f"review-{name}", name, review.days, review.daily))
        out.append(_html_day_table(review, name))
        out.append("</figure>")
    out.append("</div></section>")

    out.append('<section id="repairs"><h2>Most repairs</h2>')
    out += _html_rankings(review.repairs_by_workflow, review.repairs_by_task, "repairs", "task executions")
    out.append('</section><section id="fallbacks"><h2>Most fallbacks</h2>')
    out += _html_rankings(review.fallbacks_by_workflow, review.fallbacks_by_task, "fallbacks", "transitions")
    out.append('</section><section id="failures"><h2>Example failures</h2>')
    if not review.failures:
        out.append("<p>No failed or partial tasks this week.</p>")
    else:
        out.append("<ul>")
        for failure in review.failures:
            message = f": {escape(failure.message)}" if failure.message else ""
            out.append(
                f'<li><a href="{escape(failure.link)}">{escape(failure.run_id)} / {escape(failure.task_id)}</a> '
                f'<span class="status-{escape(failure.status)}">{escape(failure.status)}</span>{message} '
                f'<span class="muted">({escape(failure.workflow)}, '
                f"goal “{escape(_cut(failure.goal, 120))}”)</span></li>"
            )
        out.append("</ul>")
    out.append("</section></body></html>")
    return "\n".join(out) + "\n"


def _html_day_table(review: Review, name: str) -> str:
    heads = "".join(f'<th scope="col" class="num">{escape(day.strftime("%a %m-%d"))}</th>' for day in review.days)
    rows = []
    for workflow, values in review.daily.items():
        cells = "".join(f'<td class="num">{escape(day_text(day, name))}</td>' for day in values)
        rows.append(f'<tr><th scope="row">{escape(workflow)}</th>{cells}</tr>')
    return (
        f'<details><summary>The numbers</summary><div class="table-scroll"><table><thead><tr><th scope="col">'
        f"workflow</th>{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></details>"
    )


def day_text(day: LoopMetrics | None, name: str) -> str:
    """A day's value with its counts, ``57.1% (4/7)``, or ``–`` for a day without runs."""
    if day is None:
        return "–"
    if name == "session_depth":
        return f"mean {format_value(metric_value(day, name), 'count')} ({metric_counts(day, name)})"
    return f"{metric_text(day, name)} ({metric_counts(day, name)})"


def _html_rankings(workflows: Sequence[Ranking], tasks: Sequence[Ranking], what: str, total: str) -> list[str]:
    if not workflows:
        return [f"<p>No {escape(what)} this week.</p>"]
    out: list[str] = []
    for heading, rows in (("Workflows", workflows), ("Tasks", tasks)):
        out.append(
            f'<h3>{heading}</h3><table class="ranking"><thead><tr><th scope="col">{heading[:-1].lower()}</th>'
            f'<th scope="col" class="num">{escape(what)}</th><th scope="col" class="num">of {escape(total)}</th>'
            '<th scope="col" class="num">share</th></tr></thead><tbody>'
        )
        out += [
            f'<tr><th scope="row">{escape(r.name)}</th><td class="num">{r.count}</td><td class="num">{r.total}</td>'
            f'<td class="num">{escape(format_value(r.rate))}</td></tr>'
            for r in rows
        ]
        out.append("</tbody></table>")
    return out


def _better(name: str, change: float) -> bool:
    """Whether a change is an improvement: more is better except for repairs and fallbacks."""
    return change < 0 if name in ("repair_rate", "fallback_rate") else change > 0


# -- small helpers --------------------------------------------------------------------------------------------


def _span(window: Window) -> str:
    assert window.since is not None and window.until is not None
    last = window.until - timedelta(days=1)
    return f"{window.since.date().isoformat()} to {last.date().isoformat()}"


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
