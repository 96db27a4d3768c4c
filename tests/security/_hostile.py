"""A store full of hostile text, and the checks that it stays text wherever it is shown.

Every payload sets ``window.__pwned`` (and most call ``alert``) if it ever runs, so a browser test can tell.
The store is written through the library (``run_goal`` with the replay LLM) from a config whose workflow and
task names are hostile too. Session ids are restricted now (``marsrag.goals``), so the hostile ones are written
into the runs table afterwards: a store from before the rule may hold any, and the pages must still be safe.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from tests.web.conftest import answer

SCRIPT = "<script>window.__pwned=1;alert(1)</script>"
IMG = '"><img src=x onerror="window.__pwned=1;alert(1)">'
SVG = "'><svg onload=window.__pwned=1>"
JS_URL = "javascript:window.__pwned=1//"
TEMPLATE = "{{7*7}}{% if 1 %}x{% endif %}"
RTL = "\u202eexe.txt\u202c"
PAYLOADS = (SCRIPT, IMG, SVG, JS_URL, TEMPLATE, RTL)

#: Names of things the config defines (no "/": they are path segments of the routes).
HOSTILE_WORKFLOW = 'wf"><svg onload=window.__pwned=1>' + "<script>alert(1)</script>"
HOSTILE_TASK = 'task"><img src=x onerror=window.__pwned=1>'
#: Session ids of runs stored before session ids were restricted.
HOSTILE_SESSIONS = ('s"><svg onload=window.__pwned=1>', "javascript:alert(1)", "{{7*7}}" + RTL)

#: One payload per Loop Contract section, so each section's card is checked.
#: Each is content (a few words of its own) beside its payload: a bare payload would be a placeholder (1.2.0).
SECTIONS = {
    "hook": f"Hook: why did checkout slow down {SCRIPT}",
    "grip": f"Grip: the cache restarted cold {IMG}",
    "payoff": f"Payoff: pre-warm each cache node first {SVG}",
    "reinforce": f"Reinforce: misses tripled after restarts {TEMPLATE} {RTL}",
    "loop": f"{JS_URL} Loop: which region should go first {SCRIPT}?",
}
#: Not a contract answer: the task fails, and its raw text and errors are shown.
BROKEN = f"HOOK: {SCRIPT}\nnothing else {IMG}"


@dataclass(frozen=True)
class World:
    """The hostile store: its URL, config folder, run ids and session ids."""

    db: str
    config: str
    runs: tuple[str, ...]
    sessions: tuple[str, ...]


def hostile_config(target: Path) -> Path:
    """The sample config with its first workflow and first task renamed to hostile names."""
    from marsrag.tasks.loader import sample_config_dir

    shutil.copytree(sample_config_dir(), target)
    workflows = (target / "workflows.yaml").read_text(encoding="utf-8")
    workflows = workflows.replace("support_answer:", f"{json.dumps(HOSTILE_WORKFLOW)}:", 1)
    workflows = workflows.replace("tasks: [diagnose,", f"tasks: [{json.dumps(HOSTILE_TASK)},", 1)
    (target / "workflows.yaml").write_text(workflows, encoding="utf-8")
    tasks = (target / "tasks.yaml").read_text(encoding="utf-8")
    (target / "tasks.yaml").write_text(tasks.replace("diagnose:", f"{json.dumps(HOSTILE_TASK)}:", 1), encoding="utf-8")
    return target


def build_world(directory: Path) -> World:
    """Write the hostile runs: a failed, a partial and a valid task in the hostile workflow; a machine task."""
    from marsrag.compose import run_goal
    from marsrag.settings import resolve_settings

    config = hostile_config(directory / "config")
    db = f"sqlite:///{directory}/hostile.db"
    plans = [
        # hostile task fails twice (answer, repair), then a hostile valid answer, then a partial one.
        (
            HOSTILE_WORKFLOW,
            f"Goal {SCRIPT}",
            HOSTILE_SESSIONS[0],
            [BROKEN, BROKEN, answer(**SECTIONS)] + [answer(**{**SECTIONS, "grip": "", "payoff": ""})] * 2,
        ),
        (HOSTILE_WORKFLOW, f"Goal {IMG} {TEMPLATE}", HOSTILE_SESSIONS[1], [answer(**SECTIONS)] * 3),
        ("fact_extraction", f"Facts {SVG} {JS_URL}", HOSTILE_SESSIONS[2], [f"- {SCRIPT}\n- {IMG}\n- {RTL}"]),
    ]
    runs: list[str] = []
    statuses: list[list[str]] = []
    for number, (workflow, goal, session, outputs) in enumerate(plans):
        replay = directory / f"replay-{number}.jsonl"
        replay.write_text("".join(json.dumps({"output": o}) + "\n" for o in outputs), encoding="utf-8")
        settings = resolve_settings(config=config, llm=f"replay:{replay}", db=db)
        document = run_goal(settings, goal, workflow=workflow, session=f"legacy-{number}")
        runs.append(str(document["run_id"]))
        statuses.append([task["validation"]["status"] for task in document["tasks"]])
        with sqlite3.connect(db.removeprefix("sqlite:///")) as connection:
            connection.execute("UPDATE runs SET session_id = ? WHERE run_id = ?", (session, document["run_id"]))
    # The pages must hold a failed, a partial and valid tasks (else the failures table and cards are not tested).
    assert statuses == [["failed", "valid", "partial"], ["valid"] * 3, ["skipped"]], statuses
    return World(db, str(config), tuple(runs), HOSTILE_SESSIONS)


class _Page(HTMLParser):
    """Tags, attributes and the text of a page, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


#: Tags no page of ours uses: one in a page means markup was injected.
FORBIDDEN_TAGS = frozenset({"script", "img", "iframe", "object", "embed", "base", "frame"})
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "poster", "data"}


def injected_markup(html: str, allowed_tags: frozenset[str] = frozenset()) -> list[str]:
    """What in ``html`` could run or navigate: forbidden tags, ``on*`` handlers, URLs that are not local."""
    page = _Page()
    page.feed(html)
    page.close()
    problems = [f"<{tag}>" for tag in page.tags if tag in FORBIDDEN_TAGS - allowed_tags]
    for tag, name, value in page.attributes:
        if name.startswith("on"):
            problems.append(f"<{tag} {name}={value!r}>")
        if name in URL_ATTRIBUTES:
            local = value.startswith(("/", "#", "?")) and not value.startswith("//") and "\\" not in value
            if not local:
                problems.append(f"<{tag} {name}={value!r}> is not a local URL")
    return problems


def text_of(html: str) -> str:
    """Everything the page shows or carries as text (character references decoded), attributes included."""
    page = _Page()
    page.feed(html)
    page.close()
    return "".join(page.text) + "\n".join(value for _, _, value in page.attributes)


def assert_shown_as_text(html: str, expected: list[str], where: str) -> None:
    """Each expected string is in the page as text, never as raw markup; nothing in the page could run."""
    assert injected_markup(html) == [], where
    shown = text_of(html)
    for text in expected:
        assert text in shown, f"{where}: {text!r} is not shown (this check would prove nothing)"
        if any(c in text for c in "<>\"'"):
            assert text not in html, f"{where}: {text!r} is in the markup unescaped"
