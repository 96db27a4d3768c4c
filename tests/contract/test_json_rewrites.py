"""JSON a model broke the same way every time: Markdown escapes in values, curly quotes as delimiters,
doubled braces. Each is rewritten exactly, so the values keep what the model meant."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, validate_output
from marsrag.contract._curly_quotes import straighten
from marsrag.contract._escapes import unescape_stray
from marsrag.contract._tokens import strip_special_tokens
from tests.contract.samples import CLEAN_JSON, CONTENT
from tests.contract.strategies import answers

MARKDOWN = {
    "hook": "The user_id column of orders_v2 is null in 3 regions.",
    "grip": "The *retry* path in [worker] drops rows #412 and up.",
    "payoff": "Backfill user_id from events (a one-off job) before the 2.1 release!",
    "reinforce": "Staging ran it on 10_000 rows in 4 s - no locks, no `timeouts`.",
    "loop": "Should the job run per region, or all at once?",
}


def escaped(text: str) -> str:
    """``text`` the way a model thinking in Markdown writes it inside a JSON string."""
    return "".join("\\" + char if char in "_*[]#()!`-." else char for char in text)


def markdown_json(content: dict[str, str]) -> str:
    return "{" + ", ".join(f'"{name}": "{escaped(value)}"' for name, value in content.items()) + "}"


def test_markdown_escapes_in_values_keep_the_plain_character() -> None:
    """``\\_``, ``\\*``, ``\\[``, ``\\#`` (invalid JSON escapes) are read as the characters they escape."""
    raw = markdown_json(MARKDOWN)
    with pytest.raises(ValueError):
        json.loads(raw)
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == MARKDOWN
    assert "repaired_json" not in {warning.code for warning in result.warnings}


@pytest.mark.parametrize(
    "raw",
    [
        f"Here is the answer:\n```json\n{markdown_json(MARKDOWN)}\n```",
        f"Final Answer: {markdown_json(MARKDOWN)}",
        markdown_json(MARKDOWN).replace('"', '\\"'),
    ],
    ids=["in a fence", "after final answer", "escaped quotes too"],
)
def test_markdown_escapes_in_other_json_forms(raw: str) -> None:
    """The same rewrite applies wherever the JSON is found."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == MARKDOWN


def test_json_escapes_are_left_as_json_escapes() -> None:
    """Only invalid escapes change: ``\\n``, ``\\"``, ``\\\\`` and ``\\/`` keep their JSON meaning."""
    grip = 'Line one\nline "two" in C:\\temp\\_old, see a/b.'
    raw = json.dumps({**CONTENT, "grip": grip}).replace("a/b", "a\\/b").replace(', "payoff"', ', "payoff"')
    raw = raw.replace(CONTENT["hook"], CONTENT["hook"].replace("API", "\\_API"))
    result = validate_output(raw)
    assert result.status == "valid"
    assert result.loop_output["grip"] == grip
    assert result.loop_output["hook"] == CONTENT["hook"].replace("API", "_API")
    assert unescape_stray(r"\\_ \_ \n \" \/") == r"\\_ _ \n \" \/"


CURLY = {
    "all structural quotes curly": "{" + ", ".join(f"“{k}”: “{v}”" for k, v in CONTENT.items()) + "}",
    "pretty printed curly": "{\n" + ",\n".join(f"  “{k}”: “{v}”" for k, v in CONTENT.items()) + "\n}",
    "one stray closing quote": CLEAN_JSON.replace(f'{CONTENT["grip"]}"', f"{CONTENT['grip']}”"),
    "curly keys, straight values": "{" + ", ".join(f'“{k}”: "{v}"' for k, v in CONTENT.items()) + "}",
    "curly in a fence after prose": "Sure:\n```json\n{"
    + ", ".join(f"“{k}”: “{v}”" for k, v in CONTENT.items())
    + "}\n```",
}


@pytest.mark.parametrize("raw", CURLY.values(), ids=CURLY.keys())
def test_curly_quotes_used_as_delimiters_are_structural(raw: str) -> None:
    """Curly quotes where JSON's quotes belong delimit keys and values; the values come out exactly."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


def test_curly_quotes_inside_prose_are_kept() -> None:
    """Quotes that are prose stay in the value, curly or straight, whatever delimits the value."""
    grip = "He said “restart it”, then “wait”; the “cold” cache stayed."
    for raw in (
        json.dumps({**CONTENT, "grip": grip}, ensure_ascii=False).replace(
            f'"{CONTENT["loop"]}"', f'"{CONTENT["loop"]}”'
        ),
        "{" + ", ".join(f"“{k}”: “{v}”" for k, v in {**CONTENT, "grip": grip}.items()) + "}",
    ):
        result = validate_output(raw)
        assert result.status == "valid", (raw, result.errors)
        assert result.loop_output["grip"] == grip
    inner = straighten('{“hook”: “He wrote "stop" twice”}')
    assert json.loads(inner) == {"hook": 'He wrote "stop" twice'}


def test_doubled_braces_lose_one_at_each_end() -> None:
    """``{{...}}``, a prompt template's escaping copied back, is the object inside."""
    for raw in (
        "{" + CLEAN_JSON + "}",
        "Answer:\n{{" + CLEAN_JSON[1:-1] + "}}",
        "{{" + json.dumps({"output": CONTENT})[1:] + "}",
    ):
        result = validate_output(raw)
        assert result.status == "valid", (raw, result.errors)
        assert dict(result.loop_output) == CONTENT


def test_rewrites_never_rescue_what_is_not_an_answer() -> None:
    """Rewritten placeholders are still placeholders; curly prose without keys is still prose."""
    assert validate_output("{" + ", ".join(f"“{k}”: “string”" for k in FIELDS) + "}").status == "failed"
    assert validate_output("He said “hook, grip and loop” matter most.").status == "failed"
    assert validate_output(markdown_json(dict.fromkeys(FIELDS, "\\<your answer\\>"))).status == "failed"


# Values a template's special token is no part of: MiniMax's "]~!b[" is spelled with these characters, and a leaked
# token is removed from any value (tests/contract/test_special_tokens.py).
punctuated = (
    st.text(st.sampled_from("abcdef XYZ019_*[]#()!`-.~+"), min_size=1, max_size=60)
    .map(str.strip)
    .filter(lambda value: strip_special_tokens(value) == value)
)


@given(answers, st.sampled_from(FIELDS), punctuated)
def test_any_markdown_escaped_value_keeps_its_plain_characters(answer: dict[str, str], name: str, value: str) -> None:
    """Any JSON answer with Markdown escapes in its values reads each value without them."""
    content = {**answer, name: value}
    result = validate_output(markdown_json(content))
    assert dict(result.loop_output) == {key: text.strip() for key, text in content.items()}
    assert {issue.field for issue in result.errors} <= {name}


@given(answers)
def test_any_answer_with_curly_structural_quotes_validates_to_the_same_fields(answer: dict[str, str]) -> None:
    """Any JSON answer with every structural quote curly validates to the same fields."""
    raw = "{" + ", ".join(f"“{name}”: “{value}”" for name, value in answer.items()) + "}"
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


# -- damage of other kinds (issue 40): each undone exactly, so the values are the ones the model wrote -----------


def _pairs(key: str = '"{k}"', sep: str = ": ", value: str = '"{v}"', joiner: str = ", ") -> str:
    return "{" + joiner.join(f"{key.format(k=k)}{sep}{value.format(v=v)}" for k, v in CONTENT.items()) + "}"


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("html entities", CLEAN_JSON.replace('"', "&quot;")),
        ("numeric entities", CLEAN_JSON.replace('"', "&#34;")),
        ("full-width colons and commas", _pairs(sep="：", joiner="，")),
        ("full-width colons, spaced", _pairs(sep=" ： ")),
        ("backtick-quoted values", _pairs(value="`{v}`")),
    ],
)
def test_damaged_json_reads_to_the_values_written(name: str, raw: str) -> None:
    """JSON escaped for HTML, with full-width delimiters or backtick quotes: the same five values."""
    result = validate_output(raw)
    assert result.status == "valid", (name, result.errors)
    assert dict(result.loop_output) == CONTENT


