"""Composing a grounded answer from a task's prompt, without a model: the offline composer's answers.

:func:`compose` writes a valid LoopOutput for a task from what the prompt gives it: the goal, the hook handed over
by the previous step, the numbered passages retrieved for the step (:mod:`marsrag.chain.briefing`), how well they
support the step, and the questions already asked in the session. It reads each passage whole, with its Markdown
removed (:mod:`marsrag.llm._passages`), and only ever quotes whole sentences, each followed by the number of the
passage it came from. Relevance is shared stems (:func:`marsrag.tokens.stems`) with the goal and hook, in the
sentence and in its section's heading, with retrieval's order breaking ties.

- HOOK: the handed-over question verbatim (the chain rule), else the goal's tension, stated once;
- GRIP: the most relevant explanatory sentence;
- PAYOFF: the instruction that best matches the goal, said plainly to be the recommendation; a procedure's
  step first (a runbook's numbered steps are what "how do we ..." wants, in their order); when no passage
  instructs, it says so and names the strongest finding to act on;
- REINFORCE: supporting sentences from the other passages;
- LOOP: what the user needs next given the goal and this answer: the procedure's next step, else the part of
  the goal this answer left open where a passage covers it, else the most relevant passage not used yet,
  always named with its document and the goal's own words, so that following it stays on the subject.

The support line decides the stance. ``none``: the knowledge base does not cover the goal, and the answer says so,
names what it looked for, recommends nothing (the payoff cites no passage) and asks for the documents that would
cover it. ``weak``: the answer says the sources only touch the goal, and quotes what the closest one does say as a
lead, not as the answer.

It selects and arranges sentences and understands none of them: the offline composer (:mod:`marsrag.llm.composer`)
answers with it, and a real model's prompt shows it as a draft (:func:`marsrag.llm.structured.framed`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from marsrag.chain.briefing import ASKED_HEADING, GOAL_PREFIX, SOURCES_END, SOURCES_HEADING, SUPPORT_PREFIX
from marsrag.contract.rules import fold
from marsrag.llm._passages import ANAPHORA, Sentence, cited, clip, plain, sentences
from marsrag.state import FALLBACK_HOOK
from marsrag.tokens import stems, words

__all__ = ["compose", "plain"]

_HOOK = re.compile(r'open your HOOK with it: "(?P<hook>.+?)"\s*$', re.MULTILINE)
_GOAL = re.compile(re.escape(GOAL_PREFIX) + r' "(?P<goal>.+?)"\s*$', re.MULTILINE)
_HEADER = re.compile(r"^\[(?P<number>\d+)\] (?P<source>.+)$", re.MULTILINE)
_SUPPORT = re.compile(
    rf"^{re.escape(SUPPORT_PREFIX)} (?P<level>strong|weak|none)(?: \(nothing on: (?P<missing>[^)]*)\))?;",
    re.MULTILINE,
)
_LIMIT = 780
#: Goal words named at most when the answer says what it looked for.
_NAMED = 4
# The weights of relevance: words shared with the goal and hook count once in the sentence and half in its
# section's heading; retrieval's rank spreads over _RANK; a sentence leaning on the one before it, or quoted by
# an earlier task, ranks lower.
_HEADING = 0.5
_RANK = 1.5
_LEANING = 0.75
_QUOTED = 4.0
# Among instructions: one that opens its sentence beats one in a later clause or a "should" statement, a
# procedure's step beats a loose instruction, and an earlier step beats a later one matching as well.
_OPENS = 0.75
_STEP = 1.0
_LATER_STEP = 0.2


@dataclass(frozen=True)
class _Passage:
    number: int
    source: str
    sentences: tuple[Sentence, ...]
    #: Its place in the sources block, from 0: retrieval's rank (its number may be the run's, not a rank).
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

    @property
    def where(self) -> str:
        """The passage named for a reader: its document, and its section when that is not the document."""
        return self.document if self.title == self.document else f"{self.document} ({self.title})"

    def step(self, number: int) -> Sentence | None:
        """The sentence opening step ``number`` of the passage's procedure, when it holds that step."""
        return next((s for s in self.sentences if s.opens_step and s.step == number), None)


@dataclass(frozen=True)
class _Scored:
    sentence: Sentence
    passage: _Passage
    score: float

    @property
    def text(self) -> str:
        return self.sentence.text

    def cited(self) -> str:
        """The sentence with its passage's marker before its final stop."""
        return cited(self.sentence.text, self.passage.marker)


