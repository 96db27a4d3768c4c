"""CrewAI Flows under the Loop Contract: ``LoopFlow`` steps are contract tasks, and a flow run is a MarsRAG run.

Importing this package imports CrewAI; use it from code that runs flows. The decorators are CrewAI's own.
"""

from marsrag.flows.flow import FlowStateNotFoundError, LoopFlow
from marsrag.flows.state import LoopFlowState, StepRecord

from crewai.flow import and_, listen, or_, persist, router, start  # isort: skip - CrewAI is set up by flow

__all__ = [
    "FlowStateNotFoundError",
    "LoopFlow",
    "LoopFlowState",
    "StepRecord",
    "and_",
    "listen",
    "or_",
    "persist",
    "router",
    "start",
]
