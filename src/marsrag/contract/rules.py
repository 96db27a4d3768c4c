"""The validation rules of the Loop Contract, as constants.

Everything here is part of the contract: :mod:`marsrag.contract.versioning` snapshots these values for each
released contract version, and a test fails when they change without the version bump the policy requires.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Final

from marsrag.contract import _stand_ins
from marsrag.contract.fields import FIELDS, SECTION_INSTRUCTIONS

#: Maximum characters per field, counted after trimming surrounding whitespace.
MAX_FIELD_CHARS: Final = 800

#: Soft target for sentences per field; outside it is a warning, never an error.
SOFT_SENTENCES: Final = (1, 4)

#: The per-field limits as the instructions to a model state them ("1-4 sentences and at most 800 characters").
FIELD_LIMITS: Final = f"{SOFT_SENTENCES[0]}-{SOFT_SENTENCES[1]} sentences and at most {MAX_FIELD_CHARS} characters"

#: A schema failure with at least this many individually passing fields is ``partial``, else ``failed``.
PARTIAL_MIN_FIELDS: Final = 3

#: Raw inputs longer than this (characters, or bytes before decoding) are rejected before any parsing.
MAX_INPUT_CHARS: Final = 100_000

#: Byte inputs longer than this are rejected before decoding (UTF-8 needs at most 4 bytes a character).
MAX_INPUT_BYTES: Final = 4 * MAX_INPUT_CHARS

#: JSON-looking spans longer than this are never handed to the (slow, pure-Python) repair library.
MAX_REPAIR_CHARS: Final = 32_768

#: Values that stand in for content without being content (an echoed schema or example), after folding.
PLACEHOLDERS: Final = frozenset(
    {
        "string",
        "str",
        "text",
        "null",
        "none",
        "n/a",
        "na",
        "tbd",
        "todo",
        "placeholder",
        "lorem ipsum",
        "your answer",
        "your answer here",
        *FIELDS,
    }
)

# A lone bracketed token such as "<hook>", "[your text here]" or "{string}" is a placeholder too.
_BRACKETED = re.compile(r"[<\[{(][\w .,'/-]{0,40}[>\]})]")
# Since 1.1.0: a value that is only a template engine's placeholder: mustache or Handlebars ("{{code}}",
# "{{{code}}}"), Jinja ("{% code %}"), shell or JavaScript ("${code}"), doubled brackets ("[[hook]]", "<<hook>>").
_TEMPLATE = re.compile(
    r"\{\{\{?[^{}]{1,60}\}\}\}?|\{%[^{}]{1,60}%\}|\$\{[^{}]{1,60}\}|\[\[[^\[\]]{1,60}\]\]|<<[^<>]{1,60}>>"
)
_TEMPLATE_STARTS = frozenset("{$[<")
# Since 1.1.0: a value that only names a field, matched on the folded value: a description of the content, not
# the content ("The hook", "Your grip here", "payoff text", "Insert the loop"). A sentence using the word is content.
_FIELD_NAME_ONLY = re.compile(
    r"[\W_]*(?:(?:insert|write|enter|add|put) )?(?:(?:the|a|an|your|my|our|this) )?"
    r"(?:" + "|".join(FIELDS) + r")s?"
    r"(?: (?:text|content|sentence|section|statement|line|field|value|part))?(?: (?:goes )?here)?[\W_]*"
)
# Since 1.1.0: a value without one letter or digit ("][", "—", "🔥") says nothing, whatever its length.
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")
# Since 1.4.0: the full-width and ideographic forms of brackets and quotes, read as their ASCII forms.
_FULL_WIDTH = re.compile(r"[\uff00-\uffef\u3000-\u303f]")
_SPACES = re.compile(r"\s+")
_FOLD_TRIM = " \t\r\n.:;!\"'`*_"


def fold(text: str) -> str:
    """Fold text for comparisons: casefold, collapse whitespace, trim quotes and end punctuation."""
    return _SPACES.sub(" ", text.casefold()).strip(_FOLD_TRIM)


_INSTRUCTION_FOLDS: Final = frozenset(fold(text) for text in SECTION_INSTRUCTIONS.values())
_INSTRUCTION_HEADS: Final = frozenset(text[:5].casefold() for text in SECTION_INSTRUCTIONS.values())
_INSTRUCTION_LENGTHS: Final = (
    min(len(text) for text in SECTION_INSTRUCTIONS.values()) - 8,
    max(len(text) for text in SECTION_INSTRUCTIONS.values()) + 16,
)


def non_content_reason(value: str) -> tuple[str, str] | None:
    """Say why a trimmed, non-empty value is not content, as ``(code, detail)``; None when it is content.

    Two things look like answers but are not: a placeholder (``"string"``, ``"<hook>"``) and the canonical
    template's own instruction echoed back. Cheap length and prefix checks come first, because this runs
    on every field of every output and real answers must pay almost nothing for it. Since 1.2.0 both are
    found in more shapes (:mod:`marsrag.contract._stand_ins`): a bare source reference or a bracketed
    placeholder is a ``placeholder``; a reworded instruction, or a copy of the prompt's worked example, is a
    ``template_echo``. Each message says what to write instead, for the repair.
    """
    if _FULL_WIDTH.search(value) is not None:
        # Since 1.4.0: brackets of any width (NFKC, Unicode's compatibility mapping: "（暂无）" is "(暂无)").
        value = unicodedata.normalize("NFKC", value)
    size = len(value)
    if size <= 44:
        folded = fold(value)
        if (
            folded in PLACEHOLDERS
            or not folded
            or _BRACKETED.fullmatch(value)
            or _FIELD_NAME_ONLY.fullmatch(folded)
            or _not_words(value)
        ):
            return "placeholder", f"is a placeholder ({value!r}), not content"
    elif not value[0].isalnum() and _not_words(value):
        return "placeholder", f"is a placeholder ({value[:40]!r}…), not content"
    if _INSTRUCTION_LENGTHS[0] <= size <= _INSTRUCTION_LENGTHS[1] and (
        value[:5].casefold() in _INSTRUCTION_HEADS or ":" in value[:16]
    ):
        folded = fold(value)
        # Tolerate a leading "HOOK:" style label left inside the value.
        label, _, rest = folded.partition(": ")
        if folded in _INSTRUCTION_FOLDS or (label in FIELDS and rest in _INSTRUCTION_FOLDS):
            return "template_echo", "echoes the template's instruction instead of answering"
    return _stand_in_reason(value)


def _stand_in_reason(value: str) -> tuple[str, str] | None:
    """The 1.2.0 rules (a bare reference, a bracketed placeholder, a reworded instruction, the example copied) and
    1.3.0's (an instruction quoted inside a longer field)."""
    if _stand_ins.reference_only(value):
        return "placeholder", (
            f"is only a source reference ({_shown(value)}), not content: write what the source says, then cite its "
            "number"
        )
    if _stand_ins.bracketed_placeholder(value):
        return "placeholder", (
            f"is a bracketed placeholder ({_shown(value)}), not content: write the actual text instead of the brackets"
        )
    # An echo is not quoted back: the message is the repair's feedback, and a small model copies what it is shown
    # (measured: Qwen2.5-Coder-0.5B wrote the quoted, cut example back into its repair, cut mark and all).
    restated = _stand_ins.restated_instruction(value)
    if restated == "instruction":
        return "template_echo", (
            "restates the template's instruction instead of answering: write this section's content about the "
            "user's goal"
        )
    if restated == "example":
        return "template_echo", (
            "copies the prompt's example answer, which is about another topic: answer the user's goal"
        )
    if _stand_ins.quotes_instruction(value):
        return "template_echo", (
            "quotes the template's instruction instead of answering: write this section's content about the "
            "user's goal, without the template's words"
        )
    if _stand_ins.describes_a_field(value):
        return "template_echo", (
            "describes the section instead of writing it: write this section's content about the user's goal"
        )
    return None


