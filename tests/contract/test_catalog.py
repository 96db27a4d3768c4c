"""The catalog of formats: every row has examples, and every example reads back to the five values it carries."""

from __future__ import annotations

import pytest

from marsrag.contract import validate_output
from marsrag.contract._keyed import KEY_SYNTAXES
from marsrag.contract.catalog import CHAT_TEMPLATES, FORMATS, READINGS
from tests.contract.catalog_examples import EXAMPLES

CASES = [
    (row.id, index, raw, values) for row in FORMATS for index, (raw, values) in enumerate(EXAMPLES.get(row.id, []))
]


def test_every_row_has_examples_and_every_example_a_row() -> None:
    """The table and its examples cannot drift apart: a row without examples is untested, an example without a row is
    undocumented."""
    ids = [row.id for row in FORMATS]
    assert len(ids) == len(set(ids))
    assert set(EXAMPLES) == set(ids)
    assert all(EXAMPLES[row_id] for row_id in ids)


def test_rows_name_a_known_reading_and_keyed_rows_a_key_syntax() -> None:
    """Each row's reading exists; each keyed row is listed by the key syntax that reads it."""
    assert {row.reading for row in FORMATS} <= set(READINGS)
    listed = {name.strip() for syntax in KEY_SYNTAXES for name in syntax.rows.split(",")}
    assert {row.id for row in FORMATS if row.reading == "keyed"} <= listed
    assert listed <= {row.id for row in FORMATS}
    assert all(template.ends for template in CHAT_TEMPLATES)


@pytest.mark.parametrize(("row", "index", "raw", "values"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_example_reads_back_to_its_values(row: str, index: int, raw: str, values: dict[str, str]) -> None:
    """The row's example, as its family writes it, validates to exactly the five values it carries."""
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == values


@pytest.mark.parametrize(("row", "index", "raw", "values"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_example_with_a_value_emptied_is_never_valid(
    row: str, index: int, raw: str, values: dict[str, str]
) -> None:
    """The same markup with the loop's text removed: no reader takes the markup left in its place for content."""
    for name in ("hook", "loop"):
        result = validate_output(raw.replace(values[name], ""))
        assert result.status != "valid", (row, name, result.loop_output)
