"""Encoded answers: one layer of encoding is removed when that is what makes the contract fields visible."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, validate_output
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled
from tests.contract.strategies import answers

PRETTY = json.dumps(CONTENT, indent=2)
LABELS = labelled("{n}. {L}: {v}")


def escape_once(text: str) -> str:
    """``text`` as it would sit inside a JSON string, without the outer quotes."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


ENCODED = {
    "escaped quotes, no outer string": escape_once(CLEAN_JSON),
    "escaped pretty json, no outer string": escape_once(PRETTY),
    "escaped quotes after prose": "Output: " + escape_once(CLEAN_JSON),
    "escaped quotes in a fence": f"```json\n{escape_once(CLEAN_JSON)}\n```",
    "json string holding labels": json.dumps(LABELS),
    "json string holding bold labels": json.dumps(labelled("**{T}:** {v}", "\n\n")),
    "labels with \\n escapes, no quotes": escape_once(LABELS),
    "wrapper holding labelled text": json.dumps({"output": LABELS}),
    "tool call, arguments as a json string": json.dumps({"name": "LoopOutput", "arguments": CLEAN_JSON}),
    "tool call, parameters as a json string": json.dumps({"name": "LoopOutput", "parameters": PRETTY}),
    "tool call, arguments as an object": json.dumps({"name": "LoopOutput", "arguments": CONTENT}),
    "openai tool call": json.dumps(
        {"id": "call_1", "type": "function", "function": {"name": "LoopOutput", "arguments": CLEAN_JSON}}
    ),
    "tool_calls list": json.dumps({"tool_calls": [{"function": {"name": "LoopOutput", "arguments": CLEAN_JSON}}]}),
    "anthropic tool use": json.dumps({"type": "tool_use", "id": "t1", "name": "LoopOutput", "input": CONTENT}),
    "hermes tool call tags": f'<tool_call>\n{{"name": "LoopOutput", "arguments": {CLEAN_JSON}}}\n</tool_call>',
    "mistral tool calls token": f'[TOOL_CALLS] [{{"name": "LoopOutput", "arguments": {CLEAN_JSON}}}]',
    "llama python tag": f'<|python_tag|>{{"name": "LoopOutput", "parameters": {CLEAN_JSON}}}',
    "chat message with content": json.dumps({"role": "assistant", "content": CLEAN_JSON}),
    "a whole chat completion": json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": CLEAN_JSON}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2},
        }
    ),
    "ollama chat response with labels": json.dumps(
        {"model": "m", "message": {"role": "assistant", "content": LABELS}, "done": True}
    ),
}


