"""The storable-text rule: every string anywhere in a value comes out encodable, and clean values are untouched."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from marsrag.state import LoopEvent, TaskState
from marsrag.text import (
    decodable,
    has_unstorable,
    has_unstorable_escape,
    loads_storable,
    storable,
    storable_json,
    storable_value,
)

#: Characters that break a store or a sink (lone surrogates of both halves, NUL) and neighbours that must pass
#: untouched (other controls, RTL marks, U+FFFD itself, an astral character whose JSON escape is a surrogate pair).
SPECIAL = ["\ud800", "\udbff", "\udc00", "\udcff", "\udfff", "\x00", "\x1b", "\u202e", "\u200f", "\ufffd", "😀", "\\"]
#: Any text: any code point, surrogates included (hypothesis leaves them out unless asked), and the special ones.
ANY_TEXT = st.lists(st.one_of(st.characters(exclude_categories=()), st.sampled_from(SPECIAL))).map("".join)
VALUES: st.SearchStrategy[Any] = st.recursive(
    st.one_of(ANY_TEXT, st.integers(), st.none(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(ANY_TEXT, inner, max_size=4)),
    max_leaves=12,
)


def encodable(value: Any) -> bool:
    """Whether every string in ``value`` encodes as UTF-8 and holds no NUL."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return "\x00" not in value
    if isinstance(value, dict):
        return all(encodable(k) and encodable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(encodable(item) for item in value)
    return True


@given(ANY_TEXT)
def test_storable_text_encodes_and_keeps_every_other_character(text: str) -> None:
    """Each lone surrogate and NUL becomes one U+FFFD; nothing else changes, and the length is kept."""
    cleaned = storable(text)
    assert encodable(cleaned)
    assert len(cleaned) == len(text)
    for before, after in zip(text, cleaned, strict=True):
        assert after == ("\ufffd" if before == "\x00" or 0xD800 <= ord(before) <= 0xDFFF else before)
    assert has_unstorable(text) == (cleaned != text)


@given(ANY_TEXT)
def test_decodable_text_keeps_nul_for_the_fields_own_rule(text: str) -> None:
    """At the HTTP boundary only lone surrogates go; a NUL stays for the field's rule to refuse by name."""
    cleaned = decodable(text)
    cleaned.encode("utf-8")
    assert cleaned.count("\x00") == text.count("\x00")
    assert storable(cleaned) == storable(text)


@given(VALUES)
def test_storable_value_cleans_every_string_and_returns_clean_values_themselves(value: Any) -> None:
    cleaned = storable_value(value)
    assert encodable(cleaned)
    if encodable(value):
        assert cleaned is value


@given(VALUES)
def test_json_written_holds_no_escape_a_database_refuses_and_reads_back_storable(value: Any) -> None:
    """What the store writes to a JSON column: no escaped lone surrogate or NUL; read back, the same value."""
    text = storable_json(value)
    assert json.loads(text) == storable_value(value)
    assert all(encodable(s) for s in _strings(json.loads(text)))
    # A value stored before the rule (raw json.dumps) reads back storable too (two lone surrogates that make a
    # pair are one character once escaped and decoded: JSON's own reading of them).
    stored = json.dumps(value)
    assert loads_storable(stored) == loads_storable(stored.encode()) == storable_value(json.loads(stored))


def test_an_escaped_backslash_before_u_is_not_taken_for_an_escape() -> None:
    text = json.dumps({"path": "C:\\ud800"})  # a backslash, then the letters "ud800"
    assert has_unstorable_escape(text)  # the cheap test says maybe ...
    assert loads_storable(text) == {"path": "C:\\ud800"}  # ... and the value is kept as it is
    assert storable_json({"path": "C:\\ud800"}) == text


def test_records_are_the_choke_point_every_text_passes() -> None:
    """A record made of unencodable text (an event's detail, a task's fields and attempts) holds storable text."""
    event = LoopEvent(
        name="loop.feedback.recorded", run_id="r\udcff", detail={"comment": "x\ud800y", "k\x00": ["\udfff"]}
    )
    assert event.run_id == "r\ufffd"
    assert event.detail == {"comment": "x\ufffdy", "k\ufffd": ["\ufffd"]}
    json.dumps(event.to_dict(), ensure_ascii=False).encode("utf-8")
    state = TaskState.model_validate(
        {
            "run_id": "r",
            "task_id": "t",
            "position": 0,
            "loop_mode": "hard",
            "validation": {"status": "valid", "errors": []},
            "loop_output": {"hook": "h\ud800", "grip": "g\x00"},
            "attempts": [{"number": 1, "raw": "raw \udcff", "status": "valid"}],
            "retrieval": {"query": "q", "results": [{"source": "a\udcffb.md", "text": "t"}]},
        }
    )
    assert (state.loop_output.hook, state.loop_output.grip) == ("h\ufffd", "g\ufffd")
    assert state.attempts[0].raw == "raw \ufffd"
    assert state.retrieval is not None and state.retrieval.results == [{"source": "a\ufffdb.md", "text": "t"}]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []
