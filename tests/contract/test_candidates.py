"""Several candidate answers in one output: the one that validates best wins, the later one on a tie."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, validate_output
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled
from tests.contract.strategies import answers

PRETTY = json.dumps(CONTENT, indent=2)
PLACEHOLDERS = json.dumps({name: f"<{name}>" for name in FIELDS})
SCHEMA_EXAMPLE = json.dumps(dict.fromkeys(FIELDS, "string"))
EXAMPLE = json.dumps({name: f"An example {name} sentence." for name in FIELDS})

WINS = {
    "placeholder object, then the answer": f"Format:\n{PLACEHOLDERS}\n\nAnswer:\n{CLEAN_JSON}",
    "placeholder fence, then the answer fence": f"```json\n{SCHEMA_EXAMPLE}\n```\nMine:\n```json\n{PRETTY}\n```",
    "realistic example, then the answer": f"For example:\n{EXAMPLE}\n\nSo for you:\n{CLEAN_JSON}",
    "non-JSON fence, then the answer": f"```bash\ncurl -s {{url}} | jq .\n```\n```json\n{PRETTY}\n```",
    "python fence with braces, then json": f"```python\nd = {{'a': 1}}\n```\n\n{CLEAN_JSON}",
    "the same object twice": f"{CLEAN_JSON}\n\nAgain:\n{CLEAN_JSON}",
    "the answer, then a partial restatement": f"{CLEAN_JSON}\nIn short: " + json.dumps({"hook": CONTENT["hook"]}),
    "a broken example, then the answer": '{"hook": "x", "grip": \n\n' + CLEAN_JSON,
    "the example, then a broken answer": f"{EXAMPLE}\n\n{CLEAN_JSON[:-1]},}}",
    "placeholder labels, then labelled answer": "HOOK: <hook>\nGRIP: <grip>\n\n" + labelled("{L}: {v}"),
    "placeholder json, then labels": f"{SCHEMA_EXAMPLE}\n\n" + labelled("**{T}:** {v}", "\n\n"),
    "labels, then a json object": "HOOK: draft\n\n" + CLEAN_JSON,
}


@pytest.mark.parametrize("raw", WINS.values(), ids=WINS.keys())
def test_the_best_candidate_wins(raw: str) -> None:
    """The real answer is chosen over examples, placeholders, other code and partial restatements."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert {name: " ".join((value or "").split()) for name, value in result.loop_output.items()} == CONTENT


def test_on_a_tie_the_later_candidate_wins() -> None:
    """Two complete answers: the later one is the answer (an example comes first)."""
    later = {name: f"The later {name} answer." for name in FIELDS}
    result = validate_output(f"{EXAMPLE}\n{json.dumps(later)}")
    assert dict(result.loop_output) == later
    result = validate_output(labelled("{L}: {v}") + "\n\n" + json.dumps(later))
    assert dict(result.loop_output) == later


def test_more_passing_fields_beat_a_later_candidate() -> None:
    """A later object with fewer passing fields never replaces a better earlier one."""
    worse = json.dumps({**CONTENT, "payoff": "TBD", "loop": ""})
    result = validate_output(f"{CLEAN_JSON}\n\nDraft:\n{worse}")
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_placeholders_alone_stay_failed() -> None:
    """Only examples, however many, are no answer."""
    for raw in (f"{PLACEHOLDERS}\n{SCHEMA_EXAMPLE}", f"```json\n{SCHEMA_EXAMPLE}\n```\n```json\n{PLACEHOLDERS}\n```"):
        assert validate_output(raw).status == "failed"


JSON_LINES = "\n".join(json.dumps({name: value}) for name, value in CONTENT.items())


def test_json_lines_of_one_key_each_are_one_answer() -> None:
    """``{"hook": ...}`` then ``{"grip": ...}`` on their own lines join into one answer, in any order."""
    for raw in (JSON_LINES, f"```jsonl\n{JSON_LINES}\n```", "\n".join(reversed(JSON_LINES.split("\n")))):
        result = validate_output(raw)
        assert result.status == "valid", (raw, result.errors)
        assert dict(result.loop_output) == CONTENT


def test_json_lines_that_repeat_a_field_or_carry_other_keys_are_not_joined() -> None:
    """Joining needs distinct contract keys only; an array of one-key objects stays refused."""
    repeated = JSON_LINES + "\n" + json.dumps({"hook": "Another hook."})
    assert validate_output(repeated).status != "valid"
    foreign = JSON_LINES.replace('{"grip"', '{"note": "x", "grip"')
    assert validate_output(foreign).status != "valid"
    assert validate_output(json.dumps([{k: v} for k, v in CONTENT.items()])).status == "failed"


BARE = ",\n".join(f"{json.dumps(name)}: {json.dumps(value)}" for name, value in CONTENT.items())