def _shown(value: str) -> str:
    """A value as a message quotes it: whole up to 60 characters, else its start."""
    return repr(value) if len(value) <= 60 else f"{value[:57]!r}…"


def _not_words(value: str) -> bool:
    """Whether a value (not starting with a letter or digit) is a template placeholder or has no letter or digit."""
    if value[0].isalnum():
        return False
    if value[0] in _TEMPLATE_STARTS and _TEMPLATE.fullmatch(value):
        return True
    return _LETTER_OR_DIGIT.search(value) is None


def text_problem(text: str) -> tuple[str, str] | None:
    """The rule a trimmed field value breaks, as ``(code, detail)``; None when it passes.

    This is the one implementation of the per-field rules: the LoopOutput model calls it as its field
    validator, and :func:`~marsrag.contract.validate_output` calls it directly on parsed values.
    """
    if not text:
        return "empty", "is empty after trimming"
    if len(text) > MAX_FIELD_CHARS:
        return "too_long", f"has {len(text):,} characters after trimming; the limit is {MAX_FIELD_CHARS}"
    return non_content_reason(text)


def repeated_fields(values: Mapping[str, object]) -> dict[str, str]:
    """Since 1.4.0: the fields whose text repeats an earlier field's word for word (folded), each with that field.

    Each section has its own job (the stake, the cause, the action, the evidence, the next step), so a section
    that copies another says nothing of its own: the later one fails, as a stand-in for content.
    """
    seen: dict[str, str] = {}
    repeated: dict[str, str] = {}
    for name in FIELDS:
        value = values.get(name)
        if isinstance(value, str) and value:
            key = fold(value)
            if key in seen:
                repeated[name] = seen[key]
            else:
                seen[key] = name
    return repeated