@dataclass
class _Prompt:
    goal: str
    handed: str | None
    passages: list[_Passage]
    asked: list[str] = field(default_factory=list)
    #: The prompt outside its sources: where earlier tasks' answers (CrewAI's context) appear.
    elsewhere: str = ""
    #: The support level the prompt states (None: the prompt states none), and the words the sources lack.
    support: str | None = None
    missing: list[str] = field(default_factory=list)

    def quoted_before(self, sentence: str) -> bool:
        """Whether an earlier task's answer in the context already quoted ``sentence``."""
        probe = sentence[:80]
        return probe in self.elsewhere or json.dumps(probe)[1:-1] in self.elsewhere

    @property
    def focus(self) -> set[str]:
        """The stems of what the task was asked: its hook and the goal."""
        return set(stems(f"{self.handed or ''} {self.goal}"))

    def looked_for(self) -> list[str]:
        """The words the answer says it looked for: the goal's words the sources lack, else the goal's own.

        A chained task's hook may add words of its own (the previous answer's): the goal's come first.
        """
        goal = list(dict.fromkeys(word for word in words(self.goal) if len(word) > 2))
        lacking = [word for word in self.missing if word.casefold() in goal]
        return (lacking or self.missing or goal)[:_NAMED]


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
            passages.append(_Passage(int(header["number"]), header["source"].strip(), sentences(body), position))
    asked: list[str] = []
    at = prompt.find(ASKED_HEADING)
    if at >= 0:
        for line in prompt[at + len(ASKED_HEADING) :].splitlines()[1:]:
            if not line.startswith("- "):
                break
            asked.append(line[2:].strip())
    support = _SUPPORT.search(elsewhere)
    level = support["level"] if support else None
    missing = [word.strip() for word in (support["missing"] or "").split(",") if word.strip()] if support else []
    return _Prompt(goal, handed, passages, asked, elsewhere, level, missing)


def _hook(goal: str, handed: str | None) -> str:
    if handed:
        return handed
    goal = goal.strip()
    if goal.endswith("?"):
        return goal
    return f"{goal.rstrip('.!')}: what is behind it, and what should we do first?"


def _ranked(read: _Prompt) -> list[_Scored]:
    """Every quotable sentence with its relevance, best first (see the weights above)."""
    focus = read.focus
    passages = [passage for passage in read.passages if passage.sentences]
    count = len(passages)
    found = []
    for rank, passage in enumerate(passages):
        heading = len(set(stems(passage.source.split("#", 1)[-1])) & focus)
        for sentence in passage.sentences:
            if sentence.about_itself:
                continue
            score = len(set(stems(sentence.text)) & focus) + _HEADING * heading + _RANK * (count - rank) / count
            if sentence.text.split(" ", 1)[0].lower() in ANAPHORA:
                score -= _LEANING
            if read.quoted_before(sentence.text):
                score -= _QUOTED
            found.append(_Scored(sentence, passage, score))
    return sorted(found, key=lambda s: (-s.score, s.passage.rank, s.sentence.index))


def _instruction(ranked: list[_Scored]) -> _Scored | None:
    """The instruction that best matches the task: relevance, then its form (see the weights above)."""
    candidates = [s for s in ranked if s.sentence.instruction]
    if not candidates:
        return None

    def weight(scored: _Scored) -> float:
        sentence = scored.sentence
        value = scored.score + (_OPENS if sentence.opens_with_instruction else 0.0)
        if sentence.opens_step and sentence.step is not None:
            value += _STEP - _LATER_STEP * (sentence.step - 1)
        return value

    # A sentence leaning on the one before it ("Roll it out ...") reads wrong on its own: the last resort.
    standing = [s for s in candidates if not s.sentence.leans_back] or candidates
    return max(standing, key=lambda s: (weight(s), -s.passage.rank, -s.sentence.index))


