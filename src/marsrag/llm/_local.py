"""What MarsRAG's in-process LLMs (the composer, the replay LLM) share as ``crewai.BaseLLM`` subclasses."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from marsrag.integrations.crewai import BaseLLM


class LocalLLM(BaseLLM):
    """A text-only LLM answering in-process: no tool calls, and a token estimate without warnings."""

    #: At the LLM boundary: gets the response model as asked (it only records it), and no structure is
    #: negotiated with it unless a subclass accepts offers.
    boundary_local: ClassVar[bool] = True
    boundary_offers: ClassVar[bool] = False

    def supports_function_calling(self) -> bool:
        """Plain text only: CrewAI's converter asks this before using structured output."""
        return False

    def get_input_tokens_count(self, messages: Any, tools: Any = None, response_model: Any = None) -> int:
        """A rough count (four characters a token), without the base class's warning on every call."""
        text = messages if isinstance(messages, str) else json.dumps(messages, default=str)
        return len(text) // 4 + 1
