"""CrewAI's agent executor with a contract task's final answer left to the contract: no second LLM call for it.

Since CrewAI 1.15.4x a tool-using agent whose final answer is not JSON fitting the task's response model asks
the model once more, over the same conversation, with the schema and without tools (``_structured_final_answer``).
For a contract task that call spends an LLM call where parsing does: the answer, labelled sections or JSON, is
read by the contract reader, and a near-miss is repaired by the guardrail with its errors fed back. The extra
call would also put a second answer in the first one's place, which no attempt of ours records. So for a task
whose response model is the contract's (:class:`~marsrag.integrations.crewai.LoopOutputDraft`) the executor
keeps the agent's answer as written; any other task (a user's ``output_pydantic``) keeps CrewAI's behaviour.

Importing this module imports CrewAI; only code that runs crews does.
"""

from __future__ import annotations

from typing import Any, ClassVar

from marsrag.integrations.crewai_env import prepare_crewai_environment

prepare_crewai_environment()

from crewai.agents.agent_executor import AgentExecutor  # noqa: E402 - must follow the environment set-up above

from marsrag.contract import LoopOutput  # noqa: E402
from marsrag.integrations.crewai import LoopOutputDraft  # noqa: E402

#: The response models that mean "this task answers in the Loop Contract" (the draft the builders set, or
#: LoopOutput itself where a user's crew set it).
CONTRACT_MODELS: tuple[type[Any], ...] = (LoopOutputDraft, LoopOutput)


def answers_the_contract(response_model: Any) -> bool:
    """Whether a task with this response model answers in the Loop Contract (its answer is ours to read)."""
    return isinstance(response_model, type) and issubclass(response_model, CONTRACT_MODELS)


class ContractAgentExecutor(AgentExecutor):
    """CrewAI's ``AgentExecutor``; a contract task's final answer is never re-asked for as structured output."""

    # A Flow subclass builds its definition from its own methods only: the parent's definition is kept.
    _flow_definition: ClassVar[Any] = AgentExecutor.flow_definition()

    def _structured_final_answer(self, answer: str) -> Any:
        """The answer as written for a contract task (the reader parses it); else CrewAI's own step.

        CrewAI versions without this step never call it.
        """
        if answers_the_contract(self.response_model):
            return answer
        return super()._structured_final_answer(answer)


def use_contract_executor(agent: Any) -> Any:
    """``agent`` running on :class:`ContractAgentExecutor`, unless it was given an executor of its own."""
    if agent is not None and getattr(agent, "executor_class", None) is AgentExecutor:
        agent.executor_class = ContractAgentExecutor
    return agent


__all__ = ["CONTRACT_MODELS", "ContractAgentExecutor", "answers_the_contract", "use_contract_executor"]
