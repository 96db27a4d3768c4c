"""Leaked special tokens: removed from the text and every value, never shown to a user nor handed on as a hook."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.chain import plan_transition
from marsrag.contract import validate_output
from marsrag.contract._tokens import may_have_tokens, strip_special_tokens, strip_trailing_tokens
from marsrag.contract._turns import may_end_early
from marsrag.contract.catalog import CHAT_TEMPLATES
from marsrag.state import LoopFields, TaskState, Validation
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled
from tests.contract.strategies import answers

TOKENS = [
    "<eos>",
    "</s>",
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|end_of_text|>",
    "<|eom_id|>",
    "[EOS]",
    "<end_of_turn>",
    "<|endoftext|>",
    "<｜end▁of▁sentence｜>",
    "<EOT>",
    "<|EOT|>",
    "[/INST]",
    "<|return|>",
    # EXAONE writes its tokens barred in square brackets; InternLM's first chat models end an answer with <eoa>.
    "[|endofturn|]",
    "<eoa>",
]


#: Every token a catalogued chat template defines, whatever its shape (TeleChat's ``<_end>``, GLM's ``[gMASK]``).
CATALOGUED = sorted({token for t in CHAT_TEMPLATES for token in (*t.ends, *t.starts, *t.message_ends, *t.prefixes)})


def collapse(text: str | None) -> str:
    return " ".join((text or "").split())


@pytest.mark.parametrize("token", TOKENS)
def test_a_token_after_the_answer_is_removed(token: str) -> None:
    """JSON or labels followed by a leaked token validate to the same fields."""
    for raw in (CLEAN_JSON + token, labelled("{L}: {v}") + token, f"```json\n{CLEAN_JSON}\n```{token}"):
        result = validate_output(raw)
        assert result.status == "valid", (raw, result.errors)
        assert dict(result.loop_output) == CONTENT


@pytest.mark.parametrize("token", TOKENS)
def test_a_token_glued_inside_a_value_is_removed(token: str) -> None:
    """A token inside the loop's string (valid JSON as written) never reaches the value, so never the next hook."""
    raw = CLEAN_JSON.replace(CONTENT["loop"], CONTENT["loop"] + token)
    result = validate_output(raw)
    assert result.status == "valid" and result.loop_output["loop"] == CONTENT["loop"]
    state = TaskState(
        run_id="r",
        task_id="diagnose",
        position=0,
        loop_mode="hard",
        validation=Validation(status=result.status, errors=[]),
        loop_output=LoopFields(**result.loop_output),
    )
    assert plan_transition(state, "recommend").hook == CONTENT["loop"]


@pytest.mark.parametrize("token", CATALOGUED)
def test_every_catalogued_token_glued_to_an_answer_is_removed(token: str) -> None:
    """Each chat template's tokens, of any shape: glued after a JSON answer, into a JSON value, or to a labelled
    answer's last value, the answer validates to exactly its five values."""
    inside_json = CLEAN_JSON.replace(CONTENT["hook"], CONTENT["hook"] + token)
    labels = labelled("{L}: {v}")
    for raw in (CLEAN_JSON + token, inside_json, labels.replace(CONTENT["loop"], CONTENT["loop"] + token)):
        result = validate_output(raw)
        assert result.status == "valid", (raw, result.errors)
        assert dict(result.loop_output) == CONTENT, raw
    # The cheap gates see every one, and the removal leaves nothing of it.
    assert may_have_tokens(token) and may_end_early(token)
    assert strip_special_tokens(f"a{token}b") == "ab" and strip_trailing_tokens(f"a {token}\n") == "a"


@pytest.mark.parametrize("markup", ["<b>", "<hook>", "<br/>", "[1]", "<sup>", "[note]", "]~["])
def test_markup_no_catalogued_template_defines_stays(markup: str) -> None:
    """Ordinary markup is neither a token nor a turn boundary: glued into a value, it stays as written."""
    loop = f"{CONTENT['loop']} {markup}x."  # (a sentence's end: a loop stopping mid-sentence was cut)
    assert strip_special_tokens(loop) == loop and strip_trailing_tokens(loop + markup) == loop + markup
    for raw in (json.dumps({**CONTENT, "loop": loop}), labelled("{L}: {v}", content={**CONTENT, "loop": loop})):
        result = validate_output(raw)
        assert result.status == "valid" and result.loop_output["loop"] == loop, (raw, result.loop_output)


