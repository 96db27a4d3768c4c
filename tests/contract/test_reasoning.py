"""Reasoning blocks: the answer after the thinking is what counts, nothing inside it ever becomes a field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, validate_output
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled
from tests.contract.strategies import answers

PRETTY = json.dumps(CONTENT, indent=2)
LABELS = labelled("{n}. {L}: {v}")
# Thinking that holds a draft answer in every form the parser reads: none of it may reach a field.
DRAFT = (
    "The user wants five sections. Draft:\nHOOK: A draft hook.\nGRIP: A draft grip.\n"
    '{"hook": "draft", "grip": "draft", "payoff": "draft", "reinforce": "draft", "loop": "draft?"}\n'
    "PAYOFF: A draft payoff.\nREINFORCE: A draft reinforcement.\nLOOP: A draft loop?"
)

ANSWERED = {
    "closed think block, json": f"<think>\n{DRAFT}\n</think>\n\n{CLEAN_JSON}",
    "closed think block, labels": f"<think>\n{DRAFT}\n</think>\n\n{LABELS}",
    "closed think block, fenced json": f"<think>\n{DRAFT}\n</think>\n\nHere it is:\n```json\n{PRETTY}\n```",
    "empty think block (reasoning switched off)": f"<think>\n\n</think>\n\n{CLEAN_JSON}",
    "think block glued to the answer": f"<think>{DRAFT}</think>{CLEAN_JSON}",
    "closing tag only (opening in the prompt)": f"{DRAFT}\n</think>\n\n{CLEAN_JSON}",
    "closing tag only, labels": f"Let me think.\n{DRAFT}</think>\n{LABELS}",
    "thinking tag": f"<thinking>{DRAFT}</thinking>\n{LABELS}",
    "thought tag with attribute": f'<thought type="plan">{DRAFT}</thought>\n{CLEAN_JSON}',
    "reasoning tag in capitals": f"<REASONING>{DRAFT}</REASONING>\n{CLEAN_JSON}",
    "namespaced think tag": f"<mm:think>{DRAFT}</mm:think>\n{CLEAN_JSON}",
    "bracket think marks": f"[THINK]{DRAFT}[/THINK]\n{LABELS}",
    "kimi think marks": f"◁think▷{DRAFT}◁/think▷{CLEAN_JSON}",
    "begin/end of thought tokens": f"<|begin_of_thought|>{DRAFT}<|end_of_thought|>\n{LABELS}",
    "ollama thinking lines": f"Thinking...\n{DRAFT}\n...done thinking.\n\n{CLEAN_JSON}",
    "harmony channels": (
        f"<|channel|>analysis<|message|>{DRAFT}<|end|><|start|>assistant<|channel|>final<|message|>"
        f"{CLEAN_JSON}<|return|>"
    ),
    "harmony with tokens decoded away": f"analysis{DRAFT}assistantfinal{CLEAN_JSON}",
    "two think blocks": f"<think>a</think>\n<think>{DRAFT}</think>\n{CLEAN_JSON}",
    "reasoning then crewai final answer": f"<think>{DRAFT}</think>\nThought: done\nFinal Answer: {CLEAN_JSON}",
    # A think block left open, then the block the format answers in: the answer's opening ends the thinking.
    "unclosed think, then an answer element": f"<think>{DRAFT}\n<answer>{CLEAN_JSON}</answer>",
    "unclosed thought, then an output element": f"<Thought>\n{DRAFT}\n<Output>\n{LABELS}\n</Output>",
    "unclosed thought tokens, then a solution": f"<|begin_of_thought|>{DRAFT}\n<|begin_of_solution|>{LABELS}",
}


@pytest.mark.parametrize("raw", ANSWERED.values(), ids=ANSWERED.keys())
def test_the_answer_after_reasoning_counts(raw: str) -> None:
    """Each form yields exactly the answer after the reasoning; no draft value survives."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert {name: " ".join((value or "").split()) for name, value in result.loop_output.items()} == CONTENT


