"""Truncated answers (contract 1.1.0): a field cut off before it ended fails ``truncated``, never validates."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.chain import plan_transition
from marsrag.contract import FIELDS, Mode, ValidationResult, is_cut_finish, validate_output
from marsrag.contract._json_cut import cut_field, scan_end
from marsrag.state import FALLBACK_HOOK, AttemptRecord, LoopFields, TaskState, Validation
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled

PRETTY = json.dumps(CONTENT, indent=2)
# CLEAN_JSON without its closing brace: every string complete, the object left open.
UNCLOSED = CLEAN_JSON[:-1]


def codes(result: ValidationResult) -> dict[str | None, str]:
    return {issue.field: issue.code for issue in result.errors}


def cut_inside(name: str, text: str = CLEAN_JSON, keep: int = 12) -> str:
    """``text`` cut ``keep`` characters into the value of ``name``."""
    start = text.index(json.dumps(CONTENT[name])) + 1
    return text[: start + keep]


@pytest.mark.parametrize("name", FIELDS)
@pytest.mark.parametrize("cut", [False, True])
def test_value_cut_mid_string_is_truncated(name: str, cut: bool) -> None:
    """The field whose value string is open at the end fails truncated, keeps its text; later ones are missing."""
    result = validate_output(cut_inside(name), cut=cut)
    later = FIELDS[FIELDS.index(name) + 1 :]
    assert codes(result) == {name: "truncated", **dict.fromkeys(later, "missing")}
    assert result.loop_output[name] == CONTENT[name][:12]
    assert result.status != "valid" and not result.completes
    assert name not in result.passing_fields and name in result.failing_fields
    assert next(issue.message for issue in result.errors if issue.field == name) == (
        f"{name} was cut off before it ended (the answer is truncated)"
    )


@pytest.mark.parametrize("name", FIELDS)
def test_pretty_printed_value_cut_mid_string_is_truncated(name: str) -> None:
    """Indentation and newlines change nothing: the open value string is found in any layout."""
    assert codes(validate_output(cut_inside(name, PRETTY)))[name] == "truncated"


def test_cut_mid_key_leaves_the_rest_missing() -> None:
    """A text ending inside a key names no value: without cut the fields after it are simply missing."""
    raw = CLEAN_JSON[: CLEAN_JSON.index('"loop"') + 4]  # ... , "lo
    assert scan_end(raw).open_key is None
    result = validate_output(raw)
    assert codes(result) == {"loop": "missing"} and result.status == "partial"


def test_cut_mid_key_with_cut_does_not_trust_the_last_value() -> None:
    """With the provider's cut, the last field written before the cut is not trusted either."""
    raw = CLEAN_JSON[: CLEAN_JSON.index('"loop"') + 4]
    assert codes(validate_output(raw, cut=True)) == {"reinforce": "truncated", "loop": "missing"}


def test_missing_closing_brace_without_cut_is_repaired_and_valid() -> None:
    """Only the closing brace missing after a complete final string: repaired, valid, as in 1.0.0."""
    result = validate_output(UNCLOSED)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT
    assert "repaired_json" in {warning.code for warning in result.warnings}


def test_missing_closing_brace_with_cut_truncates_the_last_field() -> None:
    """The provider cut the answer and the object never closed: the model was still writing its last field."""
    result = validate_output(UNCLOSED, cut=True)
    assert codes(result) == {"loop": "truncated"} and result.status == "partial"
    assert result.loop_output["loop"] == CONTENT["loop"]


def test_last_field_is_last_in_document_order() -> None:
    """When keys come in another order, the field written last is the one truncated."""
    order = ("loop", "payoff", "hook", "reinforce", "grip")
    raw = json.dumps({name: CONTENT[name] for name in order})[:-1]
    assert codes(validate_output(raw, cut=True)) == {"grip": "truncated"}


def test_complete_object_with_cut_keeps_its_verdict() -> None:
    """A closed JSON object was not actually cut: the same verdict with or without cut."""
    for raw in (CLEAN_JSON, PRETTY, f"```json\n{PRETTY}\n```", CLEAN_JSON[:-1] + ",}"):
        assert validate_output(raw, cut=True).status == "valid", raw
    partial = CLEAN_JSON.replace(CONTENT["payoff"], "")
    assert codes(validate_output(partial, cut=True)) == codes(validate_output(partial)) == {"payoff": "empty"}


def test_structured_input_with_cut_keeps_its_verdict() -> None:
    """A mapping is complete by construction: cut changes nothing."""
    assert validate_output(dict(CONTENT), cut=True).status == "valid"


