"""The end of the model's turn: what a model wrote after its first end-of-turn token is not its answer.

A server that does not stop on a model's end-of-turn token (a wrong stop list, ``ignore_eos``, a raw completion
endpoint) lets the model write on: another user turn, another answer, the prompt again. The answer is what came
before the first end-of-turn token; what follows is neither content nor a later candidate. The tokens are the
chat templates' own (:data:`marsrag.contract.catalog.CHAT_TEMPLATES`): each template's end-of-turn tokens, and
its turn-start tokens, which after content mean the model went on as another role.

A server that decoded the special tokens away leaves a turn start as its role header alone on a line (``user``,
``assistant``): after content, that starts a turn too; so does a user's turn as plain-text prompt formats write it
(``User:``, ``Human:``, Alpaca's ``### Instruction:``) at a line start.

Two places a token does not end the turn: before any content (a leaked template prefix,
``<|im_start|>assistant``, or a stray end token the model began with), and inside a JSON string (a token glued
into a value, which the field rules remove, while the document goes on). A template that uses a token for
another purpose says so: gpt-oss (harmony) ends each *message* with ``<|end|>``, which Phi-3 uses to end a turn,
so in a harmony answer (one that holds ``<|message|>``) ``<|end|>`` ends nothing.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Final

from marsrag.contract._label_names import LABEL_FIELDS, LABEL_HINT
from marsrag.contract._tokens import may_have_tokens, strip_special_tokens
from marsrag.contract._trie import trie_pattern
from marsrag.contract.catalog import CHAT_TEMPLATES

_HARMONY_MESSAGE: Final = "<|message|>"


# A turn start a server printed without its special token (it decoded special tokens away): the role header alone
# on its line, as ChatML's "<|im_start|>user", Gemma's "<start_of_turn>user", Llama 3's
# "<|start_header_id|>user<|end_header_id|>" or Phi-3's "<|user|>" read once the tokens are gone. Looked for only
# when one of the line starts is in the text (substring tests), so the token pattern keeps its literal scan.
_BARE_ROLE: Final = re.compile(r"\n[ \t]*(?:user|assistant|system|model)[ \t]*(?=\r?\n)")


# The answering role's name as transcripts write it before the answer: Vicuna's and FastChat's "ASSISTANT:", the
# legacy Anthropic prompt's "Assistant:", LangChain's "AI:", SmolVLM's and Idefics' "Assistant:", InternLM's
# "<|Bot|>:" once its token is decoded, ShareGPT's "gpt". Only at the very start of the answer, with the answer
# on the same line: a header the server left in, not a label.
_ROLE_PREFIX: Final = re.compile(r"[ \t\n]*(?:#{1,4}[ \t]*)?(?:assistant|ai|bot|gpt)[ \t]*:[ \t]*(?=\S)", re.IGNORECASE)


def strip_role_prefix(text: str) -> str:
    """``text`` without the answering role's name it starts with (``Assistant: HOOK - ...``)."""
    match = _ROLE_PREFIX.match(text)
    return text[match.end() :] if match is not None else text


# A user's turn as plain-text prompt formats write it, at a line start: Vicuna's and FastChat's "USER:", the legacy
# Anthropic prompt's "Human:", Falcon's and most transcripts' "User:" (in brackets too, as GPT4All's "<UserID>:"),
# Alpaca's "### Instruction:" and "### Input:" headings (with the turn's text on the line, as Jais writes
# "### Input: [|Human|] ..."). After content, the model went on to write the user's next
# turn.
_USER_TURN_STARTS: Final = ("\nU", "\nu", "\nH", "\nh", "\n#", "\n<", "\n[")
_USER_TURN: Final = re.compile(
    r"\n(?:(?:#{1,4}[ \t]*)?[<\[]?(?:user|human)\w{0,8}[>\]]?[ \t]*:(?=\s)"
    r"|#{1,4}[ \t]*(?:instruction|input)\b[ \t]*:?)",
    re.IGNORECASE,
)


def _may_have_role_line(text: str) -> bool:
    # Four substring searches written out: a generator over them costs more than the searches.
    return "\nuser" in text or "\nassistant" in text or "\nsystem" in text or "\nmodel" in text


def _may_have_user_turn(text: str) -> bool:
    return ":" in text and any(start in text for start in _USER_TURN_STARTS)


def may_end_early(text: str) -> bool:
    """A cheap test: False means the text holds no turn boundary (no token, no role line)."""
    return may_have_tokens(text) or _may_have_role_line(text) or _may_have_user_turn(text)


# The roles a turn start names: the prompt's side, and the model's.
_PROMPT_ROLES: Final = frozenset({"system", "user", "developer", "human", "tool", "ipython"})
_ANSWERING_ROLES: Final = frozenset({"assistant", "model", "bot", "gpt", "ai", "chatbot"})