def test_turn_tokens_take_their_role_with_them() -> None:
    """A leaked chat-template turn start (``<|im_start|>assistant``) leaves neither the token nor the role."""
    for raw in (
        f"<|im_start|>assistant\n{CLEAN_JSON}<|im_end|>",
        f"<|start_header_id|>assistant<|end_header_id|>\n\n{labelled('{L}: {v}')}<|eot_id|>",
        f"<start_of_turn>model\n{CLEAN_JSON}<end_of_turn>",
        f"<s>[INST] answer [/INST] {CLEAN_JSON}</s>",
        f"[|assistant|]{labelled('{L}: {v}')}[|endofturn|]",
    ):
        result = validate_output(raw)
        assert result.status == "valid" and dict(result.loop_output) == CONTENT, raw


def test_tokens_that_end_no_turn_between_sections_are_removed() -> None:
    """Padding and unknown-piece tokens repeated between and inside sections are gone from every value."""
    raw = labelled("{L}: {v}<pad><unk>", "\n[PAD]")
    result = validate_output(raw)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_sections_after_an_end_of_turn_token_are_not_the_answer() -> None:
    """The answer ends at the first end-of-turn token: sections written after it are not part of it."""
    raw = labelled("{L}: {v}<|eot_id|>", "\n")
    result = validate_output(raw)
    assert result.status == "failed" and result.loop_output["hook"] == CONTENT["hook"]
    assert result.loop_output["grip"] is None


def test_markup_and_prose_brackets_are_not_tokens() -> None:
    """Only token shapes go: ``<b>``, a ``<hook>`` tag and ``[pad]`` in prose stay as written."""
    grip = "Use <b>bold</b> and [pad] the buffer, or <em>[Note]</em> it."
    result = validate_output(json.dumps({**CONTENT, "grip": grip}))
    assert result.loop_output["grip"] == grip
    assert validate_output(labelled("<{l}>{v}</{l}>")).status == "valid"


@pytest.mark.parametrize("raw", ["<|eot_id|>", "</s>", " <|im_end|>\n[EOS] ", "<|im_start|>assistant\n<|im_end|>"])
def test_an_output_of_only_tokens_is_empty(raw: str) -> None:
    """Nothing but tokens is failed as empty, and says the output held only special tokens."""
    result = validate_output(raw)
    assert result.status == "failed" and result.errors[0].code == "empty"
    assert "special tokens" in result.errors[0].message


def test_a_token_after_a_cut_value_keeps_the_cut() -> None:
    """The provider stopped on a token mid-value: the value is still cut, the token still removed."""
    raw = CLEAN_JSON[:-20] + "<|eot_id|>"
    result = validate_output(raw)
    assert {issue.field: issue.code for issue in result.errors} == {"loop": "truncated"}
    assert "<|" not in (result.loop_output["loop"] or "")


token_names = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="_"), min_size=1)
tokens = st.one_of(st.sampled_from(TOKENS), token_names.map(lambda name: f"<|{name[:40]}|>"))


@given(answers, tokens, st.booleans())
def test_any_valid_answer_with_a_token_appended_validates_to_the_same_fields(
    answer: dict[str, str], token: str, inside: bool
) -> None:
    """Any valid answer with a special token appended (after the text, or glued to a value) is the same answer."""
    if inside:
        raw = json.dumps({name: value + token for name, value in answer.items()})
    else:
        raw = json.dumps(answer) + token
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert {name: collapse(value) for name, value in result.loop_output.items()} == answer


@pytest.mark.parametrize("fragment", ["&lt;endoftext|", "<|im_end", "eot_id|>", "&lt;|im_end|&gt;", "<end_of_turn"])
def test_a_token_a_chat_ui_partly_ate_or_escaped_is_removed_from_the_end(fragment: str) -> None:
    raw = labelled("{L}: {v}") + fragment
    result = validate_output(raw)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT, result.loop_output


def test_a_token_name_without_its_marks_is_content() -> None:
    loop = "Should we check the endoftext handling"
    result = validate_output(labelled("{L}: {v}", content={**CONTENT, "loop": loop}))
    assert result.loop_output["loop"] == loop


def test_the_end_of_another_tag_is_no_token_fragment() -> None:
    """``call>`` closing ``<end_function_call>`` ends like harmony's ``<|call|>`` but starts inside a word."""
    from marsrag.contract._tokens import strip_token_fragment

    assert strip_token_fragment("x}<end_function_call>") == "x}<end_function_call>"
    assert strip_token_fragment("Done? eot_id|>") == "Done? "