@pytest.mark.parametrize("raw", ENCODED.values(), ids=ENCODED.keys())
def test_encoded_answers_are_decoded_one_layer(raw: str) -> None:
    """Each encoding is removed once and the answer inside validates exactly."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert {name: " ".join((value or "").split()) for name, value in result.loop_output.items()} == CONTENT


def test_a_mapping_input_is_unwrapped_the_same_way() -> None:
    """A parsed tool call or a wrapper around labelled text, handed over as a dict, gives the same answer."""
    assert validate_output({"name": "LoopOutput", "arguments": CLEAN_JSON}).status == "valid"
    assert validate_output({"output": LABELS}).status == "valid"


def test_a_layer_is_removed_only_when_it_shows_the_fields() -> None:
    """Escapes in valid JSON values stay JSON escapes; a string holding no answer gives no answer."""
    grip = 'He said "restart"\nthen waited.'
    result = validate_output(json.dumps({**CONTENT, "grip": grip}))
    assert result.status == "valid" and result.loop_output["grip"] == grip
    assert validate_output(json.dumps("Just a sentence about caches.")).status == "failed"
    assert validate_output(json.dumps({"name": "LoopOutput", "arguments": "{}"})).status == "failed"
    assert validate_output(escape_once(json.dumps({"answer": "yes"}))).status == "failed"


def test_an_envelope_with_several_answers_keeps_the_best() -> None:
    """Two tool calls side by side in one object: the one that validates wins, not the first."""
    raw = json.dumps({"draft": {"name": "x", "arguments": json.dumps(dict.fromkeys(FIELDS, "TBD"))}, "final": CONTENT})
    assert validate_output(raw).status == "valid"


CUT = {
    "escaped quotes": escape_once(CLEAN_JSON)[:-25],
    "tool call arguments string": json.dumps({"name": "LoopOutput", "arguments": CLEAN_JSON})[:-25],
    "json string of labels": json.dumps(LABELS)[:-12],
    "labels with \\n escapes": escape_once(LABELS)[:-12] + "\\n",
}


@pytest.mark.parametrize("raw", CUT.values(), ids=CUT.keys())
def test_a_cut_inside_an_encoded_answer_is_truncated(raw: str) -> None:
    """Truncation holds one layer down: a value cut inside the encoding fails truncated, never valid."""
    result = validate_output(raw, cut=True)
    assert result.status != "valid"
    assert {issue.code for issue in result.errors if issue.field == "loop"} == {"truncated"}


@given(answers, st.booleans())
def test_any_json_answer_with_its_quotes_escaped_once_validates_to_the_same_fields(
    answer: dict[str, str], pretty: bool
) -> None:
    """Any JSON answer written one layer too deep (every quote escaped, no outer string) is the same answer."""
    raw = escape_once(json.dumps(answer, indent=2 if pretty else None))
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


@given(answers)
def test_any_tool_call_with_encoded_arguments_validates_to_the_same_fields(answer: dict[str, str]) -> None:
    """Any answer passed as a tool call's JSON-encoded ``arguments`` is the same answer."""
    raw = json.dumps({"name": "LoopOutput", "arguments": json.dumps(answer)})
    assert dict(validate_output(raw).loop_output) == answer


def pairs(keys: tuple[str, str], answer: dict[str, str] = CONTENT, title: bool = False) -> list[dict[str, str]]:
    return [{keys[0]: name.title() if title else name, keys[1]: value} for name, value in answer.items()]


NAMED_VALUES = {
    "type and content": json.dumps({"response": pairs(("type", "content"))}),
    "name and value, titled": json.dumps(pairs(("name", "value"), title=True)),
    "value first": json.dumps([{"text": value, "section": name} for name, value in CONTENT.items()]),
    "with a non-string entry": json.dumps([{"id": i, "key": n, "val": v} for i, (n, v) in enumerate(CONTENT.items())]),
    "in a fence, in prose": "Here you go:\n```json\n" + json.dumps({"sections": pairs(("field", "body"))}) + "\n```",
}