ONLY_REASONING = {
    "unclosed think (budget ran out) with a draft inside": f"<think>\n{DRAFT}",
    "closed think and nothing after": f"<think>\n{DRAFT}\n</think>\n",
    "empty think and nothing after": "<think></think>",
    "closing tag only and nothing after": f"{DRAFT}\n</think>",
    "ollama thinking never done": f"Thinking...\n{DRAFT}\n",
    "harmony analysis only": f"<|channel|>analysis<|message|>{DRAFT}<|end|>",
    "unclosed bracket think": f"[THINK]{DRAFT}",
}


@pytest.mark.parametrize("raw", ONLY_REASONING.values(), ids=ONLY_REASONING.keys())
def test_an_output_that_is_only_reasoning_fails_and_says_so(raw: str) -> None:
    """Reasoning with no answer after it is failed, with a reason naming the reasoning; no draft is read."""
    result = validate_output(raw)
    assert result.status == "failed"
    assert result.errors[0].field is None and result.errors[0].code == "unparseable"
    assert "only reasoning" in result.errors[0].message
    assert all(value is None for value in result.loop_output.values())


def test_reasoning_before_prose_fails_as_unparseable_prose() -> None:
    """An answer after the reasoning that holds no fields is failed like any prose, not read from the draft."""
    result = validate_output(f"<think>{DRAFT}</think>\nI'm sorry, I can't help with that.")
    assert result.status == "failed" and result.errors[0].code == "unparseable"
    assert all(value is None for value in result.loop_output.values())


def test_a_think_tag_mentioned_in_prose_is_not_a_block() -> None:
    """An opening mark counts only at a line start: a sentence about the tag keeps the answer around it."""
    raw = labelled("{L}: {v}").replace(CONTENT["grip"], "Models wrap thoughts in <think> tags first.")
    result = validate_output(raw)
    assert result.status == "valid"
    assert result.loop_output["grip"] == "Models wrap thoughts in <think> tags first."


def test_a_cut_answer_after_reasoning_is_truncated() -> None:
    """Truncation holds after a reasoning block: four whole fields and a cut loop are partial, never valid."""
    raw = f"<think>{DRAFT}</think>\n{CLEAN_JSON[:-20]}"
    result = validate_output(raw)
    assert result.status == "partial"
    assert {issue.field: issue.code for issue in result.errors} == {"loop": "truncated"}
    labels = f"<think>{DRAFT}</think>\n{LABELS}"
    assert {issue.field: issue.code for issue in validate_output(labels, cut=True).errors} == {"loop": "truncated"}


reasoning_text = st.lists(
    st.one_of(
        st.text(st.characters(blacklist_characters="<>[]◁▷|"), max_size=80),
        st.sampled_from(["HOOK: decoy.", '{"loop": "decoy?"}', "\n", "**Grip:** decoy", "<hook>decoy</hook"]),
    ),
    max_size=8,
).map("".join)
tags = st.sampled_from([("<think>", "</think>"), ("<thinking>", "</thinking>"), ("[THINK]", "[/THINK]")])


@given(answers, reasoning_text, tags, st.booleans(), st.booleans())
def test_any_answer_after_any_reasoning_validates_to_the_same_fields(
    answer: dict[str, str], thinking: str, tag: tuple[str, str], as_json: bool, orphan_close: bool
) -> None:
    """Any valid answer preceded by a reasoning block of arbitrary text validates to the same fields."""
    body = json.dumps(answer) if as_json else "\n".join(f"{name.upper()}: {answer[name]}" for name in FIELDS)
    opening = "" if orphan_close else tag[0]
    result = validate_output(f"{opening}{thinking}{tag[1]}\n{body}")
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == answer


def test_an_answer_element_inside_thinking_does_not_end_a_closed_block() -> None:
    """A draft ``<answer>`` inside a closed think block stays thinking: only a block left open ends at one."""
    raw = f"<think>\nDraft:\n<answer>{json.dumps({**CONTENT, 'loop': 'draft?'})}</answer>\n</think>\n{CLEAN_JSON}"
    result = validate_output(raw)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_an_answer_element_mentioned_mid_line_ends_nothing() -> None:
    """Only an answer's opening at a line start ends an open thinking block; the thinking's words stay thinking."""
    raw = f"<think>I will wrap it in <answer> tags. {DRAFT}"
    assert validate_output(raw).status == "failed"
