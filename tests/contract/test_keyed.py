"""Keyed markup, the general last resort: any key syntax around five values reads them back, and junk around an
invalid answer never makes it valid."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import validate_output
from marsrag.contract._keyed import KEY_SYNTAXES, read_keyed
from tests.contract.samples import CONTENT

NAMES = tuple(CONTENT)
#: One rendering per key syntax: ``{n}`` the field name, ``{v}`` its value; namespaces and suffixes are instances.
RENDERINGS = {
    "parameter_eq": ["<parameter={n}>\n{v}\n</parameter>", "<param = '{n}'>{v}</param>", "<arg={n}>{v}"],
    "name_attribute": [
        '<parameter name="{n}">{v}</parameter>',
        "<ns:parameter name='{n}' string=\"true\">{v}</ns:parameter>",
        '<｜X｜argument key="{n}" type="string">{v}</｜X｜argument>',
        "<field name={n}>{v}</field>",
    ],
    "arg_pairs": [
        "<arg_key>{n}</arg_key>\n<arg_value>{v}</arg_value>",
        "<arg_key:ab12>{n}</arg_key:ab12><arg_value:ab12>{v}</arg_value:ab12>",
        "<x|arg_key>{n}</x|arg_key><x|arg_type>string</x|arg_type><x|arg_value>{v}</x|arg_value>",
    ],
    "key_element": [
        "<key>{n}</key>\n<string>{v}</string>",
        "<name>{n}</name><value>{v}</value>",
        "<ns:key>{n}</ns:key> <ns:text>{v}</ns:text>",
    ],
    "element": ["<{n}>{v}</{n}>", '<{n} id="1">\n{v}\n</{n}>', "<ns:{n}>{v}</ns:{n}>"],
    "bracket_element": ["[{n}]{v}[/{n}]", "[{n}]\n{v}\n[/{n}]\n", "[{n}] {v}\n"],
    "field_marker": ["[[ ## {n} ## ]]\n{v}\n", "[[## {n} ##]] {v}\n"],
    "escape_quoted": ["{n}:<escape>{v}<escape>,", '{n}:<|"|>{v}<|"|>,'],
}
FIELD_WORD = re.compile("|".join(NAMES), re.IGNORECASE)

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9).filter(
    lambda word: FIELD_WORD.search(word) is None
)
sentences = st.lists(words, min_size=4, max_size=10).map(lambda ws: " ".join(ws).capitalize() + ".")
# Five different values: a field repeating another fails (contract 1.4.0), whatever the markup.
values = st.fixed_dictionaries({name: sentences for name in NAMES}).filter(
    lambda answer: len({value.casefold() for value in answer.values()}) == len(NAMES)
)
renderings = st.sampled_from([(syntax, form) for syntax, forms in RENDERINGS.items() for form in forms])
# Junk: markup characters and words, but never a field name, so it can open no key.
junk = st.text(alphabet="abcxyz <>/[]{}|:=\"'#,\n-", max_size=60).filter(lambda text: FIELD_WORD.search(text) is None)


def render(form: str, answer: dict[str, str], between: list[str] | None = None) -> str:
    parts = [form.format(n=name, v=value) for name, value in answer.items()]
    if between is None:
        return "\n".join(parts)
    return "".join(part + gap for part, gap in zip(parts, between, strict=False))


def test_every_key_syntax_has_renderings() -> None:
    assert set(RENDERINGS) == {syntax.id for syntax in KEY_SYNTAXES}


@given(values, renderings, st.sampled_from(["", "<tool_call>\n<function=final_answer>\n", "call:final_answer{"]))
def test_any_key_syntax_around_five_values_reads_them_back(
    answer: dict[str, str], rendering: tuple[str, str], wrapper: str
) -> None:
    """Five values, keyed by any syntax (in any call wrapper), validate to exactly those values."""
    raw = wrapper + render(rendering[1], answer)
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


@given(values, renderings, st.sampled_from(NAMES), st.lists(junk, min_size=6, max_size=6))
def test_junk_around_an_answer_missing_a_field_never_makes_it_valid(
    answer: dict[str, str], rendering: tuple[str, str], dropped: str, gaps: list[str]
) -> None:
    """One field missing, junk before, between and after the others: never valid, and the field stays missing."""
    rest = {name: value for name, value in answer.items() if name != dropped}
    raw = gaps[0] + render(rendering[1], rest, gaps[1:])
    result = validate_output(raw)
    assert result.status != "valid", raw
    assert result.loop_output[dropped] is None


@given(junk)
def test_junk_alone_keys_nothing(text: str) -> None:
    assert read_keyed(text) is None