# A cue: the last line of a prompt that awaits its completion ("Answer:", "### Response:", "ASSISTANT:", "### 응답:"),
# a short name (four words at most, no counter: a console's "In [13]:" awaits the next command, not this answer)
# and a colon, alone on its line, nothing after it.
_CUE: Final = re.compile(r"\n[ \t]*(?:#{1,6}[ \t]*)?(?P<cue>[^\W\d_][^\n:：.!?\[\]()\d]{0,38})[:：][ \t]*\Z")
_CUE_MAX_WORDS: Final = 4


def awaits_completion(text: str) -> bool:
    """Whether ``text`` is a prompt awaiting its completion: its last line a cue for the answer (``Answer:``,
    ``### Response:``, ``ASSISTANT:``) with nothing after it.

    An echoed prompt ends so when the model wrote nothing (a completion endpoint's echo, an eval harness's record of
    what it sent): what comes before the cue is the prompt, its format and examples included, and the answer, which
    was to follow, is missing. A label with nothing after it (``Loop:``) is an answer's empty field, no cue.
    """
    stripped = "\n" + text.rstrip()
    if stripped[-1] not in (":", "："):
        return False
    cue = _CUE.search(stripped)
    if cue is None or len(cue["cue"].split()) > _CUE_MAX_WORDS:
        return False
    return cue["cue"].strip().casefold() not in LABEL_FIELDS and bool(stripped[: cue.start()].strip())


@cache
def _turn_start() -> re.Pattern[str]:
    """A turn-start token and the role word after it (``<|start_of_role|>system``, ``<|im_start|>user``)."""
    tokens = {token for template in CHAT_TEMPLATES for token in template.starts}
    return re.compile(rf"(?:{trie_pattern(tokens)})[ \t]*(?P<role>[A-Za-z]\w{{0,15}})")


def _answering_turn(text: str) -> str:
    """The model's last turn of a whole transcript; ``text`` itself when it is none.

    A text that opens with a turn of the prompt's side (``<|start_of_role|>system``, ``<|im_start|>user``) is a
    transcript the server printed whole: the answer is the last turn the model wrote, and a transcript with no such
    turn holds no answer (the prompt's examples and formats are not one).
    """
    turns = [match for match in _turn_start().finditer(text) if match["role"].casefold() in _ROLES]
    if not turns or turns[0]["role"].casefold() not in _PROMPT_ROLES:
        return text
    answering = [match for match in turns if match["role"].casefold() in _ANSWERING_ROLES]
    if strip_special_tokens(text[: turns[0].start()]).strip() and not (
        answering and _asked_here(text, turns[0].start(), answering[-1].start())
    ):
        # Content before the first turn: an answer that went on into a prompt's turn, unless it is a runtime's log
        # lines before the prompt it printed whole.
        return text
    return text[answering[-1].start() :] if answering else ""


_ROLES: Final = _PROMPT_ROLES | _ANSWERING_ROLES


@cache
def _boundary() -> re.Pattern[str]:
    tokens = {token for template in CHAT_TEMPLATES for token in (*template.ends, *template.starts)}
    return re.compile(trie_pattern(tokens))


@cache
def _message_ends() -> frozenset[str]:
    """Tokens that end a message, not a turn, in a harmony answer."""
    return frozenset(token for template in CHAT_TEMPLATES if template.harmony for token in template.message_ends)


def end_of_turn(text: str) -> str:
    """``text`` up to its first end-of-turn token (or turn start) after content; the whole text when none."""
    if may_have_tokens(text):
        text = _cut(_answering_turn(text), _boundary())
    if _may_have_role_line(text):
        text = _cut(text, _BARE_ROLE)
    if _may_have_user_turn(text):
        text = _cut(_last_heading_section(_answering_heading_section(_answering_inline_turn(text))), _USER_TURN)
    return text


# A turn written with its role's name before it on its line ("User: ...", "Assistant: ..."), as chat consoles print
# them (ChatRWKV's, a REPL's).
_INLINE_ROLE: Final = re.compile(
    r"(?im)^[ \t]*(?P<role>user|human|assistant|model|bot|ai)[ \t]*:[ \t]*(?P<content>\S)?"
)


def _asked_here(text: str, first: int, answering: int) -> bool:
    """Whether the turns from ``first`` to the model's turn at ``answering`` hold this answer's prompt: they ask for
    the sections (they name them), and nothing before them does (an answer there went on into a transcript; a
    console's banner or a runtime's log lines name no field)."""
    return LABEL_HINT.search(text, 0, first) is None and LABEL_HINT.search(text, first, answering) is not None


def _answering_inline_turn(text: str) -> str:
    """The model's last turn of a console transcript whose turns start with their role's name on the line; ``text``
    itself when it is none.

    When the first turn is the prompt's side, asking for the sections (it names them), and no answer came before it
    (a console's banner may: it names no field), the answer is the last turn of the model's side, up to the next
    turn.
    """
    turns = list(_INLINE_ROLE.finditer(text))
    if len(turns) < 2 or turns[0]["role"].casefold() not in _PROMPT_ROLES:
        return text
    answering = [index for index, match in enumerate(turns) if match["role"].casefold() in _ANSWERING_ROLES]
    if not answering or turns[answering[-1]]["content"] is None:
        return text
    last = answering[-1]
    if not _asked_here(text, turns[0].start(), turns[last].start()):
        return text
    end = turns[last + 1].start() if last + 1 < len(turns) else len(text)
    return text[turns[last].start("content") : end]


