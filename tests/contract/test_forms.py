"""Normalization without any LLM call: every listed answer form is recovered, nothing is invented."""

from __future__ import annotations

import json

import pytest

from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, validate_output
from marsrag.contract.rules import MAX_INPUT_CHARS
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled


def collapse(text: str | None) -> str:
    return " ".join((text or "").split())


PRETTY = json.dumps(CONTENT, indent=2)
RECOVERABLE = {
    # JSON, exact
    "json": CLEAN_JSON,
    "json in a json fence": f"```json\n{PRETTY}\n```",
    "json in a bare fence after prose": f"Here is the answer:\n```\n{PRETTY}\n```\nHope it helps.",
    "crewai final answer": f"Thought: I now know the final answer\nFinal Answer: {CLEAN_JSON}",
    "final answer after labelled thoughts": "Thought: HOOK: maybe\nFinal Answer: " + CLEAN_JSON,
    "prose before and after": f"Sure! {CLEAN_JSON} Let me know if you need more.",
    "prose with braces before json": "Use {placeholders} carefully. " + CLEAN_JSON,
    "double encoded": json.dumps(CLEAN_JSON),
    "wrapped in output": json.dumps({"output": CONTENT}),
    "wrapped in LoopOutput": json.dumps({"LoopOutput": CONTENT}),
    "wrapped twice with a json string": json.dumps({"result": {"answer": CLEAN_JSON}}),
    "one-element list": json.dumps([CONTENT]),
    "keys in any case": json.dumps(
        {name.upper() if i % 2 else name.title(): v for i, (name, v) in enumerate(CONTENT.items())}
    ),
    "crlf json": PRETTY.replace("\n", "\r\n"),
    # JSON, repaired
    "trailing comma": CLEAN_JSON[:-1] + ",}",
    "trailing comma in fence": f"```json\n{PRETTY[:-2]},\n}}\n```",
    "line comments": PRETTY.replace('"grip"', '// the mechanism\n  "grip"'),
    "block comment": CLEAN_JSON.replace(', "payoff"', ', /* value */ "payoff"'),
    "single quotes": "{" + ", ".join(f"'{k}': '{v}'" for k, v in CONTENT.items()) + "}",
    "python dict after final answer": "Final Answer: {" + ", ".join(f"'{k}': '{v}'" for k, v in CONTENT.items()) + ",}",
    "missing closing brace": CLEAN_JSON[:-1],
    "missing closing brace in prose": "Answer: " + CLEAN_JSON[:-1],
    # Labelled sections
    "template labels": labelled("{n}. {L}: {v}"),
    "upper labels": labelled("{L}: {v}"),
    "lower labels": labelled("{l}: {v}"),
    "bold label colon inside": labelled("**{T}:** {v}", "\n\n"),
    "bold label colon outside": labelled("**{T}**: {v}", "\n\n"),
    "headings": labelled("## {T}\n{v}", "\n\n"),
    "numbered headings": labelled("## {n}. {T}\n{v}", "\n\n"),
    "bold headings": labelled("### **{T}**\n{v}", "\n\n"),
    "dash bullets": labelled("- {T}: {v}"),
    "star bullets": labelled("* **{T}:** {v}"),
    "label then content on next line": labelled("{L}:\n{v}", "\n\n"),
    "bare label line": labelled("{T}\n{v}", "\n\n"),
    "bold label line": labelled("**{T}**\n{v}", "\n\n"),
    "inline in one paragraph": labelled("{T}: {v}", " "),
    "inline bold in one paragraph": labelled("**{T}:** {v}", " "),
    "xml tags": labelled("<{l}>{v}</{l}>"),
    "xml tags on their own lines": labelled("<{l}>\n{v}\n</{l}>"),
    "numbered with parenthesis": labelled("{n}) {T}: {v}"),
    "parenthetical label": labelled("{T} (section {n}): {v}"),
    "em dash after bold label": labelled("**{T}** — {v}"),
    "crlf labels": labelled("{L}: {v}", "\r\n"),
    "labels in a fence": "```\n" + labelled("{L}: {v}") + "\n```",
    "labels after final answer": "Thought: done\nFinal Answer:\n" + labelled("{n}. {L}: {v}"),
    "labels after preamble and with rule": "Here is my answer.\n\n" + labelled("**{T}:** {v}", "\n\n---\n\n"),
    "any order": "\n".join(
        f"{name.upper()}: {CONTENT[name]}" for name in ("loop", "payoff", "hook", "reinforce", "grip")
    ),
    "template echoed then answered": EXPECTED_OUTPUT_TEMPLATE + "\n\n" + labelled("{n}. {L}: {v}"),
}