@pytest.mark.parametrize("raw", NAMED_VALUES.values(), ids=NAMED_VALUES.keys())
def test_a_list_of_name_value_objects_is_an_answer(raw: str) -> None:
    """Each object names a field in one string and holds its value in the other, whatever the keys are called."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


NOT_NAMED_VALUES = {
    "a field named twice": pairs(("type", "content")) + [{"type": "hook", "content": "Another hook entirely."}],
    "an item without a field name": pairs(("type", "content")) + [{"type": "note", "content": "Extra."}],
    "three strings in an item": [{**item, "lang": "en"} for item in pairs(("type", "content"))],
    "both strings name fields": [{"type": "hook", "content": "loop"}, *pairs(("type", "content"))[1:]],
    "one field missing": pairs(("type", "content"))[:4],
}


@pytest.mark.parametrize("items", NOT_NAMED_VALUES.values(), ids=NOT_NAMED_VALUES.keys())
def test_a_list_that_is_not_one_object_per_field_is_no_answer(items: list[dict[str, str]]) -> None:
    """Anything but exactly one name and one value per item, each field once, is data: never valid."""
    assert validate_output(json.dumps({"response": items})).status != "valid"


def chunks(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


STREAMS = {
    "ollama generate": lambda piece, i: {"model": "m", "created_at": f"2024-11-24T07:05:{i:02d}Z", "response": piece},
    "openai chat chunks": lambda piece, i: {"id": "c1", "choices": [{"index": 0, "delta": {"content": piece}}]},
    "anthropic deltas": lambda piece, i: {"type": "content_block_delta", "index": 0, "delta": {"text": piece}},
}


@pytest.mark.parametrize("chunk", STREAMS.values(), ids=STREAMS.keys())
@pytest.mark.parametrize("answer", [CLEAN_JSON, LABELS], ids=["json", "labels"])
def test_a_stream_of_chunks_pasted_raw_reads_as_the_text_it_spells(chunk: Any, answer: str) -> None:
    """One JSON object per chunk, the answer in pieces under one key: the pieces joined are the answer, whichever
    key holds them and whatever metadata varies beside them."""
    raw = "\n".join(json.dumps(chunk(piece, i)) for i, piece in enumerate(chunks(answer)))
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


def test_a_stream_cut_inside_a_json_answer_is_truncated() -> None:
    """The joined pieces are judged as any text is: a JSON answer whose last string never closed was cut."""
    pieces = chunks(CLEAN_JSON)[:-4]
    raw = "\n".join(json.dumps({"response": piece, "done": False}) for piece in pieces)
    result = validate_output(raw)
    assert result.status == "partial" and {issue.field: issue.code for issue in result.errors} == {"loop": "truncated"}


@pytest.mark.parametrize("answer", [CLEAN_JSON, LABELS], ids=["json", "labels"])
def test_log_records_that_stop_mid_line_were_cut(answer: str) -> None:
    """A container's log, one record per line (each piece ends in a line break): a record without its line break,
    with records after it (the process restarted), stopped mid-line; the text ends there and was cut."""
    lines = [line + "\n" for line in answer.split("\n")]
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    lines += ["INFO starting worker v2.3.1 (pid 1)\n", "INFO resuming queue from offset 55182\n"]
    raw = "\n".join(
        json.dumps({"log": line, "stream": "stdout", "time": f"03:14:{i:02}Z"}) for i, line in enumerate(lines)
    )
    assert validate_output(raw).status != "valid"
    whole = [line + "\n" for line in answer.split("\n")] + ["INFO starting worker v2.3.1 (pid 1)\n"]
    raw = "\n".join(
        json.dumps({"log": line, "stream": "stdout", "time": f"03:14:{i:02}Z"}) for i, line in enumerate(whole)
    )
    assert validate_output(raw).ok


def test_a_list_of_messages_is_no_stream() -> None:
    """The prompt's messages and the answer's are no pieces of one text: a draft in the user's message is never
    read, joined to the system's or on its own."""
    messages = [
        {"role": "system", "content": "You review incident summaries. Reply briefly."},
        {"role": "user", "content": "Here is my draft, does it look right?\n" + LABELS},
    ]
    value = {"input": messages, "output": {"role": "assistant", "content": "Yes, send it."}}
    assert validate_output(json.dumps(value, indent=2)).status == "failed"


def test_markup_in_one_string_of_a_json_document_keys_nothing_across_the_others() -> None:
    """A prompt's ``<loop>`` in one string and the answer's tags in another: the document is read through its
    structure, so the answer's tags are read, and the prompt's words never become a field."""
    tagged = "".join(f"<{name}>{value}</{name}>\n" for name, value in CONTENT.items())
    value = {
        "prompt": {"raw": "Wrap each part in <hook>, <grip>, <payoff>, <reinforce>, <loop> tags."},
        "response": {"output": tagged},
        "assert": [{"type": "contains", "value": "<loop>"}],
    }
    result = validate_output(json.dumps(value, indent=2))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_a_chat_log_in_json_lines_reads_the_message_holding_the_answer() -> None:
    """Messages joined spell no answer (the question glued to it): the one message that holds it is read."""
    lines = [
        {"user_name": "Priya", "character_name": "OpsBot", "chat_metadata": {"note_prompt": ""}},
        {"name": "Priya", "is_user": True, "mes": "Jenkins agents keep failing checkout. What's going on?"},
        {"name": "OpsBot", "is_user": False, "mes": labelled("{l}: {v}"), "swipes": [labelled("{l}: {v}")]},
    ]
    result = validate_output("\n".join(json.dumps(line) for line in lines))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_a_list_of_records_is_no_stream() -> None:
    """Rows of data whose text leaves hold no answer spell none: never valid."""
    raw = "\n".join(json.dumps({"id": i, "name": f"node-{i}", "status": "ok"}) for i in range(40))
    assert validate_output(raw).status == "failed"