# A role's heading alone on its line, as plain transcripts print them ("System message:", "User:", "Response:",
# "**Assistant:**", "### Model:").
_ROLE_HEADING: Final = re.compile(
    r"(?im)^[ \t]*(?:#{1,4}[ \t]*)?(?:\*\*)?(?P<role>system|user|human|developer|instruction|input|assistant|model|"
    r"response|bot|ai)(?:[ \t]+(?:message|prompt|turn))?(?:\*\*)?[ \t]*[:：](?:\*\*)?[ \t]*$"
)
_PROMPT_HEADINGS: Final = frozenset({"system", "user", "human", "developer", "instruction", "input"})


def _answering_heading_section(text: str) -> str:
    """The model's last turn of a plain transcript printed with role headings; ``text`` itself when it is none.

    A framework's printout of a call (DSPy's ``inspect_history``, a playground's export) heads each message with its
    role alone on a line (``System message:``, ``User message:``, ``Response:``). When the first heading is the
    prompt's side, what the model wrote is under the last heading of its side, up to the next heading.
    """
    headings = list(_ROLE_HEADING.finditer(text))
    if len(headings) < 2 or headings[0]["role"].casefold() not in _PROMPT_HEADINGS:
        return text
    if text[: headings[0].start()].strip().count("\n") > 0:
        return text  # more than a stamp before the first heading: an answer that goes on into a transcript
    answering = [index for index, match in enumerate(headings) if match["role"].casefold() not in _PROMPT_HEADINGS]
    if not answering:
        return text
    last = answering[-1]
    end = headings[last + 1].start() if last + 1 < len(headings) else len(text)
    return text[headings[last].end() : end]


# A plain-text transcript's opening: the prompt's side first ("### System:", "### Instruction:", "User:").
_PROMPT_OPENING: Final = re.compile(
    r"\s*(?:#{1,4}[ \t]*)?(?:system|instruction|input|user|human)[ \t]*:", re.IGNORECASE
)
# A prompt format's section heading alone on its line ("### Response:", "### Antwort:").
_SECTION_HEADING: Final = re.compile(r"(?m)^#{1,4}[ \t]*[^\W\d_][^\n#:：]{0,30}[:：][ \t]*$")


def _last_heading_section(text: str) -> str:
    """The body of the last section heading of a plain-text transcript that opens with the prompt's side.

    Alpaca-style prompt formats (Vigogne's, Alpaca's, Orca's) write each part under a heading (``### System:``,
    ``### Instruction:``, ``### Response:``): when the text opens with the prompt's part, it is the whole
    transcript, and the model's answer is under the last heading, in whatever language it is named.
    """
    if _PROMPT_OPENING.match(text) is None:
        return text
    headings = list(_SECTION_HEADING.finditer(text))
    return text[headings[-1].end() :] if len(headings) > 1 else text


def _cut(text: str, boundary: re.Pattern[str]) -> str:
    """``text`` up to the first match of ``boundary`` after content, outside a JSON string."""
    harmony = _HARMONY_MESSAGE in text
    content = False  # whether anything but tokens was written before the current token
    strings = _JsonStrings(text)
    previous = 0
    for match in boundary.finditer(text):
        if harmony and match.group() in _message_ends():
            continue
        # Each stretch between tokens is looked at once, so a text full of tokens costs one pass.
        content = content or bool(strip_special_tokens(text[previous : match.start()]).strip())
        previous = match.end()
        if not content:
            continue  # nothing written yet: a template prefix, or a stray token the model began with
        if strings.inside_at(match.start()):
            continue  # glued into a value: the document goes on
        if boundary is _BARE_ROLE and text[: match.start()].rstrip().endswith(">"):
            continue  # the role header of the token before it, printed on its own line: that token decides
        return text[: match.start()]
    return text


class _JsonStrings:
    """Whether a position is inside a double-quoted string opened after the text's first ``{``, scanning forward
    once however many positions are asked about (in increasing order)."""

    __slots__ = ("text", "pos", "inside")

    def __init__(self, text: str) -> None:
        self.text = text
        first = text.find("{")
        self.pos = first if first >= 0 else len(text)
        self.inside = False

    def inside_at(self, index: int) -> bool:
        text = self.text
        while self.pos < index:
            quote = text.find('"', self.pos, index)
            if quote < 0:
                self.pos = index
                break
            first = quote
            while first > 0 and text[first - 1] == "\\":
                first -= 1
            if (quote - first) % 2 == 0:  # an even run of backslashes escapes nothing
                self.inside = not self.inside
            self.pos = quote + 1
        return self.inside