@pytest.mark.parametrize("raw", RECOVERABLE.values(), ids=RECOVERABLE.keys())
def test_form_is_recovered(raw: str) -> None:
    """Each form yields the five sections exactly as written (whitespace collapsed)."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert {name: collapse(value) for name, value in result.loop_output.items()} == CONTENT


def test_repaired_json_is_noted_and_exact_json_is_not() -> None:
    """A repair is visible as a warning; exact JSON carries none."""
    assert "repaired_json" in {w.code for w in validate_output(CLEAN_JSON[:-1]).warnings}
    assert validate_output(CLEAN_JSON).warnings == ()


def test_multi_line_section_bodies_are_kept_and_continuations_are_content() -> None:
    """A body spans lines up to the next label; a line merely starting with "Loop" is content."""
    raw = (
        "HOOK: Regions are breaching.\n"
        "GRIP: Caches restart cold.\n"
        "Loop detection in the warmer also fails, so nodes rejoin empty.\n"
        "Hooks in the deploy script skip the warm-up.\n"
        "PAYOFF: Pre-warm before rejoining.\n\n"
        "REINFORCE: Staging hit 95% in two minutes.\n"
        "LOOP: Snapshot or traffic replay?"
    )
    result = validate_output(raw)
    assert result.status == "valid"
    assert result.loop_output["grip"] == (
        "Caches restart cold.\nLoop detection in the warmer also fails, so nodes rejoin empty.\n"
        "Hooks in the deploy script skip the warm-up."
    )
    assert result.loop_output["loop"] == "Snapshot or traffic replay?"


def test_lowercase_word_followed_by_colon_inside_prose_is_not_a_label() -> None:
    """Inline labels need sentence punctuation and a capital: "the retry loop: it spins" stays content."""
    raw = labelled("{L}: {v}").replace(CONTENT["grip"], "Two things matter. the retry loop: it spins.")
    result = validate_output(raw)
    assert result.status == "valid"
    assert result.loop_output["grip"] == "Two things matter. the retry loop: it spins."


def test_a_section_given_again_with_other_content_is_two_answers_for_it() -> None:
    """A section given again after all five, with other content, is a second answer for that field (as a JSON key
    given twice is): neither is chosen, the field fails; the others stand."""
    raw = labelled("{L}: {v}") + "\nLOOP: Which snapshot age is acceptable?"
    result = validate_output(raw)
    assert result.status == "partial"
    assert {issue.field: issue.code for issue in result.errors} == {"loop": "duplicate_section"}


def test_a_section_given_again_with_the_same_content_is_one_answer() -> None:
    raw = labelled("{L}: {v}") + "\nLOOP: " + CONTENT["loop"]
    result = validate_output(raw)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


SECOND = {
    "hook": "Nightly backups have overrun into business hours three times this week.",
    "grip": "The backup job now copies the analytics schema, which tripled in size last month.",
    "payoff": "Exclude the analytics schema and back it up from its replica instead.",
    "reinforce": "Without that schema the last manual run finished in under two hours.",
    "loop": "Shall I change the backup job's schema list today?",
}


@pytest.mark.parametrize(
    "between",
    [
        "\n\n",  # the model simply wrote a second answer
        "\n[INST: <</INST]\n",  # a garbled turn start no template defines
        "\nNext incident:\n",  # prose that starts no turn
    ],
)
def test_two_labelled_answers_are_never_mixed_nor_one_chosen(between: str) -> None:
    """A second full run of sections after a complete answer: the text holds two answers, and where the first one
    ends the text does not say (its loop would take in what follows), so every field they disagree on fails."""
    raw = labelled("{L}: {v}") + between + labelled("{L}: {v}", content=SECOND)
    result = validate_output(raw)
    assert result.status != "valid", (raw, result.loop_output)
    assert {issue.code for issue in result.errors} == {"duplicate_section"}


@pytest.mark.parametrize(
    "between",
    [
        "\n\n### Instruction:\nNow the backups.\n\n### Response:\n",  # Alpaca's plain-text turns
        "\nUser: and the backups?\nBot: ",  # a plain-text dialogue (Falcon, transcripts)
        "\nHuman: and the backups?\n\nAssistant: ",  # the legacy Anthropic prompt
        "\nUSER: and the backups? ASSISTANT: ",  # Vicuna, FastChat
        "\n### Input:\nthe backups\n",  # Alpaca's input heading
        "\n<UserID>: and the backups?\n <Response> ",  # GPT4All's early prompt format
    ],
)
def test_a_plain_text_user_turn_after_an_answer_ends_it(between: str) -> None:
    """A user's turn as plain-text prompt formats write it ends the answer before it: the second answer, written
    after it, is neither content nor a candidate."""
    raw = labelled("{L}: {v}") + between + labelled("{L}: {v}", content=SECOND)
    result = validate_output(raw)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT, (raw, result.errors)


@pytest.mark.parametrize(
    "line",
    ["User impact: every checkout.", "user:admin was denied.", "Human review is pending.", "## Inputs: the logs."],
)
def test_a_line_that_only_starts_like_a_user_turn_ends_nothing(line: str) -> None:
    """Content whose line begins with a role's word, but is no turn header, stays in the answer."""
    raw = labelled("{L}: {v}").replace("\nGRIP:", f"\n{line}\nGRIP:")
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)


