"""Stand-ins for content (contract 1.2.0): bare source references, bracketed placeholders, reworded instructions.

Small real models wrote these and were marked valid: Qwen2.5-Coder-0.5B put the template's instructions in
the fields, word for word or reworded; SmolLM2-135M wrote ``[insert action/topic here]`` and ``[{json}}``. The
cases below are other instances of the same shapes, and real answers that come close to them stay valid.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from marsrag.contract import FIELDS, SECTION_INSTRUCTIONS, LoopOutput, ValidationResult, validate_output
from marsrag.contract.example import WORKED_EXAMPLE
from marsrag.integrations.guardrail import repair_instructions
from marsrag.state import FALLBACK_HOOK
from tests.contract.samples import CONTENT, labelled


def codes(result: ValidationResult) -> dict[str | None, str]:
    return {issue.field: issue.code for issue in result.errors}


REFERENCES = [
    "[1] knowledge_base/runbooks/cache-restarts.md#Pre-warming",
    "[2]",
    "[1][3]",
    "[2, 4]",
    "runbooks/x.md",
    "docs/alerts/checkout-slo.html",
    "See [1].",
    "Source: [2] kb/runbooks/pool.md#Connection pool limits",
    "[3] runbooks/dns.md#TTL changes and stale records",
    "https://wiki.internal/ops/runbooks/queue-backlog",
    "(see [1], [2])",
    "References: [1]; [4]",
    "payments/tls.md#handshake-errors [5]",
]
PLACEHOLDERS = [
    "[insert action/topic here]",
    "[{json}}",
    "<your answer>",
    "[your recommendation]",
    "Next step: [insert action/topic here]",
    "LOOP: [describe the next question to ask]",
    "<insert the evidence that supports the recommendation>",
    '{ "answer": "{text}" }',
    "[Topic] is at risk because of [reason].",
    "Restart the [service name] now.",
    "[[{}]]",
    "<placeholder text goes here> <more>",
]
REWORDED = [
    "To deliver specific value, recommendation, or resolution",
    "Provide a clear statement of the tension.",
    "Open with a tension statement that is anchored to the user's goal.",
    "Here is the hook: open with one clear tension statement anchored to the goal",
    "The key insight or mechanism that keeps the reader's attention.",
    "Strengthen the confidence with evidence and practical constraints.",
    "The best next question to advance the flow.",
    "End with the best next action.",
    "Deliver a specific recommendation for the checkout latency problem.",
    "Write a short answer that explains the key mechanism.",
    "A practical framing of the constraints and evidence.",
    "Provide key insight.",
]
# Real answers close to a stand-in: inline citations, optional config keys, a word or two shared with the
# template, bracketed words among many others, markup, comparisons, paths inside sentences.
NEAR_MISSES = [
    "Pre-warm each node before it rejoins the pool [1].",
    "Pre-warmed nodes hit 95% in two minutes [1][2], versus forty minutes cold [3].",
    "[1] says cache restarts cause cold starts.",
    "Set `cache.warm` [optional] to true before restarting.",
    "Set retries [optional] to 3 in config.yaml.",
    "The [optional] warm-up step halves the cold period, per [2].",
    "Restart the [cache] tier first, one region at a time.",
    "See runbooks/cache.md#warmup for the pre-warm steps.",
    "Read [the runbook](runbooks/x.md) before restarting.",
    "Run kubectl rollout restart deploy/<name> in the payments namespace.",
    "p99 < 200 ms and p50 > 80 ms held for a week [3].",
    "<b>Restart now</b> before the sale starts.",
    "[x] Restart caches in every region.",
    "Stagger restarts (one node at a time) [2].",
    "The key insight is that cold caches cause every breach.",
    "Key insight: caches.",
    "What evidence should we collect next?",
    "Which constraint matters most for the rollout?",
    "What is the best next action to resolve this?",
    "Deliver the fix to all regions by Friday.",
    "Provide a pre-warmed snapshot for each node.",
    "Strengthen confidence by pre-warming caches",
    "Open connections pile up when the pool is exhausted.",
    "Our recommendation: stagger restarts and pre-warm from the snapshot.",
    "Provide the SLO evidence to the on-call lead.",
    "The payoff is fewer breaches.",
    FALLBACK_HOOK,
    # Numbers and "#" in a sentence (alone, beside sentences, they are stubs: 1.5.0, tests/contract/test_stubs.py).
    "42 nodes restarted cold.",
    "#1 priority is the cache tier.",
    *CONTENT.values(),
]


@pytest.mark.parametrize(
    ("value", "code", "says"),
    [
        *((value, "placeholder", "only a source reference") for value in REFERENCES),
        *((value, "placeholder", "bracketed placeholder") for value in PLACEHOLDERS),
        *((value, "template_echo", "restates the template's instruction") for value in REWORDED),
    ],
)
def test_stand_ins_fail_with_a_message_the_repair_can_use(value: str, code: str, says: str) -> None:
    """Each stand-in fails its code in any field, in the model and the validator, and the message says why."""
    with pytest.raises(ValidationError):
        LoopOutput.model_validate({**CONTENT, "payoff": value})
    for name in ("hook", "payoff", "loop"):
        result = validate_output({**CONTENT, name: value})
        assert codes(result) == {name: code}, (value, result.errors)
        assert result.status == "partial" and result.loop_output[name] == value.strip()
        # The shortest ones were placeholders before 1.2.0 already, and keep that message.
        assert says in result.errors[0].message or "is a placeholder (" in result.errors[0].message
        assert result.errors[0].message in repair_instructions(result)


@pytest.mark.parametrize("value", NEAR_MISSES)
def test_real_answers_close_to_a_stand_in_stay_valid(value: str) -> None:
    """Citations inline, optional keys, a shared word, a bracket among words: content, in every field (but the
    field it already is: another field repeating it is the 1.4.0 rejection, not this one's)."""
    for name in FIELDS:
        if value in {other for field, other in CONTENT.items() if field != name}:
            continue
        assert validate_output({**CONTENT, name: value}).ok, (name, value)


@pytest.mark.parametrize("name", FIELDS)
def test_each_instruction_reworded_by_its_own_words_fails(name: str) -> None:
    """Each template line without its first word, or in lower case with "The answer should" before it, fails."""
    instruction = SECTION_INSTRUCTIONS[name].rstrip(".")
    for value in (instruction.split(" ", 1)[1], f"The answer should {instruction[0].lower()}{instruction[1:]}."):
        assert codes(validate_output({**CONTENT, name: value})) == {name: "template_echo"}, value


def test_an_answer_made_of_template_instructions_fails_whole() -> None:
    """Every field reworded from the template: nothing is an answer, the output fails (no field passes)."""
    reworded = {name: f"To {text[0].lower()}{text[1:]}" for name, text in SECTION_INSTRUCTIONS.items()}
    result = validate_output(json.dumps(reworded))
    assert result.status == "failed" and set(codes(result).values()) == {"template_echo"}


@pytest.mark.parametrize("name", FIELDS)
def test_a_field_copying_the_worked_example_fails(name: str) -> None:
    """The prompt's bakery example copied into a field, as is or lightly changed, is not an answer."""
    copied = WORKED_EXAMPLE[name]
    for value in (copied, copied.replace("the ", "our ", 1), f"{name.upper()}: {copied}"):
        result = validate_output({**CONTENT, name: value})
        assert codes(result) == {name: "template_echo"}, value
        assert "example" in result.errors[0].message


def test_the_whole_example_copied_fails() -> None:
    """An answer that is the worked example fails in every field."""
    result = validate_output(json.dumps(WORKED_EXAMPLE))
    assert result.status == "failed" and set(codes(result).values()) == {"template_echo"}


@pytest.mark.parametrize("value", ["[insert action/topic here]", "[1] runbooks/x.md#Warm-up", "Provide key insight."])
def test_stand_ins_fail_in_every_form(value: str) -> None:
    """JSON, labels and bold labels give the same verdict on the same value."""
    content = {**CONTENT, "grip": value}
    forms = {
        "json": json.dumps(content),
        "labels": labelled("{L}: {v}", content=content),
        "bold labels": labelled("**{T}:** {v}", "\n\n", content=content),
    }
    for form, raw in forms.items():
        assert set(codes(validate_output(raw))) == {"grip"}, form


@pytest.mark.parametrize("name", FIELDS)
def test_an_instruction_quoted_inside_a_longer_field_fails(name: str) -> None:
    """Contract 1.3.0: a template line pasted word for word into a field among words of the model's own (its first
    letter in either case, its label and final period or not) is not content; the message quotes nothing back."""
    instruction = SECTION_INSTRUCTIONS[name]
    lowered = instruction[0].lower() + instruction[1:]
    for value in (
        f"To diagnose the problem we will analyze the evidence. Let's break it down: 1. {name.upper()}: {instruction}",
        f"We should {lowered.rstrip('.')} for the checkout latency breach in three regions [1].",
        f"{instruction}\n{instruction}\nThe cache restart caused the breach, as INC-41 shows [2].",
    ):
        for field in ("hook", "reinforce"):
            result = validate_output({**CONTENT, field: value})
            assert codes(result) == {field: "template_echo"}, value
            assert "quotes the template's instruction" in result.errors[0].message
            assert instruction.rstrip(".") not in result.errors[0].message


@pytest.mark.parametrize(
    "value",
    [
        "Open with the pre-warmed nodes, or stakes rise for the sale [1].",  # the instruction's words, not its line
        "Provide the key insight, then the fix: pre-warm each node or restart one at a time.",
        "Deliver the fix to one region or two, then compare p95 [3].",
        "End with the best next question: should we pre-warm or stagger the restarts?",
    ],
)
def test_answers_sharing_an_instructions_opening_stay_valid(value: str) -> None:
    """Words or the opening of an instruction used in a sentence of the answer's own are content."""
    for name in FIELDS:
        assert validate_output({**CONTENT, name: value}).ok, (name, value)


# -- contract 1.4.0 ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["grip", "payoff", "reinforce", "loop"])
def test_a_field_repeating_an_earlier_one_fails_in_every_form(name: str) -> None:
    """The later of two fields with the same text fails ``placeholder`` naming the earlier, whether handed over as
    data, as JSON or as labels; the model refuses it too."""
    values = {**CONTENT, name: CONTENT["hook"].upper()}
    for raw in (values, json.dumps(values), "\n".join(f"{n.upper()}: {v}" for n, v in values.items())):
        result = validate_output(raw)
        assert result.status == "partial"
        assert [(issue.field, issue.code) for issue in result.errors] == [(name, "placeholder")]
        assert "repeats hook" in result.errors[0].message
    with pytest.raises(ValueError, match="repeats hook"):
        LoopOutput.model_validate(values)


def test_fields_sharing_words_but_not_their_text_are_content() -> None:
    loop = CONTENT["hook"] + " Should we act today?"
    assert validate_output({**CONTENT, "loop": loop}).ok


@pytest.mark.parametrize("value", ["（暂无）", "［待补充］", "｛hook｝", "＜your answer＞"])
def test_a_placeholder_in_full_width_brackets_fails(value: str) -> None:
    result = validate_output({**CONTENT, "reinforce": value})
    assert [(issue.field, issue.code) for issue in result.errors] == [("reinforce", "placeholder")]


@pytest.mark.parametrize("value", ["An example hook sentence.", "Example loop.", "The example payoff answer."])
def test_a_field_described_in_the_templates_words_fails(value: str) -> None:
    result = validate_output({**CONTENT, "grip": value})
    assert [(issue.field, issue.code) for issue in result.errors] == [("grip", "template_echo")]


@pytest.mark.parametrize("value", ["the hook, the grip.", "Hook the alert to the pager.", "The loop closes at 5pm."])
def test_a_field_named_with_content_of_its_own_is_content(value: str) -> None:
    assert validate_output({**CONTENT, "grip": value}).ok
