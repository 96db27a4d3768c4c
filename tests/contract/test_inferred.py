"""Keys by the shape the text gives them (the last resort): a key shape no reader knows around five values reads
them back; a shape that is not kept throughout, prose naming the fields, a value that is more than a value, or a
field keyed twice with two values never make an answer valid."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import validate_output
from marsrag.contract._inferred import read_inferred
from tests.contract.samples import CONTENT

NAMES = tuple(CONTENT)
#: Key shapes no reader has a row for, ``{n}`` the name and ``{v}`` the value, with what joins the entries.
SHAPES = [
    ("    [{n}] => {v}", "\n"),
    ('  ["{n}"]=>\n  string(9) "{v}"', "\n"),
    ("  '{n}' => '{v}',", "\n"),
    ('${n}\n[1] "{v}"\n', "\n"),
    (':{n} "{v}"', " "),
    ('<<"{n}">> => <<"{v}">>', ",\n"),
    ("{n}={v}", ", "),
    ("\\item[{n}] {v}", "\n"),
    ("%{n}% -> {v}", "\n"),
    ("@{n}@ {v}", "\n"),
    ('(:{n} . "{v}")', " "),
    ("{n} :: {v}", "\n"),
]
FIELD_WORD = re.compile("|".join(NAMES), re.IGNORECASE)
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9).filter(
    lambda word: FIELD_WORD.search(word) is None
)
sentences = st.lists(words, min_size=5, max_size=12).map(lambda ws: " ".join(ws).capitalize() + ".")
values = st.fixed_dictionaries({name: sentences for name in NAMES}).filter(
    lambda answer: len({value.casefold() for value in answer.values()}) == len(NAMES)
)
shapes = st.sampled_from(SHAPES)


def render(shape: tuple[str, str], answer: dict[str, str], opener: str = "", closer: str = "") -> str:
    form, joiner = shape
    return opener + joiner.join(form.format(n=name, v=value) for name, value in answer.items()) + closer


@pytest.mark.parametrize("shape", SHAPES, ids=[form for form, _ in SHAPES])
def test_each_shape_reads_back_the_five_values(shape: tuple[str, str]) -> None:
    raw = render(shape, dict(CONTENT), "Record(", ")")
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == CONTENT


@given(values, shapes, st.sampled_from([("", ""), ("{", "}"), ("Answer(", ")"), ("Array\n(\n", "\n)")]))
def test_any_shape_around_five_values_reads_them_back(
    answer: dict[str, str], shape: tuple[str, str], around: tuple[str, str]
) -> None:
    raw = render(shape, answer, *around)
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


@given(values, shapes, st.sampled_from(["model", "tokens", "x_id"]))
def test_a_key_the_contract_does_not_know_ends_the_value_before_it(
    answer: dict[str, str], shape: tuple[str, str], other: str
) -> None:
    """Other keys of the same shape (a record's metadata) are keys too: never part of a field's value."""
    form, joiner = shape
    raw = render(shape, answer) + joiner + form.format(n=other, v="gpt-4o 2024")
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


@given(values, shapes, st.sampled_from(NAMES))
def test_a_field_keyed_twice_with_two_values_is_never_valid(
    answer: dict[str, str], shape: tuple[str, str], twice: str
) -> None:
    """Two records, or a draft and its answer: which value is the answer is not for a shape to say."""
    form, joiner = shape
    raw = render(shape, answer) + joiner + form.format(n=twice, v="A different sentence about other things here.")
    assert read_inferred(raw) is None


@given(values, shapes, st.sampled_from(NAMES), st.sampled_from(["", "TBD", "{{loop}}", "see above"]))
def test_a_stand_in_in_any_shape_is_never_valid(
    answer: dict[str, str], shape: tuple[str, str], name: str, stand_in: str
) -> None:
    raw = render(shape, {**answer, name: stand_in})
    assert validate_output(raw).status != "valid", raw


@given(values, shapes, st.sampled_from(NAMES))
def test_a_shape_not_kept_by_every_field_reads_nothing(
    answer: dict[str, str], shape: tuple[str, str], name: str
) -> None:
    """One field keyed otherwise (its name in prose): no shape keys all five."""
    form, joiner = shape
    parts = [
        f"The {key} is this: {value}" if key == name else form.format(n=key, v=value) for key, value in answer.items()
    ]
    assert read_inferred(joiner.join(parts)) is None


def test_prose_naming_the_fields_is_never_keyed() -> None:
    """A sentence listing the fields, or a prompt describing them, gives no shape."""
    prose = (
        "Write the hook, grip, payoff, reinforce and loop.\nThe hook opens; the grip explains; the payoff resolves;\n"
        "the reinforce backs it; the loop asks.\n"
    )
    assert read_inferred(prose) is None
    assert validate_output(prose).status != "valid"


def test_a_value_that_is_more_than_a_literal_reads_nothing() -> None:
    """Quoted keys quote their values: text beside a value's literal is another structure (a comment, a key)."""
    raw = "\n".join(f'"{name}" => "{value}" # checked by {name}_bot' for name, value in CONTENT.items())
    assert read_inferred(raw) is None


def test_escapes_in_literals_are_decoded_in_every_notation() -> None:
    """Perl's \\x{2014}, Ruby's \\u{2014}, JSON's \\u2014, Haskell's \\8212 and \\&, quotes and new lines."""
    loop = CONTENT["loop"]
    for escape in ("\\x{2014}", "\\u{2014}", "\\u2014", "\\8212\\&"):
        raw = "\n".join(
            f"  '{name}' => \"{value}\"," if name != "hook" else f'  \'{name}\' => "A {escape} \\"b\\" c d e.",'
            for name, value in CONTENT.items()
        )
        result = validate_output(raw)
        assert result.status == "valid", (raw, result.errors)
        assert result.loop_output["hook"] == 'A \u2014 "b" c d e.' and result.loop_output["loop"] == loop


def test_a_text_naming_the_fields_hundreds_of_times_is_not_read_by_shape() -> None:
    """No record is keyed once per field there, and the reader's work stays bounded on such input."""
    record = "\n".join(f"    [{name}] => {value}" for name, value in CONTENT.items())
    assert read_inferred(record) is not None
    assert read_inferred("\n".join([record] * 30)) is None