def test_the_same_answer_written_twice_is_one_answer() -> None:
    """Two runs with the same content disagree on nothing: valid, with a warning."""
    result = validate_output(labelled("{L}: {v}") + "\n\n" + labelled("**{L}:** {v}"))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_an_instruction_echo_before_the_answer_is_no_second_answer() -> None:
    """The template's instructions labelled first, then the answer: the instructions are no content, so the
    answer is the one answer."""
    from marsrag.contract.template import SECTION_INSTRUCTIONS

    echo = "\n".join(f"{name.upper()}: {SECTION_INSTRUCTIONS[name]}" for name in CONTENT)
    result = validate_output(echo + "\n\n" + labelled("{L}: {v}"))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_unknown_and_duplicate_keys_are_warnings() -> None:
    """Unknown keys are ignored with a warning; a key repeated in another case keeps the first value."""
    raw = json.dumps({**CONTENT, "confidence": "high", "Hook": "Another hook."})
    result = validate_output(raw)
    assert result.status == "valid" and result.loop_output["hook"] == CONTENT["hook"]
    assert {(w.field, w.code) for w in result.warnings} == {(None, "unknown_key"), ("hook", "duplicate_key")}


def test_sentence_target_is_a_warning_never_an_error() -> None:
    """More than four sentences in a field is a warning; the output stays valid."""
    long_grip = "One. Two. Three. Four. Five."
    result = validate_output({**CONTENT, "grip": long_grip})
    assert result.status == "valid"
    assert [(w.field, w.code) for w in result.warnings] == [("grip", "sentences")]


