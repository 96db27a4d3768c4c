"""Passages as the offline composer reads them: plain sentences, each knowing whether it is a procedure step
and whether it is an instruction.

A passage arrives as Markdown (:mod:`marsrag.chain.briefing`). :func:`plain` removes the markup; a numbered list
item keeps its number as the sentence's :attr:`Sentence.step`, because a runbook's procedure is the answer a
"how do we ..." goal wants, in its order. Whether a sentence instructs is decided by grammar, not by a list of
verbs: an English instruction opens with a verb in its base form ("Generate a new key", "Never retry ..."),
possibly after a condition ("If it is still overloaded, shed ..."), or says what one should or must do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from marsrag.tokens import readings

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z0-9\"'(])")
# A full stop that ends an abbreviation, not a sentence: the piece after it joins the one before.
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no|fig|ca)|\b[A-Za-z])\.$", re.IGNORECASE)
# Markdown a passage may hold: stripped so that no markup reaches an answer.
_HEADING_MARK = re.compile(r"^\s*#{1,6}\s+")
_STEP_MARK = re.compile(r"^\s*(\d{1,3})[.)]\s+")
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,3}[.)]\s+)")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")

# What one should do, said as a statement rather than an instruction.
_MODAL = re.compile(r"\b(should|must|recommend(?:ed|s)?|needs? to|make sure|the rule is|is required)\b", re.IGNORECASE)
# An instruction may follow a label or a first clause: "AI-1 (Platform): add ...", "...; treat it like a restart".
_CLAUSE = re.compile(r"[:;]\s+")
# The subordinating conjunctions that open a condition before an instruction ("If ..., shed ...").
_CONDITIONS = frozenset("if when once after before until unless while whenever".split())
# "be" as a finite verb ("is", "were") after the first word makes that word part of a subject ("Black rotten
# patches are ...") unless a clause opens in between ("Check that it is ..."): these open one.
_BE = "be"
_NON_FINITE_BE = frozenset({"be", "been", "being"})
_CLAUSE_OPENERS = frozenset("that which who whom whose where because so".split())
# A sentence about the document itself ("Use this runbook to ...", "It exists because ...") says nothing about
# the problem: never quoted as an insight or a recommendation.
_ABOUT_ITSELF = re.compile(
    r"\b(?:this|the present) (?:runbook|document|page|guide|note|section|procedure|playbook)\b|^it exists\b",
    re.IGNORECASE,
)
# A sentence opening with one of these leans on the one before it: weak on its own.
ANAPHORA = frozenset("it this that they these those he she its their such".split())
_QUOTE_LIMIT = 300


@dataclass(frozen=True)
class Line:
    """A line of plain text: a paragraph, a list item (with its number when the list is numbered) or a heading."""

    text: str
    step: int | None = None
    heading: bool = False


def lines(text: str) -> list[Line]:
    """Markdown text as plain lines: no heading marks, bullets, emphasis, code ticks, links or table rules.

    A list item or a table row becomes a line of its own (with a full stop when it has none); a numbered item
    keeps its number; the lines of a paragraph join.
    """
    found: list[Line] = []
    for raw in text.splitlines():
        if _TABLE_RULE.match(raw):
            continue
        heading = _HEADING_MARK.match(raw) is not None
        numbered = None if heading else _STEP_MARK.match(raw)
        item = not heading and (_LINE_MARK.match(raw) is not None or raw.lstrip().startswith("|"))
        line = _LINE_MARK.sub("", raw)
        line = _LINK.sub(r"\1", line)
        line = _EMPHASIS.sub("", line)
        if "|" in line:
            line = ", ".join(cell.strip() for cell in line.strip().strip("|").split("|") if cell.strip())
        line = " ".join(line.split())
        if not line:
            found.append(Line(""))
            continue
        if item and line[-1] not in ".!?:;":
            line += "."
        previous = found[-1] if found else None
        if item or heading or previous is None or not previous.text or previous.heading:
            found.append(Line(line, int(numbered.group(1)) if numbered else None, heading))
        else:
            found[-1] = Line(f"{previous.text} {line}", previous.step, False)
    return found


def plain(text: str) -> str:
    """Markdown text as plain prose (see :func:`lines`), one line per paragraph, item or heading."""
    return "\n".join(line.text for line in lines(text))


def is_instruction(text: str) -> bool:
    """Whether a sentence tells the reader what to do.

    It does when it, or a clause after a colon or semicolon, opens with a verb in its base form (after
    adverbs such as "never" or "first", and after a condition such as "If it is overloaded,"), not followed by
    a form of "be" (which makes the first word a noun: "Record is kept"); or when it says what one should do.
    """
    for clause in _clauses(text):
        if _opens_with_base_verb(clause):
            return True
    return _MODAL.search(text) is not None


def _clauses(text: str) -> list[str]:
    """The clauses that may instruct: those after a colon or semicolon, and the first unless a colon follows it
    (then it is a label, as "Slow provider plus retries:" or "AI-1 (Platform):" are)."""
    found = _CLAUSE.split(text)
    first = _CLAUSE.search(text)
    if first is not None and first.group().startswith(":"):
        return found[1:]
    return found


def _opens_with_base_verb(clause: str) -> bool:
    found = [match.group().casefold() for match in _WORD.finditer(clause[:160])]
    if found and found[0] in _CONDITIONS and "," in clause:
        found = [match.group().casefold() for match in _WORD.finditer(clause.split(",", 1)[1][:120])]
    # Adverbs may come first: "Never retry ...", "First drain ...", "Always deploy the full chain".
    while found and _adverb(found[0]):
        found = found[1:]
    if not found or not _base_verb(found[0]):
        return False
    # A word that is only a verb ("Verify", "Generate") instructs whatever follows; one that can be a noun or
    # an adjective too ("Record", "Black") does unless a finite "be" follows it in the same clause.
    if set(readings(found[0])) <= {"VERB"}:
        return True
    head = clause.split(",", 1)[0]
    for word in (match.group().casefold() for match in _WORD.finditer(head[:160])):
        if word in _CLAUSE_OPENERS:
            break
        if word not in _NON_FINITE_BE and _BE in readings(word).get("VERB", ()) + readings(word).get("AUX", ()):
            return False
    return True


def _adverb(word: str) -> bool:
    forms = readings(word)
    return "ADV" in forms and "VERB" not in forms


def _base_verb(word: str) -> bool:
    """A verb in its dictionary form: "generate", "roll", "pre-warm" (its last part)."""
    if "VERB" in readings(word):
        return word in readings(word)["VERB"]
    head, _, last = word.rpartition("-")
    return bool(head) and last in readings(last).get("VERB", ())


@dataclass(frozen=True)
class Sentence:
    """A sentence of a passage: its text, its place, and the step it belongs to when it is a procedure's."""

    text: str
    index: int
    step: int | None = None
    #: Whether the sentence opens its step (a step's later sentences explain it).
    opens_step: bool = False

    @property
    def instruction(self) -> bool:
        """Whether it tells the reader what to do (:func:`is_instruction`)."""
        return is_instruction(self.text)

    @property
    def opens_with_instruction(self) -> bool:
        """Whether the sentence itself is the instruction ("Cut retries ..."), not a later clause or a "should"."""
        first = _CLAUSE.search(self.text)
        if first is not None and first.group().startswith(":"):
            return False  # what opens it is a label
        return _opens_with_base_verb(self.text if first is None else self.text[: first.start()])

    @property
    def leans_back(self) -> bool:
        """Whether the sentence needs the one before it: it opens on a pronoun ("It ...", "This ...") or its
        instruction's object is one ("Roll it out ...")."""
        found = [word.lower().strip(",.:;\"'") for word in self.text.split(" ", 3)[:3]]
        return found[0] in ANAPHORA or (_base_verb(found[0]) and bool(ANAPHORA.intersection(found[1:])))

    @property
    def about_itself(self) -> bool:
        """Whether it speaks of the document rather than the problem ("Use this runbook to ...")."""
        return _ABOUT_ITSELF.search(self.text) is not None


def sentences(text: str) -> tuple[Sentence, ...]:
    """The quotable sentences of a passage, in order: no headings, labels or fragments."""
    found: list[Sentence] = []
    for line in lines(text):
        if line.heading or not line.text:
            continue
        for position, piece in enumerate(_split(line.text)):
            # A heading-like fragment or a label ends with a colon: no sentence to quote.
            if len(piece) > 20 and piece[-1] != ":":
                found.append(Sentence(piece, len(found), line.step, line.step is not None and position == 0))
    return tuple(found)


def _split(paragraph: str) -> Iterator[str]:
    pieces: list[str] = []
    for piece in _SENTENCE_END.split(paragraph.strip()):
        if pieces and _ABBREVIATION.search(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    yield from (piece.strip() for piece in pieces)


def clip(text: str, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut at a word boundary to at most ``limit`` characters (with "…")."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def cited(text: str, marker: str) -> str:
    """A quoted sentence with its passage's marker before its final stop (``... database [2].``)."""
    text = clip(text, _QUOTE_LIMIT)
    if text[-1:] in ".!?":
        return f"{text[:-1]} {marker}{text[-1]}"
    return f"{text} {marker}."
