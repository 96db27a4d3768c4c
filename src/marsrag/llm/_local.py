"""What MarsRAG's in-process LLMs (the composer, the replay LLM) share as ``crewai.BaseLLM`` subclasses."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from typing import Any, ClassVar, Final

from marsrag.integrations.crewai import BaseLLM

#: A streamed chunk: a word with the spaces before it (about a token, as servers stream).
_CHUNK: Final = re.compile(r"\s*\S+|\s+$")


def chunks(text: str) -> Iterator[str]:
    """``text`` in the pieces a streaming server would send (they join back to ``text``)."""
    return (match.group() for match in _CHUNK.finditer(text))


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

    def stream_out(self, text: str, from_task: Any, from_agent: Any, *, per_second: float = 0.0) -> None:
        """Hand ``text`` out chunk by chunk as a streaming server does (``per_second`` chunks a second; 0: at once).

        Each chunk goes through CrewAI's stream-chunk event, which the LLM boundary hands to the task's listener.
        """
        pause = 1.0 / per_second if per_second > 0 else 0.0
        for number, piece in enumerate(chunks(text)):
            if pause and number:
                time.sleep(pause)
            self._emit_stream_chunk_event(piece, from_task, from_agent)

    async def astream_out(self, text: str, from_task: Any, from_agent: Any, *, per_second: float = 0.0) -> None:
        """The async :meth:`stream_out`: the pauses are awaited."""
        pause = 1.0 / per_second if per_second > 0 else 0.0
        for number, piece in enumerate(chunks(text)):
            if pause and number:
                await asyncio.sleep(pause)
            self._emit_stream_chunk_event(piece, from_task, from_agent)