def compose(prompt: str, task: str) -> dict[str, str]:
    """The five sections for one task, from its prompt (goal, hook, numbered passages, support, asked)."""
    read = _read(prompt)
    hook = _hook(read.goal, read.handed)
    ranked = _ranked(read)
    if not ranked:
        return _ungrounded(read, task, hook)
    if read.support == "none":
        return _not_covered(read, task, hook, ranked)
    payoff = _instruction(ranked)
    explanations = (
        [s for s in ranked if not s.sentence.instruction and not s.sentence.leans_back]
        or [s for s in ranked if not s.sentence.instruction and s is not payoff]
        or [s for s in ranked if s is not payoff]
    )
    grip = explanations[0] if explanations else ranked[0]
    if payoff is None:
        payoff = next((s for s in ranked if s is not grip), grip)
        payoff_text = (
            "No source here gives a direct instruction for this, so act on the strongest finding first: "
            f"{payoff.cited()}"
        )
    elif read.support == "weak":
        payoff_text = (
            f"Not a settled answer: the closest instruction in the sources is {payoff.cited()} "
            "Check that it applies here before acting on it."
        )
    else:
        payoff_text = f"Recommended next step: {payoff.cited()}"
    grip_text = grip.cited()
    if read.support == "weak":
        lacking = f" (they say nothing on {_listing(read.missing[:_NAMED])})" if read.missing else ""
        grip_text = f"The sources only touch on this{lacking}; the closest, {grip.passage.where}, says: {grip_text}"
    used = {grip.passage.number, payoff.passage.number}
    evidence = _evidence(ranked, grip, payoff, used)
    used |= {scored.passage.number for scored in evidence}
    answered = [grip, payoff, *evidence]
    reinforce_text = " ".join(scored.cited() for scored in evidence)
    if fold(reinforce_text) == fold(grip_text):
        # Nothing but the grip's own sentence to offer as evidence: say how thin it is, not the grip again (a
        # section repeating another fails the contract, 1.4.0).
        reinforce_text = (
            f"This rests on one passage, {grip.passage.where} {grip.passage.marker}; no other retrieved passage "
            "confirms it."
        )
    return {
        "hook": clip(hook, _LIMIT),
        "grip": clip(grip_text, _LIMIT),
        "payoff": clip(payoff_text, _LIMIT),
        "reinforce": clip(reinforce_text, _LIMIT),
        "loop": clip(_loop(read, ranked, payoff, answered, used), _LIMIT),
    }


def _evidence(ranked: list[_Scored], grip: _Scored, payoff: _Scored, used: set[int]) -> list[_Scored]:
    """Evidence: the best sentence of a passage not quoted yet, then the next best of the quoted ones.

    One new passage at most, so that the loop has passages left to point at.
    """
    unused = [s for s in ranked if s.passage.number not in used and not s.sentence.leans_back]
    # The most relevant result is always used: retrieval ranked it first for a reason.
    first = min((scored.passage for scored in ranked), key=lambda passage: passage.rank)
    fresh = next((s for s in unused if s.passage is first), None) or next(iter(unused), None)
    more = next(
        (
            s
            for s in ranked
            if s.passage.number in used and s is not grip and s is not payoff and not s.sentence.leans_back
        ),
        None,
    )
    chosen = [scored for scored in (fresh, more) if scored is not None]
    return chosen or [grip]


def _loop(read: _Prompt, ranked: list[_Scored], payoff: _Scored, answered: list[_Scored], used: set[int]) -> str:
    """What the user needs next: the procedure's next step, the part of the goal left open, a relevant passage.

    Never a question the session asked, never a passage this answer quoted, and never a heading on its own: a
    passage is named with its document, and a question carries the goal's words it is about.
    """
    asked = " ".join([read.handed or "", read.goal, *read.asked]).casefold()
    for question in (
        _next_step(read, payoff),
        _open_part(read, ranked, answered, used),
        *_further(read, ranked, answered, used),
    ):
        if question and question.casefold() not in asked:
            return question
    return f"The knowledge base has nothing new on this beyond the sources above. {FALLBACK_HOOK}"


def _next_step(read: _Prompt, payoff: _Scored) -> str | None:
    """The step after the recommended one, when the recommendation is a procedure's step and the next is here."""
    step = payoff.sentence.step if payoff.sentence.opens_step else None
    following = payoff.passage.step(step + 1) if step is not None else None
    if following is None or read.quoted_before(following.text):
        return None
    text = clip(following.text, 300)
    # A list's step often has no full stop; the loop is a sentence (one stopping on a word reads as a cut one).
    text = text if text[-1:] in ".!?…:;)]`\"'" else f"{text}."
    return f"Next, step {step + 1} of {payoff.passage.title}: {text}"  # type: ignore[operator]


def _open_part(read: _Prompt, ranked: list[_Scored], answered: list[_Scored], used: set[int]) -> str | None:
    """A question on the goal's words this answer did not cover, about the passage that covers most of them."""
    covered = set(stems(" ".join(scored.text for scored in answered)))
    goal = _goal_words(read.goal)
    open_part = {stem: word for stem, word in goal.items() if stem not in covered}
    subject = _subject(read.focus, covered)
    best: tuple[int, _Scored] | None = None
    for scored in ranked:
        if scored.passage.number in used:
            continue
        have = set(stems(f"{scored.passage.title} {scored.text}"))
        found = len(have & open_part.keys())
        if found and have & subject and (best is None or found > best[0]):
            best = (found, scored)
    if best is None:
        return None
    passage = best[1].passage
    have = set(stems(f"{passage.title} {best[1].text}"))
    named = [word for stem, word in open_part.items() if stem in have]
    return f"What does {passage.where} say about {_listing(named[:_NAMED])}?"


