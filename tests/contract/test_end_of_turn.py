"""End-of-turn semantics: the answer ends at the first end-of-turn token of any catalogued chat template."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import validate_output
from marsrag.contract.catalog import CHAT_TEMPLATES
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled

OTHER = {
    "hook": "Signups fell by forty percent on Tuesday after the form release.",
    "grip": "The new form rejects plus-addressed emails, which a third of our users have.",
    "payoff": "Relaxing the email validator won back most of the lost signups within an hour.",
    "reinforce": "Small validation bugs cost real users, so test the form with real addresses.",
    "loop": "Which other fields reject input that is actually valid?",
}
ENDS = sorted({(token, t.families) for t in CHAT_TEMPLATES for token in t.ends if not t.harmony})
STARTS = sorted({(token, t.families) for t in CHAT_TEMPLATES for token in t.starts})
HARMONY_ENDS = sorted({token for t in CHAT_TEMPLATES if t.harmony for token in t.ends})


def first_answer_only(raw: str, expected: dict[str, str] = CONTENT) -> None:
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == expected, raw


@pytest.mark.parametrize(("token", "families"), ENDS)
def test_a_second_answer_after_an_end_of_turn_token_is_not_a_candidate(token: str, families: str) -> None:
    """JSON or labels, then the template's end-of-turn token, then another valid answer: the first one wins."""
    for first, second in ((CLEAN_JSON, json.dumps(OTHER)), (labelled("{L}: {v}"), labelled("{L}: {v}", content=OTHER))):
        first_answer_only(f"{first}{token}\n{second}")
        first_answer_only(f"{first}\n{token}\nUser: thanks!\nAssistant: {second}{token}")


@pytest.mark.parametrize(("token", "families"), STARTS)
def test_a_new_turn_after_the_answer_ends_it(token: str, families: str) -> None:
    """A turn-start token after content: the model went on as another role; what it wrote then is no answer."""
    first_answer_only(f"{CLEAN_JSON}\n{token}user\nAnd now?\n{token}assistant\n{json.dumps(OTHER)}")


@pytest.mark.parametrize(("token", "families"), ENDS)
def test_a_partial_answer_is_not_completed_by_what_follows_its_turn(token: str, families: str) -> None:
    """Three fields, the turn's end, then a full answer: the verdict is the partial answer's, never valid."""
    partial = {name: CONTENT[name] for name in ("hook", "grip", "payoff")}
    result = validate_output(f"{json.dumps(partial)}{token}{json.dumps(OTHER)}")
    assert result.status == "partial" and result.loop_output["hook"] == CONTENT["hook"]
    assert result.loop_output["loop"] is None


def test_a_leading_template_prefix_or_stray_end_token_is_no_end() -> None:
    """Tokens before any content (a template prefix, a stray end token) do not end an answer not yet written."""
    first_answer_only(f"<|im_start|>assistant\n{CLEAN_JSON}<|im_end|>")
    first_answer_only(f"<|eot_id|>\n{CLEAN_JSON}<|eot_id|>{json.dumps(OTHER)}")


def test_harmony_messages_end_with_end_but_the_turn_with_return_or_call() -> None:
    """In a harmony answer ``<|end|>`` ends a message (the analysis), not the turn; ``<|return|>`` ends the turn."""
    raw = (
        "<|channel|>analysis<|message|>Need the brief.<|end|><|start|>assistant<|channel|>final<|message|>"
        f"{CLEAN_JSON}<|return|><|start|>user<|message|>more<|end|><|start|>assistant<|channel|>final<|message|>"
        f"{json.dumps(OTHER)}<|return|>"
    )
    first_answer_only(raw)
    assert HARMONY_ENDS  # the catalog lists harmony's turn ends


@given(st.sampled_from([token for token, _ in ENDS]), st.text(max_size=200))
def test_whatever_follows_the_end_of_turn_never_changes_the_verdict(token: str, junk: str) -> None:
    """Any text after the first end-of-turn token leaves the answer before it as it was."""
    first_answer_only(f"{CLEAN_JSON}{token}{junk}")


