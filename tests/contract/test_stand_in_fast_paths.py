"""The stand-in rules' fast paths give the released rules' answers (contract 1.2.0, 1.3.0), on any text.

Each rule is compared with its implementation as released, before the fast paths (the ``_slow_`` functions below,
copied unchanged), over text built from the characters and words the rules' patterns and vocabularies turn on:
brackets, slashes, ``#``, ``.``, digits in several scripts, reference words, the template's instructions and the
worked example, whole and in pieces.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from marsrag.contract import _stand_ins
from marsrag.contract._stand_ins import (
    _BRACKETS,
    _LABEL,
    _MARKDOWN_LINK,
    _MARKUP,
    _MAX_INSTRUCTION_CHARS,
    _MAX_REFERENCE_CHARS,
    _QUOTED,
    _REFERENCE_TRIGGERS,
    _SENTENCE_END,
    CITATION,
    EXAMPLE_SHARE,
    INSTRUCTION_SHARE,
    MAX_SPAN_WORDS,
    MAX_WORDS_AROUND,
    MIN_ALL,
    MIN_SHARED,
    PATH,
    QUOTE_GATE,
    REFERENCE_WORDS,
    SOURCE_HEADER,
    SPAN,
    SPECIFIC,
    VERB_SHARE,
    _prefixes,
    _vocabulary,
)
from marsrag.contract.example import WORKED_EXAMPLE
from marsrag.contract.fields import FIELDS, SECTION_INSTRUCTIONS
from marsrag.tokens import MAX_STEM_CHARS, _snowball_only, ascii_words, surface_stems, word_list, words
from tests.contract.samples import CONTENT

# -- the rules as released --------------------------------------------------------------------------------------


def _slow_reference_only(value: str) -> bool:
    if len(value) > _MAX_REFERENCE_CHARS or not _REFERENCE_TRIGGERS.intersection(value):
        return False
    rest = SOURCE_HEADER.sub(" ", value)
    rest = CITATION.sub(" ", rest)
    rest = PATH.sub(" ", rest)
    if rest == value:
        return False
    return not any(word not in REFERENCE_WORDS for word in words(rest))


def _slow_bracketed_placeholder(value: str) -> bool:
    if not frozenset("[{<").intersection(value):  # the released _SPAN_TRIGGERS
        return False
    text = CITATION.sub(" ", _MARKDOWN_LINK.sub(r"\1", value))
    inside = spans = 0

    def drop(match: re.Match[str]) -> str:
        nonlocal inside, spans
        span = match.group()
        if _MARKUP.fullmatch(span):
            return " "
        inner = span[1:-1]
        count = sum(1 for _ in words(inner))
        if count > MAX_SPAN_WORDS or (count > 2 and _SENTENCE_END.search(inner)):
            return f" {inner} "
        inside += count
        spans += 1
        return " "

    for _ in range(4):
        shorter = SPAN.sub(drop, text)
        if shorter == text:
            break
        text = shorter
    if not spans:
        return False
    around = sum(1 for _ in words(_BRACKETS.sub(" ", text)))
    return around == 0 or (inside > around and around <= MAX_WORDS_AROUND)


def _slow_quotes_instruction(value: str) -> bool:
    return QUOTE_GATE in value and _QUOTED.search(value) is not None


def _slow_surface_stems(text: str) -> list[str]:
    return [_snowball_only(word) for word in words(text) if 2 < len(word) <= MAX_STEM_CHARS]


def _slow_restated_instruction(value: str) -> str | None:
    if len(value) > _MAX_INSTRUCTION_CHARS:
        return None
    body = _LABEL.sub("", value)
    prefixes = _prefixes()
    if sum(1 for word in words(body) if word[:4] in prefixes) < MIN_ALL:
        return None
    found = _slow_surface_stems(body)
    if not found:
        return None
    distinct = set(found)
    template, verbs, example = _vocabulary()
    if any(len(distinct & field) >= EXAMPLE_SHARE * len(distinct | field) for field in example):
        return "example"
    if SPECIFIC.search(body):
        return None
    shared = len(distinct & template)
    share = shared / len(distinct)
    if shared == len(distinct) >= MIN_ALL or (
        shared >= MIN_SHARED and (share >= INSTRUCTION_SHARE or (found[0] in verbs and share >= VERB_SHARE))
    ):
        return "instruction"
    return None


# -- text the rules turn on -----------------------------------------------------------------------------------

_SOURCES = [*SECTION_INSTRUCTIONS.values(), *WORKED_EXAMPLE.values()]
#: Single characters: every one a pattern names, whitespace and punctuation in and out of ASCII, letters whose
#: case folding is unusual (ß, ﬂ, İ, the Kelvin sign, the long s), digits of another script and a superscript (a
#: letter-or-digit, not a decimal digit).
_CHARACTERS = [
    *"[]【】#/\\.0123456789 \n\t{}<>()!?^,;–-_~:\"'`“”’—→…*|aZé",
    *("\u00a0", "\u3000", "ß", "ﬂ", "İ", "K", "ſ", "٣", "²"),
]
_WORDS = sorted(
    {
        *REFERENCE_WORDS,
        *(word.title() for word in REFERENCE_WORDS),
        *(piece for text in _SOURCES for piece in text.split()),
        *(piece.strip(".,").lower() for text in _SOURCES for piece in text.split()),
        *FIELDS,
        *(f"{field.upper()}:" for field in FIELDS),
        "over",
        "Should",
        "the",
        "SLO",
        "cache",
        "restarted",
        "nodes",
    }
)
_PIECES = [
    *_SOURCES,
    "[1]",
    "[2, 3]",
    "[^4]",
    "【5】",
    "[1-3]",
    "[x]",
    "[insert action/topic here]",
    "{json}",
    "<your answer>",
    "<b>",
    "[the runbook](runbooks/x.md)",
    "runbooks/cache.md",
    "#Warm-up",
    "[1] runbooks/cache.md#Pre-warming",
    "https://wiki.internal/ops",
    "config.yaml",
    "See:",
    "Source:",
]
#: The template and the example with letters that case-fold to ASCII ones (long s, Kelvin sign, ligatures); each
#: instruction starting in lower case, without its period, and with a long s for an "S" (the pattern's "(?i:S)").
_FOLDED = [text.replace("s", "ſ").replace("k", "K").replace("fl", "ﬂ").replace("ss", "ß") for text in _SOURCES]
_QUOTABLE = [
    *(text[0].lower() + text[1:] for text in SECTION_INSTRUCTIONS.values()),
    *(text.rstrip(".") for text in SECTION_INSTRUCTIONS.values()),
    *("ſ" + text[1:] for text in SECTION_INSTRUCTIONS.values() if text.startswith("S")),
]
_TOKEN = st.sampled_from(_CHARACTERS) | st.sampled_from(_WORDS) | st.sampled_from([*_PIECES, *_FOLDED, *_QUOTABLE])
#: Tokens run together (so characters land inside words and paths) or between spaces (so they stand alone).
texts = st.lists(_TOKEN, max_size=24).map("".join) | st.lists(_TOKEN, max_size=24).map(" ".join)
#: What a bare reference is made of, and what it can swallow: citation markers spanning spaces around a number
#: alone, headers whose anchor runs on to the end of the line, words before and after.
_REFERENCE_PARTS = ["[1 ,", ", 3]", "27", "٣", "²", "[2]", "【3】", "See", "source", "x.md", "kb/x", "#Warm-up", "[1]"]
references = st.lists(
    st.sampled_from([*_REFERENCE_PARTS, "cache", "the", "restart", ".", "?", "\n", "\t"]), max_size=10
).map(" ".join)
#: Also the fields of a real answer, and any text at all.
values = texts | references | st.sampled_from(list(CONTENT.values())) | st.text(max_size=120)

_MANY = settings(max_examples=max(settings().max_examples, 2000))


@_MANY
@given(values)
@example("[1 , 27 , 3]")  # a number alone between spaces, inside one citation marker
@example("See [1 , 27 , 3]")
@example("[1] kb/x.md#Warm-up cache restarts")  # the header's anchor takes the words to the end of the line
@example("[1] kb/x.md#Warm-up cache restarts\nsee [2]")
@example("[1] kb/x.md#Warm-up. Cache restarts")  # ...not past a sentence's end
@example("cache#1 [2]")
@example("see ² [1]")  # a superscript is a word, not a digit
def test_reference_only_matches_the_released_rule(value: str) -> None:
    """A plain token with a word of its own decides at once; every other value goes the released way."""
    assert _stand_ins.reference_only(value) == _slow_reference_only(value)


@_MANY
@given(values)
@example("[1](x) [2]")  # a link's text
@example("[a]([1]) [2]")  # a marker inside a link's target
@example("[1] [2, 3] [x]")
@example("[^1]【2】 [1-3]")
def test_bracketed_placeholder_matches_the_released_rule(value: str) -> None:
    """A value whose only brackets open citation markers decides at once; every other goes the released way."""
    assert _stand_ins.bracketed_placeholder(value) == _slow_bracketed_placeholder(value)


@_MANY
@given(values)
def test_restated_instruction_matches_the_released_rule(value: str) -> None:
    """Counting and stemming ASCII words through remembered answers, the example's union first and SPECIFIC last
    change no verdict; the count and the stems are the released ones."""
    assert _stand_ins.restated_instruction(value) == _slow_restated_instruction(value)
    found = ascii_words(value)
    prefixes = _prefixes()
    assert _stand_ins._template_count(value, found) == sum(1 for word in words(value) if word[:4] in prefixes)
    assert _stand_ins._stems(value, found) == _slow_surface_stems(value)


@_MANY
@given(values)
def test_quotes_instruction_matches_the_released_rule(value: str) -> None:
    """Each instruction's text after its first letter, tested as a substring first, changes no verdict."""
    assert _stand_ins.quotes_instruction(value) == _slow_quotes_instruction(value)


