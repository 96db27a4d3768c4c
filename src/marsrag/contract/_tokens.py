"""Leaked special tokens: control tokens a server failed to strip, removed wherever they are glued.

A token is recognised by its shape, not by a list of models: anything written ``<|name|>`` (Llama 3's
``<|eot_id|>``, ChatML's ``<|im_end|>``, Phi's ``<|end|>``, DeepSeek's full-width ``<｜end▁of▁sentence｜>``),
the angle-bracket end and start tokens (``</s>``, ``<s>``, ``<eos>``, ``<eot>``, ``<pad>``, ``<unk>``,
Gemma's ``<end_of_turn>``/``<start_of_turn>``, ``<end_of_utterance>``, InternLM's ``<eoa>``), Llama 2's
``<<SYS>>``, and the square-bracket tokens, in capitals (``[EOS]``, ``[/INST]``, ``[PAD]``, Mistral's
``[TOOL_CALLS]``) or barred (EXAONE's ``[|endofturn|]``). A turn-start token takes its role name with it
(``<|im_start|>assistant``). Markup such as ``<b>`` or ``<hook>`` is not a token and stays.

Every token a catalogued chat template defines (:data:`marsrag.contract.catalog.CHAT_TEMPLATES`) goes too, whatever
its shape: TeleChat's ``<_end>``, ``<_bot>``, GLM's ``[gMASK]<sop>``, MiniMax-M2's ``]~b]``, ``[e~[``. Those the
shapes above miss are removed literally, without a role word (the shapes keep that rule for their turn starts).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Final

from marsrag.contract._trie import trie_pattern
from marsrag.contract.catalog import CHAT_TEMPLATES

# One pattern per opening character, none ignoring case: a pattern that starts with one literal is searched
# for at C speed, while an alternation of several (or a case-blind one) is tried at every position.
# A role name ends where a lower-case word would not: a header decoded without its separator runs into the content
# ("<|start|>assistantHook: ...").
_ROLES: Final = r"(?P<role>[ \t]*(?:system|user|assistant|model|tool|developer)(?![a-z0-9_])(?:<\|end_header_id\|>)?)?"
_BARRED: Final = re.compile(r"<[|｜](?P<name>[^<>|｜\n]{1,48})[|｜]>" + _ROLES)
_ANGLE_NAMES: Final = (
    "/s s eos bos eot eom pad unk mask endoftext end_of_turn start_of_turn end_of_text end_of_utterance end_of_sentence"
    # InternLM's first chat models end each turn with its own token: <eoh> (user), <eoa> (bot), <eosys> (system).
    " eoh eoa eosys"
).split()
# Llama 2's "<<SYS>>" is the name "<SYS>" in angle brackets.
_ANGLED: Final = re.compile(
    f"<(?P<name>{trie_pattern([*_ANGLE_NAMES, *(name.upper() for name in _ANGLE_NAMES), '<SYS>', '</SYS>'])})>" + _ROLES
)
# Square-bracket tokens are written in capitals; "[pad]" in prose is not one. EXAONE and Jais write their tokens
# barred inside square brackets ("[|assistant|]", "[|endofturn|]", "[|Human|]"), the shape of "<|name|>" in other
# brackets.
_BRACKETED: Final = re.compile(
    r"\[(?:/?INST|EOS|BOS|EOT|EOM|PAD|SEP|CLS|UNK|MASK|TOOL_CALLS|/?AVAILABLE_TOOLS|/?TOOL_RESULTS|\|[A-Za-z_]{1,24}\|)\]"
)
_TURN_STARTS: Final = frozenset({"im_start", "start", "start_header_id", "start_of_turn"})


_SHAPES: Final = (_BARRED, _ANGLED, _BRACKETED)


@cache
def _literal_tokens() -> tuple[str, ...]:
    """The catalogued chat-template tokens no shape matches (``<_end>``, ``[gMASK]``, ``]~b]``)."""
    tokens = {token for template in CHAT_TEMPLATES for token in (*template.ends, *template.starts, *template.prefixes)}
    return tuple(sorted(token for token in tokens if not any(shape.fullmatch(token) for shape in _SHAPES)))


@cache
def _literals() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """One pattern per opening character of the literal tokens, each run only when its character is in the text:
    a pattern that starts with one literal is searched for at C speed."""
    literal = _literal_tokens()
    return tuple(
        (char, re.compile(trie_pattern(token for token in literal if token[0] == char)))
        for char in sorted({token[0] for token in literal})
    )


@cache
def _literal_ends() -> dict[str, tuple[str, ...]]:
    """The literal tokens by their last character, for the O(1) trailing-token test."""
    literal = _literal_tokens()
    return {char: tuple(token for token in literal if token[-1] == char) for char in {token[-1] for token in literal}}


# SentencePiece's byte fallback: a byte the vocabulary has no piece for, decoded token by token (``<0x0A>``).
_BYTE_TOKENS: Final = re.compile(r"(?:<0x[0-9A-Fa-f]{2}>)+")


@cache
def _line_break_tokens() -> tuple[str, ...]:
    return tuple(sorted({token for template in CHAT_TEMPLATES for token in template.line_breaks}))


def may_have_character_tokens(text: str) -> bool:
    """A cheap test: False means no token here stands for a character."""
    return "<0x" in text or any(token in text for token in _line_break_tokens())


def character_tokens(text: str) -> str:
    """``text`` with the tokens that stand for characters written as those characters: a template's line-break token
    (rinna's ``<NL>``), and runs of byte-fallback tokens (``<0xE2><0x80><0x94>``) as the UTF-8 they spell."""
    for token in _line_break_tokens():
        text = text.replace(token, "\n")
    if "<0x" not in text:
        return text

    def decoded(match: re.Match[str]) -> str:
        data = bytes(int(piece[3:5], 16) for piece in match.group().split(">")[:-1])
        return data.decode("utf-8", errors="replace")

    return _BYTE_TOKENS.sub(decoded, text)


def may_have_tokens(text: str) -> bool:
    """A cheap test: False means the text holds no special token (every catalogued one holds one of these)."""
    return "<" in text or "[" in text or "]" in text


def has_special_token(text: str) -> bool:
    """Whether ``text`` holds a leaked special token."""
    return any(pattern.search(text) is not None for pattern in _patterns(text))


def strip_special_tokens(text: str) -> str:
    """``text`` without its leaked special tokens (a turn start without the role it announces)."""
    for pattern in _patterns(text):
        text = pattern.sub(_removed, text)
    return text


def strip_trailing_tokens(text: str) -> str:
    """``text`` without the special tokens (and white space) it ends in: the usual leak, checked in O(1)."""
    trimmed = text.rstrip()
    literal_ends = _literal_ends()
    while trimmed:
        last = trimmed[-1]
        literal = next((token for token in literal_ends.get(last, ()) if trimmed.endswith(token)), None)
        if literal is not None:
            trimmed = trimmed[: -len(literal)].rstrip()
            continue
        if last not in (">", "]"):
            break
        start = trimmed.rfind("<" if last == ">" else "[")
        if start < 0 or not any(shape.fullmatch(trimmed[start:]) for shape in _SHAPES):
            break
        trimmed = trimmed[:start].rstrip()
    return trimmed


def _patterns(text: str) -> list[re.Pattern[str]]:
    patterns = []
    if "<" in text:
        patterns.append(_ANGLED)
        # One-character tests are memchr scans, far cheaper than a multi-character one.
        if "|" in text or "｜" in text:
            patterns.append(_BARRED)
    if "[" in text:
        patterns.append(_BRACKETED)
    # After the shapes, so a shape's turn start still takes its role; a literal token takes none.
    for char, pattern in _literals():
        if char in text:
            patterns.append(pattern)
    return patterns


def _removed(match: re.Match[str]) -> str:
    # A role word after a token that starts no turn is prose: keep it.
    role = match.groupdict().get("role")
    if role and match["name"].casefold() not in _TURN_STARTS:
        return role
    return ""


# A chat template's token as a chat UI shows it once it has eaten part of it or escaped it for HTML: the token's
# name with some of its marks (``&lt;endoftext|``, ``<|im_end``, ``eot_id|>``), at the very end of a text.
_FRAGMENT_MARKS: Final = ("<", "&lt;", "|", "｜", ">", "&gt;")
_MIN_FRAGMENT_NAME: Final = 4


@cache
def _fragment() -> re.Pattern[str]:
    names = {
        name
        for template in CHAT_TEMPLATES
        for token in (*template.ends, *template.starts, *template.message_ends)
        if len(name := token.strip("<>[]|｜/ ")) >= _MIN_FRAGMENT_NAME and re.fullmatch(r"[\w▁]+", name)
    }
    # The fragment starts at a token's opening mark, or where a word could start: "call>" in "<end_function_call>"
    # is the end of another tag, not harmony's "<|call|>".
    return re.compile(rf"(?:(?:&lt;|<)[|｜]?|[|｜]|(?<!\w))(?:{trie_pattern(names)})[|｜]?(?:&gt;|>)?\s*\Z")


def strip_token_fragment(text: str) -> str:
    """``text`` without the fragment of a catalogued token it ends in (a token a UI partly ate or HTML-escaped);
    a bare word ending the text is content, so the fragment must keep one of the token's marks."""
    tail = text[-80:]
    if not ("<" in tail or "|" in tail or ">" in tail or "&" in tail or "｜" in tail):
        return text  # no mark of a token in reach: one-character scans, not the pattern
    match = _fragment().search(tail)
    if match is None or not any(mark in match.group() for mark in _FRAGMENT_MARKS):
        return text
    return text[: len(text) - len(tail) + match.start()]
