"""Reasoning blocks: what a model thinks before it answers, which is never part of the answer.

Reasoning models write their thinking into the answer text when the server does not split it off:

- tags: ``<think>``, ``<thinking>``, ``<thought>``, ``<reasoning>``, ``<reflection>``, ``<scratchpad>`` (any
  case, attributes allowed, a namespace such as MiniMax's ``<mm:think>``), Magistral's ``[THINK]``, Kimi's
  ``◁think▷`` and ``<|begin_of_thought|>``, each with its closing mark;
- Ollama's command line: a ``Thinking...`` line, then the thinking, then ``...done thinking.``;
- gpt-oss (harmony): ``<|channel|>analysis<|message|>...`` (the ``analysis`` channel is thinking, the others
  are the answer), and the same with the special tokens decoded to nothing (``analysis...assistantfinal...``).

One pairing rule covers every mark: a closed block is removed; a closing mark with no opening removes all text
before it (the chat template put the opening in the prompt, as DeepSeek-R1 and Qwen3 do); an opening with no
closing removes all text after it (the token budget ran out while thinking, so whatever draft is inside is no
answer), unless the block a format puts its answer in (``<answer>``, ``<Output>``) opens at a line start after
it. An opening counts only at the start of a line, so prose that mentions ``<think>`` stays prose.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from marsrag.contract._trie import trie_pattern

#: The names reasoning goes by, as a tag (``<think>``) and as a key of a response's JSON (``reasoning_content``,
#: ``{"type": "thinking"}``, ``"thought": true``).
REASONING_NAMES: Final = ("think", "thinking", "thought", "thoughts", "reasoning", "reflection", "scratchpad")
_NAME: Final = trie_pattern(variant for name in REASONING_NAMES for variant in (name, name.title(), name.upper()))
# One pattern per opening character and none ignoring case, so each is searched for at C speed (a text full
# of "<hook>" tags costs one fast scan, not a match attempt at every position).
_ANGLE_MARK: Final = re.compile(
    rf"<(?:(?P<close>/?)(?:{_NAME}|[a-z]{{1,8}}:{_NAME})(?:[ \t][^<>\n]{{0,80}})?>"
    r"|\|(?P<edge>begin|end)_of_thought\|>)"
)
_BRACKET_MARK: Final = re.compile(r"\[(?P<close>/?)(?:THINK|THINKING|REASONING)\]")
_KIMI_MARK: Final = re.compile(r"◁(?P<close>/?)think▷")
_OLLAMA_MARK: Final = re.compile(r"^[ \t]*(?:(?P<open>Thinking\.\.\.)|\.\.\.done thinking\.)[ \t]*$", re.MULTILINE)
# A harmony message: its header (channel name, recipient, content type) up to <|message|>, then its body.
_HARMONY_CHANNEL: Final = "<|channel|>"
# A streamer that prints each special token on its own line puts white space around the channel's name.
_HARMONY_HEADER: Final = re.compile(r"\s*(?P<channel>[^<\s]*)[^<]{0,200}?(?:<\|constrain\|>[^<]{0,40})?<\|message\|>")
_HARMONY_END: Final = re.compile(r"<\|(?:end|return|call|start|channel)\|>")
_HARMONY_PLAIN_FINAL: Final = "assistantfinal"
# The block a format puts its answer in after the thinking: Hunyuan-A13B's and Open-AutoGLM's <answer>, ERNIE-4.5's
# <response>, Marco-o1's <Output>, OpenThinker's <|begin_of_solution|>. At a line start, it ends a thinking block
# left open: the model stopped thinking when it opened its answer, whatever closing it forgot.
_ANSWER_OPEN: Final = re.compile(
    r"(?m)^[ \t]*(?:<(?:answer|Answer|ANSWER|response|Response|output|Output|OUTPUT)(?:[ \t][^<>\n]{0,80})?>"
    r"|<\|begin_of_solution\|>)"
)


class Answer(NamedTuple):
    """The text with reasoning removed, and the kind of reasoning found (None when there was none)."""

    text: str
    reasoning: str | None


def may_have_reasoning(text: str) -> bool:
    """A cheap test: False means :func:`strip_reasoning` would find nothing."""
    # One-character tests are memchr scans; the two word marks only ever open an output.
    head = text[:40].lstrip()
    return "<" in text or "[" in text or "◁" in text or head.startswith(("Thinking...", "analysis"))


def strip_reasoning(text: str) -> Answer:
    """Remove every reasoning block from ``text`` (see the module docstring for the forms and the rule)."""
    kind: str | None = None
    if "|" in text and _HARMONY_CHANNEL in text:
        text, found = _harmony(text)
        kind = "analysis channel" if found else None
    elif text.lstrip().startswith("analysis") and _HARMONY_PLAIN_FINAL in text:
        # The harmony tokens were decoded to nothing: "analysis<thinking>assistantfinal<answer>".
        text, kind = text[text.rindex(_HARMONY_PLAIN_FINAL) + len(_HARMONY_PLAIN_FINAL) :], "analysis channel"
    quick = _leading_block(text)
    if quick is not None:
        return quick
    # (start, end, closes, the mark as written) for every mark, in text order; an answer's opening closes every
    # block still open (closes is None).
    marks: list[tuple[int, int, bool | None, str]] = []
    if "<" in text:
        for m in _ANGLE_MARK.finditer(text):
            edge = m["edge"]
            marks.append((m.start(), m.end(), m["close"] == "/" if edge is None else edge == "end", m.group()))
    for pattern, present in ((_BRACKET_MARK, "["), (_KIMI_MARK, "◁")):
        if present in text:
            marks += [(m.start(), m.end(), m["close"] == "/", m.group()) for m in pattern.finditer(text)]
    if text.lstrip().startswith("Thinking..."):
        marks += [(m.start(), m.end(), m["open"] is None, m.group().strip()) for m in _OLLAMA_MARK.finditer(text)]
    if not marks:
        return Answer(text, kind)
    if "<" in text:
        marks += [(m.start(), m.start(), None, m.group()) for m in _ANSWER_OPEN.finditer(text)]
    marks.sort(key=lambda mark: mark[:2])
    kept: list[str] = []
    depth = pos = 0
    for start, end, close, mark in marks:
        if close is None:
            if depth:
                depth, pos = 0, start  # the answer opens: the thinking left open ends here
        elif close:
            if depth == 0:
                kept.clear()  # the opening was in the prompt: everything so far was thinking
            else:
                depth -= 1
            pos = end
            kind = kind or mark
        elif _at_line_start(text, start):
            if depth == 0:
                kept.append(text[pos:start])
            depth += 1
            pos = end
            kind = kind or mark
    if depth == 0:
        kept.append(text[pos:])
    return Answer("".join(kept), kind)


def _leading_block(text: str) -> Answer | None:
    """The common case at a glance: one tag block opens the text, and no other mark is before or after its end.

    None means the general pairing must decide (nesting, other marks, a closing tag in another case).
    """
    first = len(text) - len(text.lstrip())
    if text[first : first + 1] != "<":
        return None
    opening = _ANGLE_MARK.match(text, first)
    if opening is None or opening["close"] or opening["edge"] is not None:
        return None
    name = opening.group()[1:-1].split()[0]
    closing = text.find(f"</{name}>", opening.end())
    if closing < 0:
        return None
    inside, rest = text[opening.end() : closing], text[closing + len(name) + 3 :]
    if any(char in part for part in (inside, rest) for char in "<[◁"):
        return None
    return Answer(rest, opening.group())


def _at_line_start(text: str, index: int) -> bool:
    line_start = text.rfind("\n", 0, index) + 1
    return not text[line_start:index].strip()


def _harmony(text: str) -> tuple[str, bool]:
    """The bodies of the non-analysis channels of a harmony answer, and whether an analysis channel was seen."""
    parts = text.split(_HARMONY_CHANNEL)
    kept: list[str] = [parts[0]]
    thought = False
    for part in parts[1:]:
        header = _HARMONY_HEADER.match(part)
        if header is None:
            kept.append(part)  # a malformed header: keep the text, the leaked tokens are removed later
            continue
        body = part[header.end() :]
        end = _HARMONY_END.search(body)
        if header["channel"].casefold() == "analysis":
            thought = True
            kept.append(body[end.end() :] if end is not None else "")
        else:
            kept.append(body)
    # Each message starts on a line of its own: what a removed header sat between is never one line.
    return "\n".join(kept), thought