@pytest.mark.parametrize("role", ["user", "assistant", "system", "model"])
@pytest.mark.parametrize("form", ["json", "labels"])
def test_a_turn_start_printed_without_its_token_ends_the_answer(role: str, form: str) -> None:
    """A server that decoded the special tokens away prints a turn start as its role alone on a line: after
    content, what follows is another turn (a runaway continuation), never part of the last field."""
    first = CLEAN_JSON if form == "json" else labelled("{L}: {v}")
    second = json.dumps(OTHER) if form == "json" else labelled("{L}: {v}", content=OTHER)
    first_answer_only(f"{first}\n\n{role}\nAnd what about the signup form?\nassistant\n{second}")
    # Before any content the role line is the template's prefix, not an end.
    first_answer_only(f"{role}\n{first}")


def test_a_role_word_inside_a_line_is_content() -> None:
    """Only a role alone on its line is a turn start: the word within a sentence stays in the field."""
    loop = "Should the user\nsee the new form first, or the admin?"
    raw = labelled("{L}: {v}", content={**CONTENT, "loop": loop})
    result = validate_output(raw)
    assert result.status == "valid" and result.loop_output["loop"] == loop


PREFIXES = sorted({(token, t.families) for t in CHAT_TEMPLATES for token in t.prefixes})


@pytest.mark.parametrize(("token", "families"), PREFIXES)
def test_a_sequence_prefix_after_content_ends_nothing_and_is_removed(token: str, families: str) -> None:
    """A log or an echo shows the prompt with its sequence prefix before the answer: the prefix is removed and
    the answer after it stands."""
    raw = f'Input [Text 0]: "{token}Summarise the cache alert."\nOutput [Text 0 Beam 0]:\n' + labelled("{L}: {v}")
    first_answer_only(raw)


TRANSCRIPTS = {
    "granite": ("<|start_of_role|>{role}<|end_of_role|>{text}<|end_of_text|>\n"),
    "chatml": ("<|im_start|>{role}\n{text}<|im_end|>\n"),
    "llama 3": ("<|start_header_id|>{role}<|end_header_id|>\n\n{text}<|eot_id|>"),
}


@pytest.mark.parametrize("turn", TRANSCRIPTS.values(), ids=TRANSCRIPTS.keys())
@pytest.mark.parametrize("form", ["json", "labels"])
def test_a_whole_transcript_is_read_at_the_models_last_turn(turn: str, form: str) -> None:
    """A server that printed the whole conversation: the system's format and the user's draft come first, the
    model's turn last; only the model's turn is the answer."""
    answer = CLEAN_JSON if form == "json" else labelled("{L}: {v}")
    system = "Reply with hook (the situation), grip (the cause), payoff, reinforce and loop. Example:\n"
    raw = (
        turn.format(role="system", text=system + json.dumps(OTHER))
        + turn.format(role="user", text="My draft:\n" + labelled("{T}: {v}", content=OTHER))
        + turn.format(role="assistant", text=answer)
    )
    first_answer_only(raw)


@pytest.mark.parametrize("turn", TRANSCRIPTS.values(), ids=TRANSCRIPTS.keys())
def test_a_transcript_without_the_models_turn_holds_no_answer(turn: str) -> None:
    raw = turn.format(role="system", text="Answer as JSON.") + turn.format(role="user", text=json.dumps(OTHER))
    assert validate_output(raw).status == "failed"


CUES = ["### Response:", "Answer:", "ASSISTANT:", "### 응답:", "Réponse :"]


@pytest.mark.parametrize("cue", CUES)
def test_a_prompt_awaiting_its_completion_holds_no_answer(cue: str) -> None:
    """An echoed prompt whose format lists the fields, ending with the cue for the answer and nothing after it."""
    prompt = "Answer the incident in this format:\n" + labelled("{l}: {v}", content=OTHER) + "\n\n"
    assert validate_output(prompt + cue + "\n").status == "failed"