NEVER_ANSWERS = {
    "plain prose": "Latency is bad because caches restart cold; pre-warm them before they rejoin.",
    "prose naming the sections": "The hook and the loop matter; grip, payoff and reinforce less so.",
    "refusal": "I'm sorry, but I can't help with that request.",
    "echoed json schema": json.dumps(
        {
            "title": "LoopOutput",
            "type": "object",
            "required": list(CONTENT),
            "properties": {k: {"type": "string"} for k in CONTENT},
        }
    ),
    "echoed template": EXPECTED_OUTPUT_TEMPLATE,
    "echoed template with bold labels": EXPECTED_OUTPUT_TEMPLATE.replace("HOOK:", "**Hook:**"),
    "labels without content": "HOOK:\nGRIP:\nPAYOFF:\nREINFORCE:\nLOOP:",
    "bold labels without content": "**Hook:**\n**Grip:**\n**Payoff:**\n**Reinforce:**\n**Loop:**",
    "array of bare strings": json.dumps(list(CONTENT.values())),
    "array of many objects": json.dumps([{k: v} for k, v in CONTENT.items()]),
    "placeholder values": json.dumps(dict.fromkeys(CONTENT, "string")),
    "bracketed placeholders": json.dumps({k: f"<{k}>" for k in CONTENT}),
    "empty object": "{}",
    "json null": "null",
    "number": "42",
    "empty": "",
    "whitespace": " \n\t ",
    "unrelated json": json.dumps({"answer": "yes", "confidence": 0.9}),
    "broken unrelated json": '{"answer": "yes", "confidence": 0.9',
}


@pytest.mark.parametrize("raw", NEVER_ANSWERS.values(), ids=NEVER_ANSWERS.keys())
def test_nothing_is_invented(raw: str) -> None:
    """Inputs that hold no answer are failed, never split or coerced into fields."""
    result = validate_output(raw)
    assert result.status == "failed"
    assert len(result.passing_fields) < 3
    assert result.errors


def test_oversized_input_is_rejected_before_parsing() -> None:
    """Past the size guard an input is too_long at once, even when it holds a valid answer."""
    raw = CLEAN_JSON[:-1] + ", " + '"pad": "' + "x" * MAX_INPUT_CHARS + '"}'
    result = validate_output(raw)
    assert result.status == "failed"
    assert result.errors[0].field is None and result.errors[0].code == "too_long"
    assert "repaired_json" not in {w.code for w in result.warnings}


def test_oversized_bytes_are_rejected_before_decoding() -> None:
    """A 10 MB byte string answers at once with too_long."""
    result = validate_output(b"\xff" * 10_000_000)
    assert result.status == "failed" and result.errors[0].code == "too_long"


def test_bytes_are_decoded_with_replacement() -> None:
    """Bytes: UTF-8 with a BOM, invalid sequences replaced; the answer around them survives."""
    raw = b"\xef\xbb\xbf" + labelled("{L}: {v}").encode() + b"\nnote: \xff\xfe\x00"
    result = validate_output(raw)
    assert result.status == "valid"
    assert result.loop_output["loop"].startswith(CONTENT["loop"])  # type: ignore[union-attr]
    assert validate_output(bytearray(CLEAN_JSON.encode())).status == "valid"
    assert validate_output(memoryview(CLEAN_JSON.encode())).status == "valid"


@pytest.mark.parametrize("raw", [None, 42, 4.2, object(), ["a"]])
def test_other_python_values_fail_cleanly(raw: object) -> None:
    """Values that are no output at all give a failed result naming what they are."""
    result = validate_output(raw)
    assert result.status == "failed"
    assert result.errors[0].code == "unparseable"


def test_mapping_input_is_unwrapped_like_json() -> None:
    """A dict wrapped like the JSON forms is unwrapped too."""
    assert validate_output({"output": CONTENT}).status == "valid"
    assert validate_output({"unrelated": 1, "other": 2}).status == "failed"


def test_deeply_nested_json_does_not_crash() -> None:
    """Pathological nesting is failed, not a RecursionError."""
    for raw in ("[" * 50_000, '{"hook": ' + "[" * 50_000, "{" * 50_000):
        assert validate_output(raw).status == "failed"


def test_xml_tags_with_attributes_case_and_unclosed_tags() -> None:
    """Tags may carry attributes and differ in case; a field tagged twice keeps its last value."""
    raw = (
        '<Hook id="1">Regions breached.</HOOK>\n<grip>Unclosed grip\n<grip>Cold caches.</grip>'
        "<payoff>Pre-warm them.</payoff><reinforce>The proof.</reinforce><loop>Next?</loop>"
    )
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert result.loop_output["hook"] == "Regions breached."
    assert result.loop_output["grip"] == "Cold caches."
    assert validate_output("<hook>a</hook" * 2000).status == "failed"
