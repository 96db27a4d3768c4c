"""Field names written in another script, by their sound: read as the fields' keys in any key syntax, and never
from a word or two that only sound alike."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import validate_output
from marsrag.contract._aliases import aliased
from tests.contract.samples import CONTENT, FIELDS

# Each script's spelling of the five names by their sound, as a model answering in that language writes them.
TRANSLITERATED = {
    "Korean": ("훅", "그립", "페이오프", "리인포스", "루프"),
    "Japanese": ("フック", "グリップ", "ペイオフ", "リインフォース", "ループ"),
    "Russian": ("хук", "грип", "пейофф", "реинфорс", "луп"),
    "Ukrainian": ("хук", "гріп", "пейоф", "рейнфорс", "луп"),
    "Hindi": ("हुक", "ग्रिप", "पेऑफ़", "रीइन्फ़ोर्स", "लूप"),
    "Greek": ("χουκ", "γκριπ", "πεϊόφ", "ριινφορς", "λουπ"),
    "Arabic": ("هوك", "جريب", "بايوف", "ريإنفورس", "لوب"),
}
# The key syntaxes a label takes: a bullet's label, a heading, a bracket label, a JSON key.
SYNTAXES = {
    "bullet": lambda key, value: f"- {key}: {value}",
    "heading": lambda key, value: f"### {key}\n{value}\n",
    "bracket": lambda key, value: f"【{key}】\n{value}\n",
    "full-width colon": lambda key, value: f"{key}：{value}",
}


@pytest.mark.parametrize("syntax", SYNTAXES)
@pytest.mark.parametrize("script", TRANSLITERATED)
def test_transliterated_labels_read_as_the_fields(script: str, syntax: str) -> None:
    keys = TRANSLITERATED[script]
    raw = "\n".join(SYNTAXES[syntax](key, CONTENT[name]) for key, name in zip(keys, FIELDS, strict=True))
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == CONTENT


@pytest.mark.parametrize("script", TRANSLITERATED)
def test_transliterated_json_keys_read_as_the_fields(script: str) -> None:
    answer = dict(zip(TRANSLITERATED[script], CONTENT.values(), strict=True))
    raw = json.dumps({"output": {"text": json.dumps(answer, ensure_ascii=False, indent=2)}}, ensure_ascii=False)
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == CONTENT


def test_four_keys_or_two_words_for_one_field_are_not_rewritten() -> None:
    """All five fields keyed so, each by one word, or nothing is rewritten: a few words that sound like fields are
    words."""
    keys = TRANSLITERATED["Russian"]
    four = "\n".join(f"- {key}: {CONTENT[name]}" for key, name in zip(keys[:4], FIELDS, strict=False))
    assert aliased(four) is None
    assert validate_output(four).status != "valid"
    twice = four + f"\n- {keys[4]}: {CONTENT['loop']}\n- лупа: {CONTENT['loop']}"
    assert aliased(twice) is None


@given(st.lists(st.text(st.characters(whitelist_categories=("Lo", "Ll")), min_size=1, max_size=6), max_size=8))
def test_words_in_other_scripts_never_make_an_invalid_answer_valid(words: list[str]) -> None:
    """Four fields labelled by their names, and any other words keyed beside them: the fifth is still missing, or
    read from the lines keyed by those words (when one sounds like it and no other word competes)."""
    raw = "\n".join(f"- {name.title()}: {CONTENT[name]}" for name in FIELDS[:4])
    raw += "".join(f"\n- {word}: some words here." for word in words)
    result = validate_output(raw)
    assert result.status != "valid" or str(result.loop_output["loop"]).startswith("some words here.")
