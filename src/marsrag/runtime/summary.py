"""The run summary, led by the payoffs (spec section 4: payoff shapes summarization priorities)."""

from __future__ import annotations

from collections.abc import Sequence

from marsrag.state import TaskState


def summarize(states: Sequence[TaskState]) -> str:
    """Payoffs first (valid tasks before partial ones, each in run order), then evidence, then the next step."""
    rank = {"valid": 0, "partial": 1}
    with_payoff = [state for state in states if state.loop_output.payoff]
    ordered = sorted(with_payoff, key=lambda state: (rank.get(state.validation.status, 2), state.position))
    lines = [f"- {state.loop_output.payoff} ({state.task_id})" for state in ordered]
    # The last task's evidence is the one the whole chain arrived at; earlier ones are on their tasks.
    evidence = next((state.loop_output.reinforce for state in reversed(states) if state.loop_output.reinforce), None)
    if evidence:
        lines.append(f"Evidence: {evidence}")
    last_loop = next((state.loop_output.loop for state in reversed(states) if state.loop_output.loop), None)
    if last_loop:
        lines.append(f"Next: {last_loop}")
    if not lines:
        return "No task produced a payoff."
    return "\n".join(lines)
