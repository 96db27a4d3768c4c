"""The five Loop Contract fields and what each asks for: the vocabulary every other contract module uses."""

from __future__ import annotations

from typing import Final

#: The five Loop Contract fields, in their fixed order.
FIELDS: Final = ("hook", "grip", "payoff", "reinforce", "loop")

#: What each section asks for, in the exact wording of spec section 2.
SECTION_INSTRUCTIONS: Final[dict[str, str]] = {
    "hook": "Open with one clear tension or stakes statement anchored to the user goal.",
    "grip": "Provide the key insight, mechanism, or diagnosis that keeps attention.",
    "payoff": "Deliver specific value, recommendation, or resolution.",
    "reinforce": "Strengthen confidence with evidence, constraints, or practical framing.",
    "loop": "End with the best next question or action that naturally advances the flow.",
}
