"""Structured-output modes: the ladders, the schema and grammar sent, what counts as a refusal, the negotiator."""

from __future__ import annotations

import json
import re

import httpx
import jsonschema
import openai
import pytest

from marsrag.llm.replay import ScriptedHTTPError
from marsrag.llm.structured import (
    PROMPT,
    Negotiator,
    contract_grammar,
    decoding_schema,
    is_refusal,
    ladder,
)
from tests.contract.samples import CONTENT, FIELDS
from tests.llm.refusals import NOT_REFUSALS, REFUSALS


def response_format(offer: object) -> object:
    return getattr(offer, "fields", {}).get("response_format")


# -- ladders ---------------------------------------------------------------------------------------------


def test_auto_steps_from_json_schema_to_json_object_with_schema_to_plain_json_object_to_prompt() -> None:
    """auto: json_schema, json_object carrying the schema, plain json_object, then prompt; never grammar."""
    offers = ladder("auto")
    assert [o.mode for o in offers] == ["json_schema", "json_object", "json_object", "prompt"]
    first, with_schema, plain, last = offers
    assert response_format(first) == {
        "type": "json_schema",
        "json_schema": {"name": "LoopOutput", "strict": True, "schema": decoding_schema()},
    }
    assert response_format(with_schema) == {"type": "json_object", "schema": decoding_schema()}
    assert response_format(plain) == {"type": "json_object"}
    assert last is PROMPT and not last.constrains and not last.fields and not last.extra_body
    assert all(not o.extra_body for o in offers)  # no grammar field anywhere under auto


@pytest.mark.parametrize(
    ("setting", "modes"),
    [
        ("json_schema", ["json_schema", "prompt"]),
        ("json_object", ["json_object", "json_object", "prompt"]),
        ("grammar", ["grammar", "prompt"]),
        ("prompt", ["prompt"]),
    ],
)
def test_an_explicit_mode_tries_its_own_offers_then_prompt(setting: str, modes: list[str]) -> None:
    """An explicit setting never steps into another mode: its offers, then prompt."""
    assert [o.mode for o in ladder(setting)] == modes


def test_the_grammar_offer_sends_the_grammar_in_the_request_body() -> None:
    """grammar: no response_format; the GBNF goes as an extra body field the OpenAI SDK passes on."""
    offer = ladder("grammar")[0]
    assert dict(offer.fields) == {} and dict(offer.extra_body) == {"grammar": contract_grammar()}
    params: dict[str, object] = {"response_format": {"type": "json_schema"}, "extra_body": {"top_k": 40}}
    offer.apply(params)
    assert params == {"extra_body": {"top_k": 40, "grammar": contract_grammar()}}


def test_an_unknown_setting_is_refused_naming_the_values() -> None:
    """A typo is a ValueError listing the allowed settings."""
    with pytest.raises(ValueError, match="auto, json_schema, json_object, grammar, prompt, got 'strict'"):
        ladder("strict")


# -- the schema and the grammar ---------------------------------------------------------------------------


def test_decoding_schema_is_five_required_strings_of_1_to_800_characters() -> None:
    """The schema carries the contract's limits and nothing else (no patterns, no descriptions)."""
    schema = decoding_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == list(FIELDS) and list(schema["properties"]) == list(FIELDS)
    for name in FIELDS:
        assert schema["properties"][name] == {"type": "string", "minLength": 1, "maxLength": 800}
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(CONTENT)
    assert not validator.is_valid({**CONTENT, "payoff": ""})
    assert not validator.is_valid({**CONTENT, "payoff": "x" * 801})
    assert validator.is_valid({**CONTENT, "payoff": "x" * 800})
    assert not validator.is_valid({k: v for k, v in CONTENT.items() if k != "loop"})
    assert not validator.is_valid({**CONTENT, "extra": "no"})


def test_contract_grammar_is_gbnf_with_the_five_keys_in_order() -> None:
    """Every rule is `name ::= body`, every rule used is defined, root names the keys in contract order."""
    grammar = contract_grammar()
    assert grammar.strip()
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    assert all(re.fullmatch(r"[a-z][a-z0-9-]*", name) for name in rules)
    assert "root" in rules
    # Names used outside string literals and character classes must be defined rules.
    for body in rules.values():
        bare = re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', " ", body)
        for used in re.findall(r"[a-z][a-z0-9-]*", bare):
            assert used in rules, f"{used!r} is used but not defined"
    keys = re.findall(r'"\\"([a-z]+)\\""', rules["root"])
    assert keys == list(FIELDS)
    assert rules["root"].startswith('"{"') and rules["root"].endswith('"}"')
    # One leading non-space character and at most 799 more: 1-800 characters, non-empty once trimmed.
    assert rules["value"] == '"\\"" lead char{0,799} "\\""'
    assert "\\x20" in rules["lead"] and "\\x20" not in rules["char"]


