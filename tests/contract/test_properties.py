"""Property tests: validation never raises, never invents, and round-trips every rendering."""

from __future__ import annotations

import json
import re

from hypothesis import assume, given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, LoopOutput, validate_output
from tests.contract.strategies import answers

_FIELD_WORD = re.compile("|".join(FIELDS), re.IGNORECASE)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@given(st.text(max_size=2000))
def test_never_raises_on_text(raw: str) -> None:
    """Arbitrary text gives a result, never an exception."""
    assert validate_output(raw).status in {"valid", "partial", "failed"}


@given(st.binary(max_size=2000))
def test_never_raises_on_bytes(raw: bytes) -> None:
    """Arbitrary bytes give a result, never an exception."""
    assert validate_output(raw).status in {"valid", "partial", "failed"}


label_soup = st.lists(
    st.sampled_from(
        [
            "HOOK:",
            "**Grip:**",
            "## Payoff",
            "- reinforce:",
            "<loop>",
            "</loop>",
            "{",
            "}",
            "[",
            "]",
            '"hook":',
            "'grip':",
            ",",
            "\n",
            "\r\n",
            "```json",
            "```",
            "Final Answer:",
            " x ",
            ". Loop:",
            '"',
            "\\",
            "//",
            "/*",
            "*/",
            "1.",
            "—",
        ]
    ),
    max_size=40,
).map("".join)


@given(label_soup)
def test_never_raises_on_label_and_json_soup(raw: str) -> None:
    """Fragments of every recognized form, in any order, never make validation raise."""
    validate_output(raw)


@given(json_values)
def test_never_raises_on_any_json_value(value: object) -> None:
    """Any JSON value, as text or as a Python object, gives a result."""
    validate_output(json.dumps(value))
    validate_output(value)


@given(st.text(max_size=2000))
def test_text_without_labels_or_keys_never_validates(raw: str) -> None:
    """Text that names no field, as a label or as a key, is never valid (nor even partial)."""
    assume(not _FIELD_WORD.search(raw))
    assert validate_output(raw).status == "failed"


@given(st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_json_without_field_keys_never_validates(value: dict[str, object]) -> None:
    """A JSON object none of whose keys names a field is failed."""
    assume(not any(_FIELD_WORD.search(key) for key in value))
    assert validate_output(json.dumps(value)).status == "failed"


field_values = st.one_of(st.text(max_size=900), st.integers(), st.none(), st.lists(st.text(max_size=3)))


@given(st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, field_values)))
def test_mapping_verdict_agrees_with_the_model(values: dict[str, object]) -> None:
    """For a mapping, 'valid' means exactly that LoopOutput accepts it; errors name exactly the bad fields."""
    result = validate_output(values)
    try:
        LoopOutput.model_validate(values)
        model_ok = True
    except ValueError:
        model_ok = False
    assert (result.status == "valid") == model_ok
    assert len(result.passing_fields) + len(result.failing_fields) == len(FIELDS)


styles = st.sampled_from(
    [
        "{n}. {L}: {v}",
        "**{T}:** {v}",
        "## {T}\n{v}",
        "- {T}: {v}",
        "{l}: {v}",
        "{L}:\n{v}",
        "<{l}>{v}</{l}>",
        "**{T}**: {v}",
    ]
)


@given(answers, styles, st.sampled_from(["\n", "\n\n", "\r\n"]), st.permutations(FIELDS))
def test_labelled_rendering_round_trips(answer: dict[str, str], style: str, sep: str, order: list[str]) -> None:
    """Any content rendered in any label style, in any order, is recovered exactly."""
    assume(LoopOutput.model_validate(answer))
    raw = sep.join(
        style.format(n=i, L=name.upper(), T=name.title(), l=name, v=answer[name]) for i, name in enumerate(order, 1)
    )
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


@given(answers)
def test_json_and_canonical_rendering_round_trip(answer: dict[str, str]) -> None:
    """A model's JSON and its canonical labelled rendering both validate back to the same model."""
    model = LoopOutput.model_validate(answer)
    assert validate_output(model.model_dump_json()).model == model
    assert validate_output(model.render()).model == model


def _chunked(text: str) -> str:
    return "\n".join(json.dumps({"response": text[i : i + 5], "done": False}) for i in range(0, len(text), 5))


#: Ways an answer is wrapped that the reader unwraps (issue 40's third corpus): each must neither lose a field nor
#: complete an answer missing one.
WRAPPERS = {
    "element": lambda body, full: f"<attempt_completion>\n<result>\n{body}\n</result>\n</attempt_completion>",
    "fence": lambda body, full: f"```\n{body}\n```\nLet me know!",
    "directive": lambda body, full: f":::artifact{{type=md}}\n{body}\n:::\nDone.",
    "call": lambda body, full: f'<answer>finish(message="{body}")</answer>',
    "bracketed action": lambda body, full: f"Action: Finish[{body}]",
    "role prefix": lambda body, full: f"Assistant: {body}",
    "stream": lambda body, full: _chunked(body),
    "blocks": lambda body, full: json.dumps({"content": [{"type": "thinking", "thinking": "x"}, {"text": body}]}),
    "a full answer after a user turn": lambda body, full: f"{body}\nUser: and now?\nAssistant: {full}",
    "a full answer after an end token": lambda body, full: f"{body}<_end><_user>more<_bot>{full}",
    "a sign-off after a list": lambda body, full: "- " + body.replace("\n", "\n- ") + "\n\nLet me know!",
}


@given(answers, st.sampled_from(FIELDS), st.sampled_from(sorted(WRAPPERS)))
def test_an_answer_missing_a_field_in_any_wrapper_never_validates(
    answer: dict[str, str], dropped: str, wrapper: str
) -> None:
    body = "\n".join(f"{name.title()}: {value}" for name, value in answer.items() if name != dropped)
    full = "\n".join(f"{name.title()}: {value}" for name, value in answer.items())
    result = validate_output(WRAPPERS[wrapper](body, full))
    assert result.status != "valid", (wrapper, result.loop_output)


@given(answers, st.sampled_from(sorted(WRAPPERS)))
def test_a_full_answer_in_any_wrapper_reads_back(answer: dict[str, str], wrapper: str) -> None:
    full = "\n".join(f"{name.title()}: {value}" for name, value in answer.items())
    result = validate_output(WRAPPERS[wrapper](full, full))
    assert result.status == "valid", (wrapper, result.errors)
    assert {name: " ".join(value.split()) for name, value in result.loop_output.items()} == {
        name: " ".join(value.split()) for name, value in answer.items()
    }