def repeated_problem(other: str) -> tuple[str, str]:
    """The ``(code, detail)`` of a field that repeats ``other`` word for word."""
    return "placeholder", f"repeats {other} word for word: write what this section says, not {other} again"


# Since 1.5.0 (stub_fields). Scripts written without spaces between words (Han, kana, Thai, Lao, Myanmar, Khmer):
# each character counts as a word.
_UNSPACED: Final = re.compile(
    r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
)
# Sentence and question ends in the scripts' own punctuation, before closing quotes or brackets.
_ENDS: Final = ".!?…。！？؟।"
_QUESTION_ENDS: Final = "?？؟;"
_CLOSING: Final = "\"'»”’)]）」』】 \t\r\n*_"
#: Since 1.5.0: a field of one word that asks nothing, or of at most FRAGMENT_MAX_WORDS that ends no sentence and
#: has at most half the words of any other, among sections that are sentences (at least SENTENCE_MIN_WORDS words) is
#: a stand-in: see stub_fields.
FRAGMENT_MAX_WORDS: Final = 4
SENTENCE_MIN_WORDS: Final = 4


def word_count(text: str) -> int:
    """Words in ``text``: white-space separated pieces with a letter or digit, each character of an unspaced script
    counting as one."""
    count = 0
    for piece in text.split():
        unspaced = 0 if piece.isascii() else len(_UNSPACED.findall(piece))
        count += unspaced or (1 if _LETTER_OR_DIGIT.search(piece) else 0)
    return count


def stub_fields(values: Mapping[str, object]) -> dict[str, str]:
    """Since 1.5.0: the fields that are stubs among sentences, each with its size.

    Every other section given must be a sentence (SENTENCE_MIN_WORDS words or more); then a stub is

    - one word that asks nothing (``"Aucune."``, ``"None."``, ``"42"`` in any language), or
    - a fragment: at most FRAGMENT_MAX_WORDS words, at most half as many as any other section has, that end no
      sentence when the others all end as sentences do (``"siehe oben"``, a Hindi "will be added later",
      ``"Should we"`` where a stream stopped).

    Beside sentences such a field stands in for a section (a placeholder or a pointer in the user's language) or
    was cut, and says nothing. A question (``"Proceed?"``) or a short sentence (``"Restart it."``) is content, and
    so is a short field among short ones (there is nothing to compare it with).
    """
    texts = {name: value for name, value in values.items() if isinstance(value, str) and value}
    # Most answers have no short field: a bounded split per field says so without counting words.
    if all(len(value.split(None, FRAGMENT_MAX_WORDS)) > FRAGMENT_MAX_WORDS for value in texts.values()):
        return {}
    words = {name: word_count(value) for name, value in texts.items()}
    ends = {name: _end(value) for name, value in texts.items()}
    stubs: dict[str, str] = {}
    for name, count in words.items():
        others = [other for other in words if other != name]
        if count > FRAGMENT_MAX_WORDS or any(words[other] < SENTENCE_MIN_WORDS for other in others):
            continue
        if ends[name] and ends[name] in _QUESTION_ENDS:
            continue
        fragment = not _is_end(ends[name]) and all(
            _is_end(ends[other]) and words[other] >= 2 * count for other in others
        )
        if count == 1 or fragment:
            stubs[name] = f"{count} word{'s' if count > 1 else ''}"
    return stubs


_NO_SENTENCE: Final = re.compile(r"[ \t]|(?:[-*+•]|\d{1,2}[.)])[ \t]|\|")