@pytest.mark.parametrize(
    "raw",
    [labelled("{n}. {L}: {v}"), labelled("**{T}:** {v}", "\n\n"), labelled("<{l}>{v}</{l}>")],
    ids=["template labels", "bold labels", "xml tags"],
)
def test_labelled_sections_with_cut_truncate_the_last_section(raw: str) -> None:
    """Sections have no closing mark: after a cut the last one in text order is truncated."""
    assert validate_output(raw).status == "valid"
    result = validate_output(raw, cut=True)
    assert codes(result) == {"loop": "truncated"} and result.status == "partial"
    assert result.loop_output["loop"] == CONTENT["loop"]


def test_labelled_sections_in_another_order_truncate_the_last_in_text() -> None:
    """The last section in the text, not in the contract's order, is the one cut."""
    raw = "\n".join(f"{name.upper()}: {CONTENT[name]}" for name in ("loop", "payoff", "hook", "reinforce", "grip"))
    assert codes(validate_output(raw, cut=True)) == {"grip": "truncated"}


def test_repeated_section_with_cut_truncates_the_one_the_text_ends_in() -> None:
    """A section repeated at the end is the last one written."""
    raw = labelled("{L}: {v}") + "\nHOOK: And one more thought about the regions"
    assert codes(validate_output(raw, cut=True)) == {"hook": "truncated"}


def test_fenced_json_cut_inside_the_fence() -> None:
    """A fence opened, JSON started and the text stopped: the open value is truncated."""
    result = validate_output('Here you go:\n```json\n{"hook": "Three of your five API')
    assert codes(result) == {"hook": "truncated", **dict.fromkeys(FIELDS[1:], "missing")}
    assert result.loop_output["hook"] == "Three of your five API"
    assert codes(validate_output(f"```json\n{cut_inside('payoff', PRETTY)}"))["payoff"] == "truncated"


def test_python_literal_cut_inside_a_string() -> None:
    """Single-quoted (Python-literal style) output cut inside a string is truncated too."""
    raw = "{" + ", ".join(f"'{k}': '{v}'" for k, v in CONTENT.items())
    raw = raw[: raw.rindex("'") - 10]
    result = validate_output(raw)
    assert codes(result) == {"loop": "truncated"}
    assert result.loop_output["loop"] == CONTENT["loop"][:-10]


def test_truncated_json_after_final_answer() -> None:
    """CrewAI's Final Answer followed by a cut object: the cut value is truncated."""
    raw = "Thought: I know it\nFinal Answer: " + cut_inside("grip")
    assert codes(validate_output(raw))["grip"] == "truncated"


@pytest.mark.parametrize(
    ("text", "open_key", "closed"),
    [
        ('{"hook": "abc', "hook", False),
        ('{"hook": "a \\" still open', "hook", False),
        ('{"hook": "a\\\\", "grip": "b', "grip", False),
        ("{'hook': 'it\\'s open", "hook", False),
        ('{"hook": "don\'t stop', "hook", False),
        ('{"hook": "a", "lo', None, False),
        ('{"hook": "a"', None, False),
        ('{"hook": "a"}', None, True),
        ('{"output": {"loop": "deep', "loop", False),
        ('{"hook": ["a", "b', None, False),
        ('{hook: "bare key', "hook", False),
        ('{\n  // don\'t worry\n  "hook": "x', "hook", False),
        ('{"hook": /* it\'s */ "x', "hook", False),
        ('{"hook": "a"} and then "a quote', None, True),
        ("{placeholders} then {'loop': 'cut", "loop", False),
    ],
)
def test_scanner_reports_the_open_value_key(text: str, open_key: str | None, closed: bool) -> None:
    """The scanner follows both quote styles, escapes, comments and nesting, and names the open value's key."""
    end = scan_end(text)
    assert (end.open_key, end.closed) == (open_key, closed)


def test_scanner_knows_the_last_field_of_the_last_document() -> None:
    """The last contract field used as a key counts from the last document only."""
    assert scan_end('{"hook": "a", "extra": "b"').last_field == "hook"
    assert scan_end('{"hook": "a"} {"x": "y"').last_field is None
    assert cut_field('{"Loop": "a', cut=False) == "loop"
    assert cut_field('{"notes": "a', cut=False) is None
    assert cut_field('{"loop": "a", "notes": "b', cut=True) == "loop"


