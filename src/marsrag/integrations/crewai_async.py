"""CrewAI's agent executor with its LLM steps awaited: what makes ``Crew.akickoff`` wait on ``LLM.acall``.

In CrewAI 1.15 ``Crew.akickoff`` awaits tasks and agents natively, but the agent's executor is a Flow whose
LLM steps (``call_llm_and_parse``, ``call_llm_native_tools``) are plain methods: the Flow runs them with
``asyncio.to_thread``, so every LLM call holds a thread of the loop's default pool (at most
``min(32, cpus + 4)`` of them) and calls the LLM's synchronous ``call``. :class:`AsyncAgentExecutor` keeps
CrewAI's flow definition and replaces those two steps with coroutines that await ``aget_llm_response``
(``LLM.acall``), with the same routing; everything else (tools, parsing, hooks) is CrewAI's own.

Importing this module imports CrewAI; only the async path of the runner uses it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from marsrag.integrations.crewai_env import prepare_crewai_environment

prepare_crewai_environment()

from crewai.agents.parser import AgentFinish, OutputParserError  # noqa: E402
from crewai.utilities.agent_utils import (  # noqa: E402
    aget_llm_response,
    enforce_rpm_limit,
    handle_unknown_error,
    is_context_length_exceeded,
    is_native_tool_calling_unsupported_error,
    process_llm_response,
)
from crewai_core.printer import PRINTER  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from marsrag.integrations.crewai_executor import ContractAgentExecutor  # noqa: E402


class AsyncAgentExecutor(ContractAgentExecutor):
    """The contract's agent executor whose LLM calls are awaited (``acall``) instead of run on a thread."""

    # As in the parent: the flow's definition is kept, and its steps are bound by name, so the two coroutines
    # below replace the parent's methods of those names.
    _flow_definition: ClassVar[Any] = ContractAgentExecutor.flow_definition()

    async def call_llm_and_parse(self) -> Literal["parsed", "parser_error", "context_error"]:  # type: ignore[override]
        """The text-tools LLM step, awaited: parse the answer into an action or a final answer."""
        if self.state.is_finished:
            return "parsed"
        try:
            enforce_rpm_limit(self.request_within_rpm_limit)
            answer = await self._acall_llm(None if self.original_tools else self.response_model, tools=None)
            if isinstance(answer, BaseModel):
                self.state.current_answer = AgentFinish(thought="", output=answer, text=str(answer))
                return "parsed"
            self.state.current_answer = process_llm_response(answer, self.use_stop_words)
            return "parsed"
        except OutputParserError as error:
            self._last_parser_error = error
            return "parser_error"
        except Exception as error:
            if is_context_length_exceeded(error):
                self._last_context_error = error
                return "context_error"
            self._unknown(error)
            raise

    async def call_llm_native_tools(  # type: ignore[override]
        self,
    ) -> Literal["native_tool_calls", "native_finished", "context_error", "todo_satisfied", "continue_reasoning"]:
        """The native-tools LLM step, awaited: tool calls to run, or the final answer."""
        if self.state.is_finished:
            return "native_finished"
        try:
            self.state.pending_tool_calls.clear()
            enforce_rpm_limit(self.request_within_rpm_limit)
            answer = await self._acall_llm(None, tools=self._openai_tools)
            if isinstance(answer, list) and answer and self._is_tool_call_list(answer):
                self.state.pending_tool_calls = list(answer)
                return "native_tool_calls"
            text = answer.model_dump_json() if isinstance(answer, BaseModel) else str(answer)
            output = answer if isinstance(answer, (BaseModel, str)) else text
            self.state.current_answer = AgentFinish(thought="", output=output, text=text)
            self._invoke_step_callback(self.state.current_answer)
            self._append_message_to_state(text)
            return self._route_finish_with_todos("native_finished")
        except Exception as error:
            if is_native_tool_calling_unsupported_error(error):
                self._downgrade_to_text_tool_calling()
                return "continue_reasoning"
            if is_context_length_exceeded(error):
                self._last_context_error = error
                return "context_error"
            self._unknown(error)
            raise

    async def _acall_llm(self, response_model: Any, *, tools: Any) -> Any:
        if self.llm is None:
            raise RuntimeError("the agent executor has no LLM")  # as CrewAI's invoke_async checks first
        return await aget_llm_response(
            llm=self.llm,
            messages=list(self.state.messages),
            callbacks=self.callbacks,
            printer=PRINTER,
            tools=tools,
            available_functions=None,
            from_task=self.task,
            from_agent=self.agent,
            response_model=response_model,
            executor_context=self,
            verbose=_verbose(self.agent),
        )

    def _unknown(self, error: Exception) -> None:
        # As CrewAI's own steps: litellm errors go up as they are, others are printed (when verbose) first.
        if not type(error).__module__.startswith("litellm"):
            handle_unknown_error(PRINTER, error, verbose=_verbose(self.agent))


def _verbose(agent: Any) -> bool:
    return bool(getattr(agent, "verbose", False))


__all__ = ["AsyncAgentExecutor"]