def stops_mid_sentence(values: Mapping[str, str], last: str) -> bool:
    """Whether ``last``, the section written last, stops where no sentence stops (on a letter, a digit or a comma)
    while every other section ends as a sentence does: the text was cut there (a token limit, a message body
    clipped by a client), whatever its length. Sections that do not all end as sentences (lists, a style without
    full stops) say nothing."""
    value = values.get(last)
    if not value or len(values) < len(FIELDS) or word_count(value) <= FRAGMENT_MAX_WORDS:
        return False  # (a fragment of a few words is the stub rule's: a stand-in, or a cut)
    if _NO_SENTENCE.match(value.rstrip().rsplit("\n", 1)[-1]) or "```" in value or "~~~" in value:
        return False  # a list's items, an indented line, a table's row and code end no sentence
    tail = value.rstrip()[-1:]
    if not (tail.isalnum() or tail in ",،、"):
        return False
    return all(_ends_a_sentence(text) for name, text in values.items() if name != last)


def _ends_a_sentence(text: str) -> bool:
    """Whether ``text`` ends as a sentence or a question does, before closing quotes, brackets and emphasis."""
    end = _end(text)
    return bool(end) and (end in _ENDS or end in _QUESTION_ENDS)


def _is_end(char: str) -> bool:
    return bool(char) and char in _ENDS


def _end(text: str) -> str:
    """The last character of ``text`` before closing quotes, brackets and emphasis."""
    return text.rstrip(_CLOSING)[-1:]


def stub_problem(size: str) -> tuple[str, str]:
    """The ``(code, detail)`` of a stub field of ``size`` (``"1 word"``)."""
    return "placeholder", (
        f"is {size} beside sections that are sentences: a stand-in (or a cut), not content; write this section's "
        "sentence"
    )


def cross_field_problems(values: Mapping[str, object]) -> dict[str, tuple[str, str]]:
    """The fields that fail because of the others (1.4.0's repeats, 1.5.0's stubs), each with ``(code, detail)``.

    ``values`` are the fields that passed the per-field rules.
    """
    problems = {name: repeated_problem(other) for name, other in repeated_fields(values).items()}
    for name, size in stub_fields(values).items():
        problems.setdefault(name, stub_problem(size))
    return problems


_SENTENCE_END = re.compile(r"[.!?…]+(?=[\s\"')\]]|$)")


def count_sentences(text: str) -> int:
    """Count sentences roughly: terminal punctuation runs, plus a trailing unterminated sentence."""
    ends = len(_SENTENCE_END.findall(text))
    stripped = text.rstrip("\"')] \t\r\n")
    if stripped and stripped[-1] not in ".!?…":
        ends += 1
    return ends


def rules_snapshot() -> dict[str, object]:
    """The contract's validation rules as plain data, for versioned snapshots."""
    return {
        "fields": list(FIELDS),
        "required": list(FIELDS),
        "type": "string",
        "strip_whitespace": True,
        "min_chars": 1,
        "max_chars": MAX_FIELD_CHARS,
        "soft_sentences": list(SOFT_SENTENCES),
        "partial_min_fields": PARTIAL_MIN_FIELDS,
        "placeholders": sorted(PLACEHOLDERS),
        "reject_punctuation_only": True,
        "placeholder_bracketed": _BRACKETED.pattern,
        # Since 1.1.0: values with no content at all, as the real-model corpus showed them passing.
        "placeholder_template": _TEMPLATE.pattern,
        "placeholder_field_name": _FIELD_NAME_ONLY.pattern,
        "reject_no_letter_or_digit": True,
        "reject_template_echo": sorted(_INSTRUCTION_FOLDS),
        # Since 1.1.0: a field cut off before it ended (an open JSON string, or the provider's cut) fails.
        "reject_truncated": True,
        "template": [f"{field.upper()}: {SECTION_INSTRUCTIONS[field]}" for field in FIELDS],
        # Since 1.2.0: a bare source reference, a bracketed placeholder, a reworded instruction, the example copied;
        # since 1.3.0, an instruction quoted inside a longer field; since 1.4.0, a field described in the template's
        # words (reject_field_description).
        **_stand_ins.snapshot(),
        # Since 1.4.0: a field repeating an earlier one word for word, and brackets of any width.
        "reject_repeated_field": {"compared": "folded text (casefold, white space collapsed, edges trimmed)"},
        "placeholder_bracketed_any_width": {"normalization": "NFKC", "when": _FULL_WIDTH.pattern},
        # Since 1.5.0: one word that asks nothing, or two that end no sentence, among sections that are sentences.
        "reject_stub_among_sentences": {
            "one_word": "asks nothing",
            "fragment_max_words": FRAGMENT_MAX_WORDS,
            "sentence_min_words": SENTENCE_MIN_WORDS,
            "unspaced_scripts": _UNSPACED.pattern,
            "sentence_ends": _ENDS,
            "question_ends": _QUESTION_ENDS,
        },
    }