def test_a_label_with_nothing_after_it_is_no_cue() -> None:
    """An answer ending ``Loop:`` left its loop empty: partial, not a prompt."""
    raw = "\n".join(labelled("{T}: {v}").split("\n")[:4]) + "\nLoop:"
    result = validate_output(raw)
    assert result.status == "partial" and [issue.field for issue in result.errors] == ["loop"]


def test_an_answer_echoing_the_prompt_s_own_fields_is_no_answer() -> None:
    """An eval record holding what was sent (ending in its cue) and what came back: a response repeating the
    prompt's descriptions of the fields echoes them."""
    described = {name: f"the {name} of the incident in a few words" for name in OTHER}
    prompt = (
        "Answer as five lines.\n" + labelled("{l}: {v}", content=described) + "\n\nIncident: vault seals.\n\nAnswer:"
    )
    record = {
        "arguments": [[prompt, {"until": ["Incident:"]}]],
        "resps": [["\n" + labelled("{l}: {v}", content=described)]],
    }
    assert validate_output(json.dumps(record)).status != "valid"
    record["resps"] = [["\n" + labelled("{l}: {v}")]]
    first_answer_only(json.dumps(record))


@pytest.mark.parametrize("response", ["### Response:", "### Réponse :", "### Antwort:"])
def test_a_plain_transcript_opening_with_the_prompt_is_read_under_its_last_heading(response: str) -> None:
    """Alpaca-style parts (``### System:``, ``### Instruction:``, then the response's heading in any language): the
    answer is under the last heading, not cut at the instruction."""
    raw = (
        "### System:\nBelow is an instruction. Write a response.\n\n### Instruction:\nExplain the incident as:\n"
        + labelled("{l}: {v}", content=OTHER)
        + f"\n\n{response}\n"
        + labelled("{T}: {v}")
    )
    first_answer_only(raw)


def test_a_console_transcripts_answer_is_the_models_last_turn_after_the_prompt_that_asked_for_it() -> None:
    """A chat console's transcript (ChatRWKV's): a banner, the user's turn asking for the sections, the model's turn,
    the console's next empty prompt. The answer is the model's turn; a banner names no field."""
    asked = " ".join(f"{n}. {name.upper()}: the {name} of it." for n, name in enumerate(CONTENT, 1))
    answer = "\n".join(f"{name.upper()}: {value}" for name, value in CONTENT.items())
    raw = f"Loading model ...\nStrategy - cuda fp16\n\nUser: Why? Answer with five sections: {asked}\n\n"
    result = validate_output(raw + f"Assistant: {answer}\n\nUser: ")
    assert result.ok and dict(result.loop_output) == CONTENT


def test_an_answer_that_went_on_into_turns_of_its_own_keeps_its_first_turn() -> None:
    """Turns after an answer that asked for nothing (the model wrote on as the user, then as itself): the sections of
    the invented turn are not this answer's."""
    answer = "\n".join(f"{name.title()}: {value}" for name, value in CONTENT.items())
    raw = f"Which consumer group do you mean?\nUser: the orders group\nAssistant: {answer}"
    assert not validate_output(raw).ok


def test_a_transcript_printed_whole_after_a_runtimes_log_lines_is_read_at_the_models_turn() -> None:
    """A runtime's log lines, then the prompt it formatted (ChatML, asking for the sections), then the model's turn
    with its reasoning and a statistics line: log lines name no field, so the transcript is read at the model's turn;
    the statistics after the loop's paragraph are not the loop's."""
    asked = "\n".join(f"{n}. {name.upper()}: the {name} of it." for n, name in enumerate(CONTENT, 1))
    answer = "\n\n".join(f"■ {name.upper()}\n{value}" for name, value in CONTENT.items())
    raw = (
        "loaded 310 tensors (484.22MB) in 0.19s\nmodel built\n"
        f"formatted prompt: <|im_start|>user\nWhy?\n\nAnswer with five sections:\n{asked}<|im_end|>\n"
        f"<|im_start|>assistant\n<think>\nLet me think.\n</think>\n\n{answer}\n\n"
        " 131 prompt tokens processed: 402 token/s\n"
    )
    result = validate_output(raw)
    assert result.ok and dict(result.loop_output) == CONTENT