SEVERAL_BLOCKS = {
    "anthropic content blocks": {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "Cold caches again."}, {"type": "text", "text": LABELS}],
    },
    "responses api output items": {
        "output": [
            {"type": "reasoning", "summary": []},
            {"type": "message", "content": [{"type": "output_text", "text": CLEAN_JSON}]},
        ]
    },
    "a chat log": [{"role": "user", "message": "why are the regions slow?"}, {"role": "assistant", "message": LABELS}],
    "a tool call beside a note": [{"note": "final"}, {"name": "final_answer", "arguments": CONTENT}],
}


@pytest.mark.parametrize("value", SEVERAL_BLOCKS.values(), ids=SEVERAL_BLOCKS.keys())
def test_the_one_block_of_a_list_that_holds_an_answer_is_the_answer(value: Any) -> None:
    result = validate_output(json.dumps(value))
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


def test_a_list_whose_blocks_each_hold_an_answer_chooses_none() -> None:
    other = {**CONTENT, "loop": "Which region first?"}
    raw = json.dumps([{"role": "assistant", "content": CLEAN_JSON}, {"role": "assistant", "content": other}])
    assert validate_output(raw).status != "valid"


DRAFT = "Hook: a draft. Grip: a draft. Payoff: a draft. Reinforce: a draft. Loop: a draft?"
REASONING_ONLY = {
    "bedrock reasoningContent": {
        "output": {
            "message": {
                "content": [{"reasoningContent": {"reasoningText": {"text": DRAFT}}}, {"text": "Which pool is it?"}]
            }
        }
    },
    "deepseek reasoning_content": {"choices": [{"message": {"reasoning_content": DRAFT, "content": "Which pool?"}}]},
    "gemini thought part": {"candidates": [{"content": {"parts": [{"text": DRAFT, "thought": True}, {"text": "?"}]}}]},
    "anthropic thinking block": {"content": [{"type": "thinking", "thinking": DRAFT}, {"type": "text", "text": "?"}]},
    "responses reasoning item": {
        "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": DRAFT}]}, {"type": "message"}]
    },
}


@pytest.mark.parametrize("value", REASONING_ONLY.values(), ids=REASONING_ONLY.keys())
def test_an_answer_only_in_a_responses_reasoning_is_no_answer(value: Any) -> None:
    """A response's reasoning, however its API marks it (a key, a type, a flag), is never the answer: the text it
    gave the user is, and here that holds no fields."""
    for raw in (json.dumps(value), json.dumps(value, indent=2)):
        assert validate_output(raw).status == "failed", raw


def test_the_answer_beside_a_responses_reasoning_is_read() -> None:
    value = {"choices": [{"message": {"reasoning_content": DRAFT, "content": LABELS}}]}
    result = validate_output(json.dumps(value, indent=2))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_a_responses_text_in_several_parts_reads_joined() -> None:
    """Gemini gives a candidate's text in several parts: the answer is the parts joined, not the first alone."""
    half = len(LABELS) // 2
    parts = [{"text": LABELS[:half]}, {"text": LABELS[half:]}]
    value = {"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP"}]}
    result = validate_output(json.dumps(value, indent=2))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


@pytest.mark.parametrize("count", [2, 5, 40])
def test_stream_chunks_collected_in_an_array_read_joined(count: int) -> None:
    size = len(CLEAN_JSON) // count + 1
    pieces = [CLEAN_JSON[i : i + size] for i in range(0, len(CLEAN_JSON), size)]
    chunks = [{"candidates": [{"content": {"parts": [{"text": piece}], "role": "model"}}]} for piece in pieces]
    for raw in (json.dumps(chunks, indent=2), "\n\n".join(f"data: {json.dumps(chunk)}" for chunk in chunks)):
        result = validate_output(raw)
        assert result.status == "valid" and dict(result.loop_output) == CONTENT, raw[:200]


def test_an_api_response_with_dozens_of_metadata_keys_is_still_an_envelope() -> None:
    metadata = {f"meta_{i}": None for i in range(30)}
    value = {**metadata, "output": [{"type": "message", "content": [{"type": "output_text", "text": LABELS}]}]}
    result = validate_output(json.dumps(value))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT
