"""Values with no content (contract 1.1.0): template placeholders, a field's own name, no letter or digit.

Real-model outputs showed ``"{{code}}"``, ``"The hook"`` and ``"]["`` passing as content; each is a placeholder
in every form an answer takes, while real content that looks close stays valid.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from marsrag.contract import FIELDS, LoopOutput, ValidationResult, validate_output
from marsrag.contract.rules import FRAGMENT_MAX_WORDS, word_count
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled
from tests.contract.strategies import answers


def codes(result: ValidationResult) -> dict[str | None, str]:
    return {issue.field: issue.code for issue in result.errors}


TEMPLATES = ["{{code}}", "{{ hook }}", "{{{loop_text}}}", "{% block grip %}", "${payoff}", "[[hook]]", "<<grip>>"]
FIELD_NAMES = [
    "The hook",
    "the Hook.",
    "A grip!",
    "an Payoff",
    "Your hook here",
    "your loop goes here",
    "hook text",
    "Hook text here",
    "The payoff section",
    "Insert the loop",
    "insert hook here",
    "THE REINFORCE:",
    "The grip…",
    "— the loop —",
    "The hooks",
]
NO_LETTER_OR_DIGIT = ["][", "—", "()", '""', "…", "🔥🔥", "-- // --", "* * *", "?!", "[ ]"]
# Close to a placeholder, but content: a sentence using a field's name, a short answer, a template in a sentence.
#: Short fields: a short value among them is compared with nothing (1.5.0's stubs are short among sentences).
SHORT = {
    "hook": "Outage.",
    "grip": "Expired certificate.",
    "payoff": "Renew it.",
    "reinforce": "Logs agree.",
    "loop": "Now?",
}
NEAR_MISSES = [
    "The hook is that three regions breached.",
    "Hook the cache to the snapshot.",
    "Loop back with the on-call team tomorrow.",
    "Grip strength is the wrong metric.",
    "Your loop is too slow.",
    "The hooks are in place.",
    "The loop closes at 5pm.",
    "the hook, the grip",
    "42",
    "Yes.",
    "No",
    "$5",
    "#1 priority",
    "钩子",
    "¿Qué?",
    '"Why now?"',
    "Hello {{name}}, the regions breached.",
    "Use ${REGION} in the query.",
    "-- see above --",
    "🔥 Three regions breached.",
    "A payoff of 30% fewer breaches.",
]


@pytest.mark.parametrize("value", TEMPLATES + FIELD_NAMES + NO_LETTER_OR_DIGIT)
def test_no_content_values_are_placeholders(value: str) -> None:
    """The value fails ``placeholder`` in the model and in the validator alike, in any field."""
    with pytest.raises(ValidationError):
        LoopOutput.model_validate({**CONTENT, "loop": value})
    for name in ("hook", "loop"):
        result = validate_output({**CONTENT, name: value})
        assert codes(result) == {name: "placeholder"}, value
        assert result.status == "partial" and result.loop_output[name] == value.strip()


@pytest.mark.parametrize("value", NEAR_MISSES)
def test_content_close_to_a_placeholder_stays_valid(value: str) -> None:
    """A sentence naming a field, a short real answer or a template inside a sentence is content (a short answer
    among short ones: beside sentences, one word is a stub since 1.5.0, tests/contract/test_stubs.py)."""
    content = SHORT if word_count(value) <= FRAGMENT_MAX_WORDS else CONTENT
    model = LoopOutput.model_validate({**content, "hook": value})
    assert model.hook == value
    assert validate_output({**content, "hook": value}).ok


@pytest.mark.parametrize("value", ["{{code}}", "The grip", "]["])
def test_placeholders_fail_in_every_form(value: str) -> None:
    """JSON, broken JSON, labels, tags and YAML give the same verdict on the same value."""
    content = {**CONTENT, "grip": value}
    forms = {
        "json": json.dumps(content),
        "json missing its brace": json.dumps(content)[:-1],
        "labels": labelled("{L}: {v}", content=content),
        "bold labels": labelled("**{T}:** {v}", "\n\n", content=content),
        "tags": labelled("<{l}>{v}</{l}>", content=content),
        "yaml": "\n".join(f"{key}: {json.dumps(text)}" for key, text in content.items()),
    }
    for name, raw in forms.items():
        result = validate_output(raw)
        assert codes(result) == {"grip": "placeholder"}, (name, result.errors)


def test_a_long_value_without_a_letter_or_digit_is_a_placeholder() -> None:
    """No letter or digit at any length: a rule of punctuation says nothing; its message shows the start."""
    result = validate_output({**CONTENT, "payoff": "-=" * 200})
    assert codes(result) == {"payoff": "placeholder"}
    assert next(issue.message for issue in result.errors).startswith("payoff is a placeholder ('-=-=")


def test_an_example_of_named_fields_never_beats_the_answer() -> None:
    """An example object whose values only name the fields, before or after the answer, loses to it."""
    example = json.dumps({name: f"The {name}" for name in FIELDS})
    for raw in (f"Format:\n{example}\n\nAnswer:\n{CLEAN_JSON}", f"{CLEAN_JSON}\n\nFor example: {example}"):
        result = validate_output(raw)
        assert result.ok and dict(result.loop_output) == CONTENT
    assert validate_output(example).status == "failed"


articles = st.sampled_from(["", "the ", "a ", "your ", "The ", "YOUR ", "insert the ", "write your "])
suffixes = st.sampled_from(["", " text", " here", " goes here", " text here", " section"])
endings = st.sampled_from(["", ".", ":", "!", "…", " ...", "?"])


@given(articles, st.sampled_from(FIELDS), st.sampled_from([str.lower, str.title, str.upper]), suffixes, endings)
def test_any_field_name_with_an_article_is_a_placeholder(
    article: str, name: str, case: object, suffix: str, ending: str
) -> None:
    """A field's name, with or without an article or "here", in any case and punctuation: a placeholder."""
    value = f"{article}{case(name)}{suffix}{ending}"  # type: ignore[operator]
    assert codes(validate_output({**CONTENT, "loop": value})) == {"loop": "placeholder"}, value


@given(answers, st.sampled_from(FIELDS), st.sampled_from(["The {name} is {v}", "{v} That is the {name}.", "{v}"]))
def test_content_naming_a_field_stays_valid(content: dict[str, str], name: str, template: str) -> None:
    """Any content, even one that names a field in a sentence, stays valid."""
    value = template.format(name=name, v=content[name])
    assert validate_output({**content, name: value}).ok