@_MANY
@given(values | st.text())
def test_the_fast_word_lists_are_the_tokenizers(text: str) -> None:
    """word_list is words as a list, and surface_stems what it was; ascii_words is every word, stopwords included,
    whenever all of them are ASCII (the separators may be anything)."""
    assert word_list(text) == list(words(text))
    assert surface_stems(text) == _slow_surface_stems(text)
    runs = re.findall(r"[^\W_]+", text)  # the words before the stopwords go: the tokenizer's own pattern
    found = ascii_words(text)
    if all(run.isascii() for run in runs):
        assert found is not None and [word.decode() for word in found] == [run.casefold() for run in runs]
    else:
        assert found is None


def test_the_generated_text_reaches_every_verdict() -> None:
    """The strategies draw whole stand-ins of every kind, so the comparisons see both answers of each rule."""
    assert _slow_reference_only("[1] runbooks/cache.md#Pre-warming") and "[1] runbooks/cache.md#Pre-warming" in _PIECES
    assert _slow_bracketed_placeholder("[insert action/topic here]") and "[insert action/topic here]" in _PIECES
    assert _slow_restated_instruction(SECTION_INSTRUCTIONS["payoff"]) == "instruction"
    assert _slow_restated_instruction(WORKED_EXAMPLE["grip"]) == "example"
    assert {SECTION_INSTRUCTIONS["payoff"], WORKED_EXAMPLE["grip"]} <= set(_PIECES)
    assert all(_slow_quotes_instruction(text) for text in _QUOTABLE)


def test_the_fast_paths_decide_a_real_answer() -> None:
    """The reference and bracket rules decide every field of the sample answer by their fast paths."""
    for value in CONTENT.values():
        assert _stand_ins._keeps_a_word(value), value
        assert "{" not in value and "<" not in value and _stand_ins._only_citations_open(value), value
