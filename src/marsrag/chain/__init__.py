"""Contract-native chaining: the transition planner (spec section 3 and the section 8 interface)."""

from marsrag.chain.planner import PlannedTransition, plan_transition

__all__ = ["PlannedTransition", "plan_transition"]
