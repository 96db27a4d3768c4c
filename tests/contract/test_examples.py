"""The messy model outputs shipped in examples/answers/ (to try ``marsrag validate`` on) are all valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from marsrag.contract import validate_output
from tests.conftest import REPO

EXAMPLES = sorted((REPO / "examples" / "answers").iterdir())


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_example_answer_is_valid(path: Path) -> None:
    """Each example validates, whatever form it is written in."""
    result = validate_output(path.read_bytes())
    assert result.status == "valid", result.errors