def _further(read: _Prompt, ranked: list[_Scored], answered: list[_Scored], used: set[int]) -> list[str]:
    """Questions about the relevant passages not used here, best first, each carrying the goal's words it has."""
    goal = _goal_words(read.goal)
    subject = _subject(read.focus, set(stems(" ".join(scored.text for scored in answered))))
    best: dict[int, _Scored] = {}
    for scored in ranked:
        best.setdefault(scored.passage.number, scored)
    found = []
    for scored in sorted(best.values(), key=lambda s: (-s.score, s.passage.rank)):
        passage = scored.passage
        if passage.number in used:
            continue
        have = set(stems(" ".join([passage.source.split("#", 1)[-1], *(s.text for s in passage.sentences)])))
        shared = [word for stem, word in goal.items() if stem in have]
        if not have & subject:
            continue  # about something else: following it would leave the subject
        if any(sentence.opens_step for sentence in passage.sentences):
            found.append(f"Want the steps from {passage.where}?")
        else:
            on = f" on {_listing(shared[:_NAMED])}" if shared else ""
            found.append(f"What more does {passage.where} say{on}?")
    return found


def _subject(focus: set[str], covered: set[str]) -> set[str]:
    """The terms of the goal and hook the answer is about: those its quoted sentences cover (all when none is).

    A passage for the loop must share one: a passage sharing only a word the answer left open ("empty" in
    "search returns empty results", found in "the ring rejoined empty") is about something else.
    """
    return focus & covered or focus


def _goal_words(goal: str) -> dict[str, str]:
    """The goal's content words by stem (the first form of each), in order."""
    found: dict[str, str] = {}
    for word in words(goal):
        if len(word) > 2:
            for stem in stems(word):
                found.setdefault(stem, word)
    return found


def _listing(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def _not_covered(read: _Prompt, task: str, hook: str, ranked: list[_Scored]) -> dict[str, str]:
    """The answer when the sources do not support the task: it says so, recommends nothing, asks for documents."""
    looked = _listing(read.looked_for())
    nearest = min((scored.passage for scored in ranked), key=lambda passage: passage.rank)
    count = len([passage for passage in read.passages if passage.sentences])
    retrieved = f"none of the {count} passages" if count > 1 else "the one passage"
    return {
        "hook": clip(hook, _LIMIT),
        "grip": clip(
            f"The knowledge base does not cover this: {retrieved} retrieved for the {task} step is about {looked}.",
            _LIMIT,
        ),
        "payoff": clip(
            "No recommendation: the retrieved sources are about other things, and advice drawn from them would be "
            "a guess presented as an answer.",
            _LIMIT,
        ),
        "reinforce": clip(
            f"The nearest the knowledge base comes is {nearest.where}, which does not address it.", _LIMIT
        ),
        "loop": clip(
            _not_the_hook(
                hook,
                f"Which documents on {looked} should be ingested (marsrag ingest PATH) so that the knowledge base "
                "can answer this?",
                f"Once documents on {looked} are ingested (marsrag ingest PATH), should the {task} step run again?",
            ),
            _LIMIT,
        ),
    }


def _ungrounded(read: _Prompt, task: str, hook: str) -> dict[str, str]:
    """The answer when nothing was retrieved: no sources matched, nothing to recommend from, what to ingest."""
    looked = _listing(read.looked_for())
    return {
        "hook": clip(hook, _LIMIT),
        "grip": clip(
            f"No sources in the knowledge base matched this {task} step; it holds nothing on {looked}.", _LIMIT
        ),
        "payoff": clip(
            "No recommendation: there is nothing in the knowledge base to ground one, and a guess would read as "
            "advice.",
            _LIMIT,
        ),
        "reinforce": "No sources were found to cite; run marsrag ingest PATH to ground the answers.",
        "loop": clip(
            _not_the_hook(
                hook,
                f"Which documents on {looked} should be ingested so that the {task} step can be answered from them?",
                f"Once documents on {looked} are ingested (marsrag ingest PATH), should the {task} step run again?",
            ),
            _LIMIT,
        ),
    }


def _not_the_hook(hook: str, question: str, otherwise: str) -> str:
    """``question``, unless the hook handed over is that very question (the earlier task could not answer either):
    then ``otherwise``, since a section repeating another says nothing new (contract 1.4.0)."""
    return otherwise if fold(question) == fold(hook) else question
