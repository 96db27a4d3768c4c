"""Contract-native chaining: what one step hands the next and what a step is told.

The transition planner (spec section 3 and the section 8 interface), the briefing a task gets (goal, handed
hook, numbered sources, what the session asked) and the citations its answer's markers resolve to.
"""

from marsrag.chain.planner import PlannedTransition, plan_transition

__all__ = ["PlannedTransition", "plan_transition"]