def test_concatenated_string_literals_are_one_value() -> None:
    """``"The p99 " + "tripled"`` is one string, as the language that wrote it says."""
    grip = CONTENT["grip"]
    raw = CLEAN_JSON.replace(json.dumps(grip), json.dumps(grip[:20]) + " + " + json.dumps(grip[20:]))
    result = validate_output(raw)
    assert result.status == "valid" and result.loop_output["grip"] == grip


def test_an_apostrophe_inside_a_single_quoted_value_is_content() -> None:
    """``{'loop': 'the team's plan?'}``: the apostrophe inside a word neither ends the value nor cuts the answer."""
    answer = {**CONTENT, "loop": "Should we follow the team's plan or the vendor's runbook?"}
    raw = "{" + ", ".join(f"'{k}': '{v}'" for k, v in answer.items()) + "}"
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == answer


def test_a_backslash_before_a_letter_json_gives_no_meaning_is_the_letter() -> None:
    """``\\L`` is no JSON escape: JSON5 and JavaScript read it as ``L``, so the labelled text in the string reads."""
    text = "\\n".join(f"{name.title()}: {value}" for name, value in CONTENT.items()).replace("\\nLoop", "\\n\\\\Loop")
    raw = '{\n"action": "Final Answer",\n"action_input": "' + text.replace("\\\\Loop", "\\Loop") + '"\n}'
    result = validate_output(raw)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT, raw
    value = json.dumps({**CONTENT, "payoff": "Restart"}).replace('"Restart"', '"\\Restart"')
    assert validate_output(value).loop_output["payoff"] == "Restart"


def test_escapes_json5_defines_otherwise_are_left_to_the_repair() -> None:
    assert unescape_stray(r"\v \x41 \0 \u0041 \L \_") == r"\v \x41 \0 \u0041 L _"