# -- refusals --------------------------------------------------------------------------------------------


def sdk_error(status: int, body: str) -> openai.APIStatusError:
    """The error the OpenAI SDK raises for an HTTP error response (what CrewAI's OpenAI provider surfaces)."""
    request = httpx.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    response = httpx.Response(status, request=request, text=body)
    return openai.APIStatusError(f"Error code: {status} - {body}", response=response, body=json.loads(body))


@pytest.mark.parametrize("family", sorted(REFUSALS))
def test_each_familys_refusal_is_a_refusal(family: str) -> None:
    """A scripted refusal, the SDK's error, and the SDK's error re-raised by CrewAI are all refusals."""
    status, body = REFUSALS[family]
    assert is_refusal(ScriptedHTTPError(status, body))
    error = sdk_error(status, body)
    assert is_refusal(error)
    try:
        try:
            raise error
        except openai.APIStatusError as inner:
            raise RuntimeError("OpenAI API call failed") from inner
    except RuntimeError as outer:
        assert is_refusal(outer)


@pytest.mark.parametrize("case", sorted(NOT_REFUSALS))
def test_other_http_errors_are_not_refusals(case: str) -> None:
    """A bad key, a missing model, a rate limit (even naming response_format), an unrelated 5xx or 400."""
    status, body = NOT_REFUSALS[case]
    assert not is_refusal(ScriptedHTTPError(status, body))
    assert not is_refusal(sdk_error(status, body))


@pytest.mark.parametrize("status", [401, 403, 404, 408, 429])
def test_statuses_that_mean_something_else_are_never_refusals(status: int) -> None:
    """Even a body naming the parameter does not make these statuses refusals."""
    assert not is_refusal(ScriptedHTTPError(status, "response_format json_schema is not supported"))


@pytest.mark.parametrize(
    "error",
    [
        ConnectionError("Connection refused"),
        TimeoutError("response_format took too long"),  # no status: a transport failure, not a refusal
        ValueError("json_schema"),
    ],
    ids=["connection", "timeout", "no status"],
)
def test_errors_without_an_http_status_are_not_refusals(error: BaseException) -> None:
    """Without an HTTP status there is no server answer to read as a refusal."""
    assert not is_refusal(error)


# -- the negotiator --------------------------------------------------------------------------------------


def test_the_negotiator_remembers_per_endpoint_model_and_setting() -> None:
    """A refusal moves that key and setting one rung down; other keys and settings are untouched."""
    negotiator = Negotiator()
    server, other_model, other_server = ("gpu:8080", "qwen"), ("gpu:8080", "llama"), ("cpu:8080", "qwen")
    first, with_schema, plain, prompt = ladder("auto")
    assert negotiator.current(server, "auto") is first
    assert negotiator.refused(server, "auto", first) is with_schema
    assert negotiator.current(server, "auto") is with_schema
    assert negotiator.current(other_model, "auto") is first
    assert negotiator.current(other_server, "auto") is first
    assert negotiator.current(server, "json_schema") is ladder("json_schema")[0]
    assert negotiator.refused(server, "auto", with_schema) is plain
    assert negotiator.refused(server, "auto", plain) is prompt
    assert negotiator.current(server, "auto") is prompt
    negotiator.forget()
    assert negotiator.current(server, "auto") is first


def test_a_late_refusal_of_an_earlier_offer_never_moves_back_up() -> None:
    """Two calls in flight both refused json_schema: the step stays where the farthest refusal put it."""
    negotiator = Negotiator()
    key = ("gpu:8080", "qwen")
    first, with_schema, plain, _ = ladder("auto")
    negotiator.refused(key, "auto", first)
    negotiator.refused(key, "auto", with_schema)
    assert negotiator.refused(key, "auto", first) is plain
    assert negotiator.current(key, "auto") is plain


@pytest.mark.parametrize("setting", ["auto", "json_schema", "json_object", "grammar", "prompt"])
def test_refused_on_the_last_rung_is_none(setting: str) -> None:
    """prompt refused: nothing is left to step to."""
    negotiator = Negotiator()
    key = ("gpu:8080", "qwen")
    assert negotiator.refused(key, setting, ladder(setting)[-1]) is None


@pytest.mark.parametrize(
    ("setting", "enforcing"),
    [
        ("auto", [True, True, False, False]),  # json_schema, json_object with its schema, plain json_object, prompt
        ("json_schema", [True, False]),
        ("json_object", [True, False, False]),
        ("grammar", [True, False]),
        ("prompt", [False]),
    ],
)
def test_an_offer_enforces_the_form_when_it_carries_the_schema_or_the_grammar(
    setting: str, enforcing: list[bool]
) -> None:
    """OpenAI's plain JSON mode makes the answer JSON, not the contract's: it does not enforce the form."""
    assert [offer.enforces_form for offer in ladder(setting)] == enforcing
