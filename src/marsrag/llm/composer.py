"""The offline composer: MarsRAG's embedded default "LLM", which is not a language model.

It is a deterministic ``crewai.BaseLLM`` that writes a valid LoopOutput for each task from what the prompt
gives it: the goal, the hook handed over by the previous step, the numbered passages retrieved for the step
(:mod:`marsrag.chain.briefing`) and the questions already asked in the session. It reads each passage
whole, with its Markdown removed, and only ever quotes whole sentences, each followed by the number of the
passage it came from:

- HOOK: the handed-over question verbatim (the chain rule), else the goal's tension, stated once;
- GRIP: the most relevant explanatory sentence;
- PAYOFF: the most relevant action sentence (an instruction, or a "should/must" statement), said plainly to be
  the recommendation; when no passage gives one, it says so and names the strongest finding to act on;
- REINFORCE: supporting sentences from the other passages;
- LOOP: a question about the most relevant passage this answer did not use and the session has not asked
  about (so following it retrieves something new); when there is none, it says so and asks the fallback
  question.

It exists so the whole system runs and is testable with no API key and no network; it selects and arranges
sentences and understands none of them. Use ``--llm`` with a real model for real answers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from marsrag.chain.briefing import ASKED_HEADING, SOURCES_END, SOURCES_HEADING
from marsrag.integrations.calls import report
from marsrag.llm._local import LocalLLM
from marsrag.state import FALLBACK_HOOK
from marsrag.tokens import tokens

_HOOK = re.compile(r'open your HOOK with it: "(?P<hook>.+?)"\s*$', re.MULTILINE)
_GOAL = re.compile(r'The user\'s goal: "(?P<goal>.+?)"\s*$', re.MULTILINE)
_HEADER = re.compile(r"^\[(?P<number>\d+)\] (?P<source>.+)$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z0-9\"'(])")
# A full stop that ends an abbreviation, not a sentence: the piece after it joins the one before.
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no|fig|ca)|\b[A-Za-z])\.$", re.IGNORECASE)
# Markdown a passage may hold: stripped so that no markup reaches an answer.
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,3}[.)]\s+)")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
# A recommendation reads as an instruction ("Pre-warm each node...") or says what one should do.
_IMPERATIVES = frozenset(
    "add alert announce apply avoid block cap check confirm deploy disable drain enable escalate fail flush freeze "
    "gate hold keep limit lower mark move page pause pin pre-warm prewarm promote raise record reduce rejoin remove "
    "renew replace restart revert roll rotate route run scale schedule set shed split stagger start stop switch "
    "throttle treat use verify warm watch water mulch prune feed always never".split()
)
_MODAL = re.compile(r"\b(should|must|recommend(?:ed|s)?|needs? to|make sure|the rule is|is required)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[:;]\s+")
# A sentence about the document itself ("Use this runbook to ...", "It exists because ...") says nothing about
# the problem: never quoted as an insight or a recommendation.
_ABOUT_ITSELF = re.compile(
    r"\b(?:this|the present) (?:runbook|document|page|guide|note|section|procedure|playbook)\b|^it exists\b",
    re.IGNORECASE,
)
# A sentence opening with one of these leans on the one before it: weak on its own.
_ANAPHORA = frozenset("it this that they these those he she its their such".split())
_LIMIT = 780
_QUOTE_LIMIT = 300


@dataclass(frozen=True)
class _Passage:
    number: int
    source: str
    sentences: tuple[str, ...]
    #: Its place in the sources block, from 0: retrieval's rank (its number is the run's, not a rank).
    rank: int = 0

    @property
    def marker(self) -> str:
        return f"[{self.number}]"

    @property
    def title(self) -> str:
        """The passage's own heading (the last part of its heading path), else its document's name."""
        heading = self.source.split("#", 1)[1] if "#" in self.source else ""
        if heading:
            return heading.rsplit(" > ", 1)[-1].strip()
        return self.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]

    @property
    def document(self) -> str:
        """The document's title: the first heading of the path, else the file name."""
        heading = self.source.split("#", 1)[1] if "#" in self.source else ""
        return heading.split(" > ", 1)[0].strip() if heading else self.title


@dataclass(frozen=True)
class _Sentence:
    text: str
    passage: _Passage
    index: int
    score: float

    @property
    def action(self) -> bool:
        """An instruction (the first word of the sentence or of a clause after a colon or semicolon, as in
        ``AI-1 (Platform): add ...`` or ``...; treat it like a restart``) or a statement of what one should do."""
        for clause in _CLAUSE.split(self.text):
            if clause.split(" ", 1)[0].lower().strip(",.:;\"'") in _IMPERATIVES:
                return True
        return bool(_MODAL.search(self.text))

    @property
    def leans_back(self) -> bool:
        """Whether the sentence needs the one before it: it opens on a pronoun ("It ...", "This ...") or its
        instruction's object is one ("Roll it out ...")."""
        words = [word.lower().strip(",.:;\"'") for word in self.text.split(" ", 3)[:3]]
        return words[0] in _ANAPHORA or (words[0] in _IMPERATIVES and bool(_ANAPHORA.intersection(words[1:])))

    def cited(self) -> str:
        """The sentence with its passage's marker before its final stop (``... database [2].``)."""
        text = _clip(self.text, _QUOTE_LIMIT)
        if text[-1:] in ".!?":
            return f"{text[:-1]} {self.passage.marker}{text[-1]}"
        return f"{text} {self.passage.marker}."


@dataclass
class _Prompt:
    goal: str
    handed: str | None
    passages: list[_Passage]
    asked: list[str] = field(default_factory=list)
    #: The prompt outside its sources: where earlier tasks' answers (CrewAI's context) appear.
    elsewhere: str = ""

    def quoted_before(self, sentence: str) -> bool:
        """Whether an earlier task's answer in the context already quoted ``sentence``."""
        probe = sentence[:80]
        return probe in self.elsewhere or json.dumps(probe)[1:-1] in self.elsewhere


def plain(text: str) -> str:
    """Markdown text as plain prose: no heading marks, bullets, emphasis, code ticks, links or table rules.

    A list item or a table row becomes a sentence of its own (it gets a full stop when it has none).
    """
    lines: list[str] = []
    headings: set[str] = set()
    for raw in text.splitlines():
        if _TABLE_RULE.match(raw):
            continue
        heading = raw.lstrip().startswith("#")
        item = not heading and (_LINE_MARK.match(raw) is not None or raw.lstrip().startswith("|"))
        line = _LINE_MARK.sub("", raw)
        line = _LINK.sub(r"\1", line)
        line = _EMPHASIS.sub("", line)
        if "|" in line:
            line = ", ".join(cell.strip() for cell in line.strip().strip("|").split("|") if cell.strip())
        line = " ".join(line.split())
        if not line:
            lines.append("")
            continue
        if item and line[-1] not in ".!?:;":
            line += "."
        if item or heading or not lines or not lines[-1] or lines[-1] in headings:
            lines.append(line)
        else:
            lines[-1] = f"{lines[-1]} {line}"
        if heading:
            headings.add(line)
    return "\n".join(lines)


def _sentences(text: str) -> tuple[str, ...]:
    found = []
    for paragraph in plain(text).splitlines():
        pieces: list[str] = []
        for piece in _SENTENCE_END.split(paragraph.strip()):
            if pieces and _ABBREVIATION.search(pieces[-1]):
                pieces[-1] = f"{pieces[-1]} {piece}"
            else:
                pieces.append(piece)
        for sentence in pieces:
            sentence = sentence.strip()
            # A heading-like fragment or a label ends with a colon: no sentence to quote.
            if len(sentence) > 20 and sentence[-1] != ":":
                found.append(sentence)
    return tuple(found)


def _clip(text: str, limit: int = _LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _read(prompt: str) -> _Prompt:
    goal_match, hook_match = _GOAL.search(prompt), _HOOK.search(prompt)
    goal = goal_match["goal"] if goal_match else "the problem at hand"
    handed = hook_match["hook"] if hook_match else None
    passages: list[_Passage] = []
    elsewhere = prompt
    start = prompt.find(SOURCES_HEADING)
    if start >= 0:
        end = prompt.find(SOURCES_END, start)
        elsewhere = prompt[:start] + (prompt[end:] if end >= 0 else "")
        block = prompt[start + len(SOURCES_HEADING) : end if end >= 0 else len(prompt)]
        headers = list(_HEADER.finditer(block))
        for position, header in enumerate(headers):
            stop = headers[position + 1].start() if position + 1 < len(headers) else len(block)
            body = "\n".join(
                line[4:] if line.startswith("    ") else line for line in block[header.end() : stop].splitlines()
            )
            passages.append(_Passage(int(header["number"]), header["source"].strip(), _sentences(body), position))
    asked: list[str] = []
    at = prompt.find(ASKED_HEADING)
    if at >= 0:
        for line in prompt[at + len(ASKED_HEADING) :].splitlines()[1:]:
            if not line.startswith("- "):
                break
            asked.append(line[2:].strip())
    return _Prompt(goal, handed, passages, asked, elsewhere)


class OfflineComposer(LocalLLM):
    """Composes grounded, valid Loop Contract answers offline (deterministic; not an LLM)."""

    model: str = "offline-composer"

    def call(
        self,
        messages: Any,
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: type[Any] | None = None,
    ) -> str:
        """Compose this task's answer as LoopOutput JSON."""
        prompt = messages if isinstance(messages, str) else "\n".join(str(m.get("content", "")) for m in messages)
        task = str(getattr(from_task, "marsrag_task", None) or getattr(from_task, "name", None) or "step")
        answer = json.dumps(compose(prompt, task))
        report(finish_reason="stop")  # it always finishes its answer; it counts no tokens
        return answer

    async def acall(
        self,
        messages: Any,
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: type[Any] | None = None,
    ) -> str:
        """The async :meth:`call` (composing takes milliseconds and waits on nothing: it runs on the loop)."""
        # This class's own call: self.call is the LLM boundary's (make_resilient), which would record it twice.
        return OfflineComposer.call(
            self, messages, tools, callbacks, available_functions, from_task, from_agent, response_model
        )


def _hook(goal: str, handed: str | None) -> str:
    if handed:
        return handed
    goal = goal.strip()
    if goal.endswith("?"):
        return goal
    return f"{goal.rstrip('.!')}: what is behind it, and what should we do first?"


def _ranked(read: _Prompt, focus: set[str]) -> list[_Sentence]:
    """Every sentence with its relevance: words shared with the focus, then the passage's retrieval rank.

    A sentence leaning on the one before it, or already quoted by an earlier task, ranks lower.
    """
    passages = [passage for passage in read.passages if passage.sentences]
    count = len(passages)
    found = []
    for rank, passage in enumerate(passages):
        for index, text in enumerate(passage.sentences):
            if _ABOUT_ITSELF.search(text):
                continue
            # Retrieval already ranked the passages: the better ones break ties and lift near-ties.
            score = len(set(tokens(text)) & focus) + 1.5 * (count - rank) / count
            if text.split(" ", 1)[0].lower() in _ANAPHORA:
                score -= 0.75
            if read.quoted_before(text):
                score -= 4
            found.append(_Sentence(text, passage, index, score))
    return sorted(found, key=lambda sentence: (-sentence.score, sentence.passage.rank, sentence.index))


def compose(prompt: str, task: str) -> dict[str, str]:
    """The five sections for one task, from its prompt (goal, handed-over hook, numbered passages, asked)."""
    read = _read(prompt)
    hook = _hook(read.goal, read.handed)
    if not any(passage.sentences for passage in read.passages):
        return _ungrounded(read, task, hook)
    focus = set(tokens(f"{read.handed or ''} {read.goal}"))
    ranked = _ranked(read, focus)
    if not ranked:
        return _ungrounded(read, task, hook)
    # A sentence leaning on the one before it ("Roll it out ...") reads wrong on its own: the last resort.
    actions = [s for s in ranked if s.action and not s.leans_back] or [s for s in ranked if s.action]
    payoff = actions[0] if actions else None
    explanations = (
        [s for s in ranked if not s.action and not s.leans_back]
        or [s for s in ranked if not s.action and s is not payoff]
        or [s for s in ranked if s is not payoff]
    )
    grip = explanations[0] if explanations else ranked[0]
    if payoff is not None:
        payoff_text = f"Recommended next step: {payoff.cited()}"
    else:
        payoff = next((s for s in ranked if s is not grip), grip)
        payoff_text = (
            "No source here gives a direct instruction for this, so act on the strongest finding first: "
            f"{payoff.cited()}"
        )
    used = {grip.passage.number, payoff.passage.number}
    support = _support(ranked, grip, payoff, used)
    used |= {sentence.passage.number for sentence in support}
    reinforce = " ".join(sentence.cited() for sentence in support)
    return {
        "hook": _clip(hook),
        "grip": _clip(grip.cited()),
        "payoff": _clip(payoff_text),
        "reinforce": _clip(reinforce),
        "loop": _clip(_loop(read, ranked, used, task)),
    }


def _support(ranked: list[_Sentence], grip: _Sentence, payoff: _Sentence, used: set[int]) -> list[_Sentence]:
    """Evidence: the best sentence of a passage not quoted yet, then the next best of the quoted ones.

    One new passage at most, so that the loop has passages left to point at.
    """
    unused = [s for s in ranked if s.passage.number not in used and not s.leans_back]
    # The most relevant result is always used: retrieval ranked it first for a reason.
    fresh = next((s for s in unused if s.passage is ranked_first(ranked)), None) or next(iter(unused), None)
    more = next(
        (s for s in ranked if s.passage.number in used and s is not grip and s is not payoff and not s.leans_back),
        None,
    )
    chosen = [sentence for sentence in (fresh, more) if sentence is not None]
    return chosen or [grip]


def ranked_first(ranked: list[_Sentence]) -> _Passage:
    """The passage retrieval ranked first (the first listed among those with sentences)."""
    return min((sentence.passage for sentence in ranked), key=lambda passage: passage.rank)


def _loop(read: _Prompt, ranked: list[_Sentence], used: set[int], task: str) -> str:
    """A next question about the most relevant passage not used here and not asked about in the session."""
    asked = " ".join([read.handed or "", read.goal, *read.asked]).casefold()
    best: dict[int, _Sentence] = {}
    for sentence in ranked:
        best.setdefault(sentence.passage.number, sentence)
    documents = {sentence.passage.document for sentence in ranked if sentence.passage.number in used}
    for sentence in sorted(best.values(), key=lambda s: (-s.score, s.passage.rank)):
        passage = sentence.passage
        if passage.number in used or (passage.document in documents and passage.title.casefold() in asked):
            continue
        steps = any(s.action for s in ranked if s.passage is passage)
        # Within a document this answer already quotes, the section's own title is what is new (and what the
        # next retrieval should match); elsewhere the document's title says where to look.
        if passage.document in documents or passage.title == passage.document:
            where = f'"{passage.title}"' if passage.document in documents else passage.title
        else:
            where = f"{passage.document} ({passage.title})"
        question = f"Want the steps from {where}?" if steps else f"Should we look at {where} next?"
        if question.casefold() not in asked:
            return question
    return f"The knowledge base has nothing new on this beyond the sources above. {FALLBACK_HOOK}"


def _ungrounded(read: _Prompt, task: str, hook: str) -> dict[str, str]:
    goal = read.goal
    return {
        "hook": _clip(hook),
        "grip": _clip(
            f"No sources in the knowledge base matched this {task} step, so this answer rests on the goal alone: "
            f"{goal}."
        ),
        "payoff": _clip(
            f"Gather the facts this {task} step needs first: when it started, what changed just before, and "
            "which users or regions are affected."
        ),
        "reinforce": "No sources were found to cite; run marsrag ingest PATH to ground the answers.",
        "loop": _clip(f"After the {task} step, which evidence about {goal.rstrip('.?!')} should we collect first?"),
    }
