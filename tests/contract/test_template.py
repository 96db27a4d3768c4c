"""The canonical expected_output template of spec section 2."""

from __future__ import annotations

import pytest

from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, render_expected_output, validate_output

# Copied by hand from spec section 2: the template must match it word for word, in this order.
SPEC_TEMPLATE = """\
1. HOOK: Open with one clear tension or stakes statement anchored to the user goal.
2. GRIP: Provide the key insight, mechanism, or diagnosis that keeps attention.
3. PAYOFF: Deliver specific value, recommendation, or resolution.
4. REINFORCE: Strengthen confidence with evidence, constraints, or practical framing.
5. LOOP: End with the best next question or action that naturally advances the flow."""


def test_template_is_the_spec_wording_in_order() -> None:
    """The constant is exactly the five lines of the spec."""
    assert EXPECTED_OUTPUT_TEMPLATE == SPEC_TEMPLATE


@pytest.mark.parametrize("fmt", ["plain", "json", "labels"])
def test_rendered_template_starts_with_the_canonical_lines(fmt: str) -> None:
    """Every rendering keeps the five lines first; json and labels add one instruction line."""
    text = render_expected_output(fmt)  # type: ignore[arg-type]
    assert text.startswith(SPEC_TEMPLATE)
    assert (text == SPEC_TEMPLATE) == (fmt == "plain")


def test_extra_guidance_is_appended() -> None:
    """Task-specific guidance follows the template, trimmed."""
    text = render_expected_output("json", extra="  Write for an SRE audience.  ")
    assert text.startswith(SPEC_TEMPLATE) and text.endswith("Write for an SRE audience.")
    assert "hook, grip, payoff, reinforce, loop" in text


def test_unknown_format_is_rejected() -> None:
    """An unknown template format is a ValueError naming the choices."""
    with pytest.raises(ValueError, match="plain, json or labels"):
        render_expected_output("yaml")  # type: ignore[arg-type]


def test_an_echoed_template_is_never_an_answer() -> None:
    """A model that returns the template itself has answered nothing."""
    for text in (EXPECTED_OUTPUT_TEMPLATE, render_expected_output("labels")):
        assert validate_output(text).status == "failed"
        assert {issue.code for issue in validate_output(text).errors} == {"template_echo"}
