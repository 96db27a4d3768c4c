"""The worked example a task's prompt shows: one answer in the contract's form, from a domain no task is about.

Small models copy what they are shown. An example about baking shows the shape of a grounded answer (a
tension, its cause, what to do, the evidence with its citation, the next question) without lending any
sentence that could pass as an answer about the knowledge base; the contract rejects a field that copies it
(:func:`marsrag.contract.rules.non_content_reason`).
"""

from __future__ import annotations

from typing import Final

#: What the example's user asked: shown with the example, so that its answer reads as about this goal only.
EXAMPLE_GOAL: Final = "Our sourdough loaves come out flat since we moved the bakery."

#: The example answer, one value per field, in contract order.
WORKED_EXAMPLE: Final[dict[str, str]] = {
    "hook": "Flat loaves since the move put the morning bake at risk.",
    "grip": "The new kitchen is colder, so the starter is still weak when the dough is shaped.",
    "payoff": "Proof the dough two hours longer until the kitchen is warmed.",
    "reinforce": "Trial batches proofed two hours longer rose fully [1].",
    "loop": "Should we keep the starter in the warming cabinet overnight?",
}
