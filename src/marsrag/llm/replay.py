"""``ReplayLLM``: a CrewAI LLM that answers with scripted outputs, in order, and records every call.

For tests (yours and ours) and offline demos: the only fake is at the LLM boundary, everything else is the
real CrewAI. A ReAct-style ``Final Answer:`` is not required; CrewAI takes unparseable text as the answer.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr

from marsrag.errors import MarsRAGError
from marsrag.llm._local import LocalLLM


class ReplayExhaustedError(MarsRAGError):
    """The replay LLM was called more times than it has scripted outputs."""


@dataclass(frozen=True)
class RecordedCall:
    """One call to the replay LLM: the messages it got, the task it was for, the output it gave."""

    messages: list[dict[str, Any]]
    task: str | None
    response_model: str | None
    output: str
    prompt: str = field(repr=False, default="")


class ReplayLLM(LocalLLM):
    """Answers each call with the next scripted output; raises :class:`ReplayExhaustedError` past the end."""

    model: str = "replay"
    outputs: list[str]
    #: Seconds each call takes, to stand in for a real model's latency (0: answer at once).
    latency: float = 0.0
    _position: int = PrivateAttr(default=0)
    _calls: list[RecordedCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def from_outputs(cls, outputs: Iterable[str], *, latency: float = 0.0) -> ReplayLLM:
        """A replay LLM answering with ``outputs`` in order, each call taking ``latency`` seconds."""
        return cls(model="replay", outputs=list(outputs), latency=latency)

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayLLM:
        """A replay LLM from JSON Lines, one ``{"output": "..."}`` per call.

        Raises:
            MarsRAGError: the file cannot be read or a line is not such an object (the message names it).
        """
        outputs: list[str] = []
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise MarsRAGError(f"cannot read replay file {str(path)!r}: {error.strerror or error}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                item = None
            if not isinstance(item, dict) or not isinstance(item.get("output"), str):
                raise MarsRAGError(f'{path}:{number}: expected a JSON object like {{"output": "..."}}')
            outputs.append(item["output"])
        return cls(model="replay", outputs=outputs)

    @property
    def calls(self) -> list[RecordedCall]:
        """Every call so far, in order."""
        return list(self._calls)

    @property
    def remaining(self) -> int:
        """Scripted outputs not used yet."""
        return len(self.outputs) - self._position

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
        """Return the next scripted output."""
        if self.latency > 0:
            time.sleep(self.latency)
        recorded = [{"role": "user", "content": messages}] if isinstance(messages, str) else copy.deepcopy(messages)
        with self._lock:
            if self._position >= len(self.outputs):
                raise ReplayExhaustedError(
                    f"the replay LLM ran out of outputs after {len(self.outputs)} call(s); add more to the script"
                )
            output = self.outputs[self._position]
            self._position += 1
            task_name = getattr(from_task, "marsrag_task", None) or getattr(from_task, "name", None)
            self._calls.append(RecordedCall(recorded, task_name, getattr(response_model, "__name__", None), output))
        return output