@given(st.sampled_from(FIELDS), st.integers(min_value=1, max_value=60), st.booleans())
def test_any_cut_inside_a_value_is_never_valid(name: str, keep: int, pretty: bool) -> None:
    """Wherever a value is cut, the answer is not valid and that field is truncated."""
    keep = min(keep, len(CONTENT[name]) - 1)
    result = validate_output(cut_inside(name, PRETTY if pretty else CLEAN_JSON, keep))
    assert result.status != "valid" and codes(result)[name] == "truncated"


@given(st.integers(min_value=1, max_value=len(CLEAN_JSON) - 1))
def test_any_prefix_with_cut_is_never_valid(length: int) -> None:
    """With the provider's cut, no proper prefix of an answer validates."""
    assert validate_output(CLEAN_JSON[:length], cut=True).status != "valid"


@pytest.mark.parametrize(
    ("reason", "cut"),
    [
        ("length", True),
        ("max_tokens", True),
        ("max_output_tokens", True),
        ("MAX_TOKENS", True),
        ("Length", True),
        (" length ", True),
        (None, False),
        ("stop", False),
        ("end_turn", False),
        ("tool_calls", False),
        ("STOP", False),
        ("content_filter", False),
        ("", False),
    ],
)
def test_is_cut_finish(reason: str | None, cut: bool) -> None:
    """OpenAI, Anthropic and Gemini token-limit finish reasons, in any case, mean cut; nothing else does."""
    assert is_cut_finish(reason) is cut


def test_bytes_input_passes_cut_through() -> None:
    """Bytes are judged like the text they decode to."""
    assert codes(validate_output(UNCLOSED.encode(), cut=True)) == {"loop": "truncated"}


def _state_from(result: ValidationResult, mode: str = "hard") -> TaskState:
    attempt = AttemptRecord(number=1, raw="...", status=result.status, errors=list(result.errors))
    return TaskState(
        run_id="r",
        task_id="diagnose",
        position=0,
        loop_mode=mode,
        validation=Validation(status=result.status, errors=list(result.errors)),
        loop_output=LoopFields(**result.loop_output),
        attempts=[attempt],
    )


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_truncated_loop_never_becomes_the_next_hook(mode: Mode) -> None:
    """A loop that failed truncated is kept for the operator but never handed on: the planner falls back."""
    result = validate_output(UNCLOSED, mode=mode, cut=True)
    prior = _state_from(result, mode)
    assert prior.loop_output.loop == CONTENT["loop"]
    planned = plan_transition(prior, "recommend")
    assert (planned.hook, planned.mode) == (FALLBACK_HOOK, "fallback")
    assert "loop" in planned.reason


def test_soft_mode_hands_on_a_whole_loop_when_another_field_was_cut() -> None:
    """Only the cut field is distrusted: in soft mode a complete loop still leads on."""
    order = ("hook", "grip", "payoff", "loop", "reinforce")
    raw = json.dumps({name: CONTENT[name] for name in order})[:-20]
    result = validate_output(raw, mode="soft")
    assert codes(result) == {"reinforce": "truncated"}
    assert plan_transition(_state_from(result, "soft")).hook == CONTENT["loop"]


@given(st.integers(min_value=30, max_value=len(CONTENT["loop"]) - 2))
def test_a_labelled_loop_stopping_mid_sentence_among_sentences_was_cut(keep: int) -> None:
    """The last section stops on a word or a comma where every other one ends a sentence (a token limit, a client
    clipping a message body): the text was cut there, whatever came after it (a runtime's statistics)."""
    loop = CONTENT["loop"][:keep].rstrip(" ?")
    raw = labelled("**{T}:** {v}", content={**CONTENT, "loop": loop}) + "\n==========\nGeneration: 256 tokens"
    result = validate_output(raw)
    assert not result.ok and codes(result) == {"loop": "truncated"}


@pytest.mark.parametrize(
    "loop",
    [
        "Pick one:\n- the latest snapshot\n- a replayed sample",  # a list's items end no sentence
        "Run this next:\n    kubectl rollout restart deploy/cache",  # nor does code
        "Should we pre-warm from the latest snapshot?",
    ],
)
def test_a_last_section_ending_as_a_list_or_code_was_not_cut(loop: str) -> None:
    assert validate_output(labelled("{T}: {v}", content={**CONTENT, "loop": loop})).ok


def test_a_style_without_full_stops_says_nothing_of_a_cut() -> None:
    """When not every other section ends as a sentence does, a last one without a full stop is the writer's style."""
    plain = {name: value.rstrip(".?") for name, value in CONTENT.items()}
    assert validate_output(labelled("{T}: {v}", content=plain)).ok
