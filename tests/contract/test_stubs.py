"""Contract 1.5.0: a stub among sentences (one word that asks nothing, two words that end no sentence) is no
section's content, in any language; a short question or sentence is."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, LoopOutput, validate_output
from marsrag.contract.rules import word_count
from tests.contract.samples import CONTENT, labelled
from tests.contract.strategies import answers

STUBS = {
    "none, French": "Aucune.",
    "see above, German": "siehe oben",
    "none yet, Chinese": "暂无",
    "same as above, Japanese": "同上",
    "none, Russian": "Нет.",
    "a stream cut after two words": "Should we",
    "will be added later, Hindi": "बाद में जोड़ा जाएगा",
    "a bare number": "42",
    "yes": "Yes",
}
CONTENT_FORMS = {
    "a short question": "Proceed?",
    "a short sentence": "Restart it.",
    "a question in Arabic script": "نبدأ؟",
    "a short Chinese sentence": "请立即重启服务。",
}


@pytest.mark.parametrize("stub", STUBS.values(), ids=STUBS.keys())
@pytest.mark.parametrize("field", FIELDS)
def test_a_stub_among_sentences_fails_as_a_placeholder(field: str, stub: str) -> None:
    for raw in (json.dumps({**CONTENT, field: stub}), labelled("{T}: {v}", content={**CONTENT, field: stub})):
        result = validate_output(raw)
        assert result.status == "partial", raw
        assert [(issue.field, issue.code) for issue in result.errors] == [(field, "placeholder")], result.errors


@pytest.mark.parametrize("value", CONTENT_FORMS.values(), ids=CONTENT_FORMS.keys())
def test_a_short_question_or_sentence_is_content(value: str) -> None:
    content = {**CONTENT, "loop": value}
    assert validate_output(json.dumps(content)).ok
    assert LoopOutput(**content).loop == value


def test_short_fields_among_short_ones_are_compared_with_nothing() -> None:
    """Only sentences around it make a word a stub: five single words are judged one by one, as before."""
    content = {"hook": "Outage", "grip": "Certificates", "payoff": "Renew", "reinforce": "Logs", "loop": "Now?"}
    assert validate_output(json.dumps(content)).ok


def test_a_fragment_is_a_stub_only_when_every_other_section_ends_as_a_sentence() -> None:
    """Three words without an end beside sentences that end: a stub; beside one that does not end either, content
    (that answer's style is unpunctuated lines)."""
    assert validate_output(json.dumps({**CONTENT, "payoff": "Restart the cache"})).status == "partial"
    unpunctuated = {**CONTENT, "hook": CONTENT["hook"].rstrip("."), "payoff": "Restart the cache"}
    assert validate_output(json.dumps(unpunctuated)).ok


def test_the_model_refuses_a_stub_too() -> None:
    with pytest.raises(ValueError, match="beside sections that are sentences"):
        LoopOutput(**{**CONTENT, "reinforce": "siehe oben"})


@pytest.mark.parametrize(("text", "count"), [("Restart it.", 2), ("暂无", 2), ("GPU 节点", 3), ("— ok —", 1), ("", 0)])
def test_words_are_counted_per_character_in_unspaced_scripts(text: str, count: int) -> None:
    assert word_count(text) == count


@given(
    answers,
    st.sampled_from(FIELDS),
    st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll")), min_size=1, max_size=12),
)
def test_any_answer_with_one_word_in_place_of_a_section_is_not_valid(
    answer: dict[str, str], field: str, word: str
) -> None:
    if any(word_count(value) < 4 for name, value in answer.items() if name != field):
        return  # the others are no sentences: nothing to compare with
    assert validate_output(json.dumps({**answer, field: word + "."})).status != "valid"