@pytest.mark.parametrize(
    "raw",
    [BARE, BARE + ",", f"Here you go:\n{BARE}\n\nHope it helps.", f"```json\n{BARE}\n```", BARE.replace(",\n", ", ")],
    ids=["bare", "trailing comma", "in prose", "in a fence", "on one line"],
)
def test_bare_key_value_pairs_without_braces(raw: str) -> None:
    """Key-value lines with no braces read as the object they spell, when every key is a contract field."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


def test_bare_pairs_with_another_key_are_refused() -> None:
    """A bare list whose keys are not all contract fields is some other data: not read as an answer."""
    raw = BARE.replace('"payoff"', '"summary"')
    assert validate_output(raw).status != "valid"


def test_a_cut_bare_pair_is_truncated() -> None:
    """Bare pairs cut mid-value fail that field as truncated."""
    result = validate_output(BARE[:-15])
    assert {issue.field: issue.code for issue in result.errors} == {"loop": "truncated"}


@given(answers, st.sampled_from(["\n", "\n\nThe real one:\n", "\n```\n```json\n"]))
def test_a_placeholder_example_never_beats_any_answer(answer: dict[str, str], sep: str) -> None:
    """A placeholder example before or after any valid answer never wins over it."""
    for raw in (PLACEHOLDERS + sep + json.dumps(answer), json.dumps(answer) + sep + SCHEMA_EXAMPLE):
        result = validate_output(raw)
        assert result.status == "valid" and dict(result.loop_output) == answer


@given(answers, st.permutations(FIELDS))
def test_any_answer_as_json_lines_validates_to_the_same_fields(answer: dict[str, str], order: list[str]) -> None:
    """Any answer written as JSON Lines of one key each, in any order, is the same answer."""
    raw = "\n".join(json.dumps({name: answer[name]}) for name in order)
    assert dict(validate_output(raw).loop_output) == answer


CORRECTED = {**CONTENT, "payoff": "Roll the cache nodes back to the previous image.", "loop": "Roll back now?"}
TWO_ANSWERS = {
    "corrected": f"```json\n{CLEAN_JSON}\n```\n\nApologies, that was wrong. Corrected:\n\n```json\n"
    f"{json.dumps(CORRECTED)}\n```",
    "in prose": f"{CLEAN_JSON}\n\nOr, if you prefer:\n{json.dumps(CORRECTED, indent=2)}",
    "a repaired second one": f"{CLEAN_JSON}\n{json.dumps(CORRECTED)[:-1]},}}",
    "in a tool call": f'{CLEAN_JSON}\n{{"name": "final_answer", "arguments": {json.dumps(CORRECTED)}}}',
    # Three backticks with more on their line are an inline code span, not a fence (CommonMark).
    "in inline code spans": f"```{CLEAN_JSON}```\nLet me try again: ```{json.dumps(CORRECTED)}```",
}


@pytest.mark.parametrize("raw", TWO_ANSWERS.values(), ids=TWO_ANSWERS.keys())
def test_two_different_json_answers_are_never_one_chosen(raw: str) -> None:
    """Two complete JSON answers that disagree: which one is meant the text does not say reliably, so the fields
    they disagree on fail, as two labelled answers' do; the fields they agree on stand."""
    result = validate_output(raw)
    assert result.status != "valid", result.loop_output
    assert {issue.field: issue.code for issue in result.errors} == {
        "payoff": "duplicate_section",
        "loop": "duplicate_section",
    }


def test_one_document_read_two_ways_is_one_answer() -> None:
    """An envelope and the answer it holds, or an object repaired, come from one document: no second answer."""
    for raw in (
        f'{{"name": "final_answer", "arguments": {CLEAN_JSON}}}',
        f'{{"output": {CLEAN_JSON}, "note": "done"}}',
        CLEAN_JSON[:-1] + ",}",
    ):
        result = validate_output(raw)
        assert result.status == "valid" and dict(result.loop_output) == CONTENT, (raw, result.errors)


@given(answers, answers, st.sampled_from(["\n", "\n\nCorrected:\n", "\n```\n```json\n"]))
def test_any_two_json_answers_are_one_answer_only_when_they_agree(
    first: dict[str, str], second: dict[str, str], sep: str
) -> None:
    result = validate_output(json.dumps(first) + sep + json.dumps(second))
    differing = {name for name in FIELDS if " ".join(first[name].split()) != " ".join(second[name].split())}
    if not differing:
        assert result.status == "valid" and dict(result.loop_output) == first
    else:
        assert result.status != "valid"
        assert {issue.field for issue in result.errors if issue.code == "duplicate_section"} == differing


REPEATED_KEY = CLEAN_JSON[:-1] + ', "payoff": "Roll the cache nodes back instead."}'


@pytest.mark.parametrize(
    "raw",
    [
        REPEATED_KEY,
        f"Here:\n```json\n{REPEATED_KEY}\n```",
        json.dumps({"choices": [{"message": {"role": "assistant", "content": REPEATED_KEY}}]}, indent=2),
    ],
    ids=["bare", "fenced", "in a chat completion's content"],
)
def test_a_field_key_given_twice_with_different_values_is_two_answers(raw: str) -> None:
    """JSON parsers keep the last of a repeated key; an answer giving a field twice gave two answers for it."""
    result = validate_output(raw)
    assert result.status == "partial", result.loop_output
    assert {issue.field: issue.code for issue in result.errors} == {"payoff": "duplicate_section"}


def test_a_key_repeated_with_the_same_value_or_outside_the_fields_is_one_answer() -> None:
    same = CLEAN_JSON[:-1] + f', "payoff": {json.dumps(CONTENT["payoff"])}}}'
    other = CLEAN_JSON[:-1] + ', "note": "a", "note": "b"}'
    for raw in (same, other):
        result = validate_output(raw)
        assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_a_field_key_given_twice_in_yaml_or_text_format_is_two_answers() -> None:
    """YAML and protobuf's text format keep the last of a repeated key too; a field given twice is two answers."""
    lines = "\n".join(f'{name}: "{value}"' for name, value in CONTENT.items())
    result = validate_output(lines + '\nhook: "Nothing is breaching; only the dashboard is stale."')
    assert result.status != "valid"
    assert {issue.field: issue.code for issue in result.errors}.get("hook") == "duplicate_section"
