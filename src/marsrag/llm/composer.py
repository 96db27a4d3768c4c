"""The offline composer: MarsRAG's embedded default "LLM", which is not a language model.

A deterministic ``crewai.BaseLLM`` answering each task with :func:`marsrag.llm.composition.compose`: a valid
LoopOutput from what the prompt gives it (the goal, the hook handed over, the numbered passages and how well
they support the step). It exists so the whole system runs and is testable with no API key and no network;
it selects and arranges sentences and understands none of them. Use ``--llm`` with a real model for real
answers.
"""

from __future__ import annotations

import json
from typing import Any

from marsrag.integrations.calls import report
from marsrag.llm._local import LocalLLM
from marsrag.llm.composition import compose

__all__ = ["OfflineComposer"]


class OfflineComposer(LocalLLM):
    """Composes grounded, valid Loop Contract answers offline (deterministic; not an LLM)."""

    model: str = "offline-composer"

    def call(
        self,
        messages: Any,
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: type[Any] | None = None,
    ) -> str:
        """Compose this task's answer as LoopOutput JSON."""
        prompt = messages if isinstance(messages, str) else "\n".join(str(m.get("content", "")) for m in messages)
        task = str(getattr(from_task, "marsrag_task", None) or getattr(from_task, "name", None) or "step")
        answer = json.dumps(compose(prompt, task))
        if self.stream:  # at once: composing is instant, the chunks only show a viewer the sections appear
            self.stream_out(answer, from_task, from_agent)
        report(finish_reason="stop")  # it always finishes its answer; it counts no tokens
        return answer

    async def acall(
        self,
        messages: Any,
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: type[Any] | None = None,
    ) -> str:
        """The async :meth:`call` (composing takes milliseconds and waits on nothing: it runs on the loop)."""
        # This class's own call: self.call is the LLM boundary's (make_resilient), which would record it twice.
        return OfflineComposer.call(
            self, messages, tools, callbacks, available_functions, from_task, from_agent, response_model
        )
