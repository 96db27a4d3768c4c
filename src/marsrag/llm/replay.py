"""``ReplayLLM``: a CrewAI LLM that answers with scripted outputs, in order, and records every call.

For tests (yours and ours) and offline demos: the only fake is at the LLM boundary, everything else is the
real CrewAI. A ReAct-style ``Final Answer:`` is not required; CrewAI takes unparseable text as the answer.

A script step may also say how the answer ended and what it cost (``finish_reason``, ``prompt_tokens``,
``completion_tokens``), as a provider's response does, or be a server's error (``{"error": {"status": 500,
"body": "..."}}``), raised as :class:`ScriptedHTTPError` with that status and body: that is how a script
plays a server refusing a structured-output request. The replay LLM accepts structured-output offers like
an OpenAI-compatible server, and records the mode of each call.

A step's ``latency`` (seconds; default the LLM's ``latency``) stands in for a model's time to answer: slept by
``call``, awaited by ``acall``. With ``stream`` (or a step's ``tokens_per_second``) the output is then handed out
in chunks of about a token, ``tokens_per_second`` of them a second (0: at once), as a streaming server sends them.
Each call records when it started and ended, so a test can tell which calls were in flight at once.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, PrivateAttr

from marsrag.errors import MarsRAGError
from marsrag.files import MAX_CONFIG_BYTES, UnreadableFileError, read_regular_file
from marsrag.integrations.calls import report
from marsrag.llm._local import LocalLLM
from marsrag.llm.framing import framed
from marsrag.llm.structured import take_offer


class ReplayExhaustedError(MarsRAGError):
    """The replay LLM was called more times than it has scripted outputs."""


class ScriptedHTTPError(MarsRAGError):
    """A server error a replay script plays (an HTTP status and the body a real server would send)."""

    def __init__(self, status_code: int, body: str) -> None:
        super().__init__(f"Error code: {status_code} - {body}")
        self.status_code = status_code
        self.body = body


class ReplayStep(BaseModel):
    """One scripted call: an output (with how it ended and its token counts), or a server error."""

    output: str | None = None
    finish_reason: str | None = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: dict[str, Any] | None = None
    #: Seconds this call takes (None: the replay LLM's ``latency``).
    latency: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    #: Stream this call's output at this many chunks a second (0: at once; None: as the replay LLM does).
    tokens_per_second: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @classmethod
    def of(cls, item: str | dict[str, Any] | ReplayStep) -> ReplayStep:
        """A step from an output text, a script object or a step."""
        if isinstance(item, ReplayStep):
            return item
        if isinstance(item, str):
            return cls(output=item)
        return cls.model_validate(item)


@dataclass(frozen=True)
class RecordedCall:
    """One call to the replay LLM: the messages it got, the task it was for, the output it gave."""

    messages: list[dict[str, Any]]
    task: str | None
    response_model: str | None
    output: str
    prompt: str = field(repr=False, default="")
    #: The structured-output mode the call was made with (``prompt``: none asked for).
    structured_output: str = "prompt"
    #: When the call started and answered (``time.monotonic()``): which calls were in flight at once.
    started: float = field(default=0.0, compare=False)
    ended: float = field(default=0.0, compare=False)
    #: Whether the call was awaited (``acall``) rather than made in a thread (``call``).
    awaited: bool = False


class ReplayLLM(LocalLLM):
    """Answers each call with the next scripted output; raises :class:`ReplayExhaustedError` past the end."""

    model: str = "replay"
    outputs: list[str | ReplayStep]
    #: Seconds each call takes, to stand in for a real model's latency (0: answer at once).
    latency: float = 0.0
    #: Chunks a second when streaming (``stream``, or a step's own rate); 0: every chunk at once.
    tokens_per_second: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    #: The script file the outputs came from (None: given in code); errors name it.
    script_path: str | None = None
    _position: int = PrivateAttr(default=0)
    _calls: list[RecordedCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    #: Accepts structured-output offers as an OpenAI-compatible server does (a script can refuse them).
    boundary_offers: ClassVar[bool] = True

    @classmethod
    def from_outputs(
        cls,
        outputs: Iterable[str | dict[str, Any]],
        *,
        latency: float = 0.0,
        stream: bool = False,
        tokens_per_second: float = 0.0,
    ) -> ReplayLLM:
        """A replay LLM answering with ``outputs`` (texts or script steps) in order, each call taking ``latency`` s;
        with ``stream``, each output handed out in chunks, ``tokens_per_second`` of them a second."""
        steps = [item if isinstance(item, str) else ReplayStep.of(item) for item in outputs]
        return cls(model="replay", outputs=steps, latency=latency, stream=stream, tokens_per_second=tokens_per_second)

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayLLM:
        """A replay LLM from JSON Lines, one ``{"output": "..."}`` (or a script step, see the module) per call.

        Only a regular file of at most :data:`~marsrag.files.MAX_CONFIG_BYTES` is read (as config files are).

        Raises:
            MarsRAGError: the file cannot be read (missing, not a regular file, too large, not UTF-8) or a line
                is not such an object; the message names the file.
        """
        outputs: list[str | ReplayStep] = []
        try:
            # The config files' reader and cap: a FIFO or /dev/zero named as a script is refused, not read forever.
            raw = read_regular_file(path, limit=MAX_CONFIG_BYTES)
        except UnreadableFileError as error:
            raise MarsRAGError(f"cannot read replay file {str(path)!r}: {error.reason}") from None
        try:
            lines = raw.decode("utf-8-sig").splitlines()
        except UnicodeDecodeError as error:
            raise MarsRAGError(f"cannot read replay file {str(path)!r}: not UTF-8 text (byte {error.start})") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                item = None
            step = _step(item)
            if step is None:
                raise MarsRAGError(f'{path}:{number}: expected a JSON object like {{"output": "..."}}')
            outputs.append(step.output if set(item) == {"output"} and step.output is not None else step)
        return cls(model="replay", outputs=outputs, script_path=str(path))

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
        """Return the next scripted output (after its latency, slept)."""
        started = time.monotonic()
        step = self._next()
        delay = self._delay(step)
        if delay > 0:
            time.sleep(delay)
        rate = self._streaming(step)
        if rate is not None and step.error is None and step.output:
            self.stream_out(step.output, from_task, from_agent, per_second=rate)
        return self._answer(step, started, messages, tools, from_task, response_model, awaited=False)

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
        """The async :meth:`call`: the latency is awaited, so calls of concurrent runs overlap on one thread."""
        started = time.monotonic()
        step = self._next()
        delay = self._delay(step)
        if delay > 0:
            await asyncio.sleep(delay)
        rate = self._streaming(step)
        if rate is not None and step.error is None and step.output:
            await self.astream_out(step.output, from_task, from_agent, per_second=rate)
        return self._answer(step, started, messages, tools, from_task, response_model, awaited=True)

    def _next(self) -> ReplayStep:
        """Take the next scripted step (calls racing for it each get their own).

        Raises:
            ReplayExhaustedError: every step was taken.
        """
        with self._lock:
            if self._position >= len(self.outputs):
                script = f"replay file {self.script_path!r}" if self.script_path else "the replay LLM"
                raise ReplayExhaustedError(
                    f"{script} ran out of outputs after {len(self.outputs)} call(s); add more to the script"
                )
            step = ReplayStep.of(self.outputs[self._position])
            self._position += 1
            return step

    def _streaming(self, step: ReplayStep) -> float | None:
        """The chunks a second ``step`` streams at (None: it is not streamed)."""
        if step.tokens_per_second is not None:
            return step.tokens_per_second
        return self.tokens_per_second if self.stream else None

    def _delay(self, step: ReplayStep) -> float:
        return step.latency if step.latency is not None else self.latency

    def _answer(
        self,
        step: ReplayStep,
        started: float,
        messages: Any,
        tools: list[dict[str, Any]] | None,
        from_task: Any,
        response_model: Any,
        *,
        awaited: bool,
    ) -> str:
        """Record the call of ``step`` and give its output (or raise its scripted error).

        A call carrying ``tools`` takes no structured-output offer (see :func:`take_offer`); the messages are
        recorded as an OpenAI-compatible request would send them under the offer (:func:`framed`).
        """
        recorded = [{"role": "user", "content": messages}] if isinstance(messages, str) else copy.deepcopy(messages)
        offer = take_offer(tools)
        recorded = framed(recorded, offer)  # as a server would be sent them
        mode = offer.mode if offer is not None else "prompt"
        task_name = getattr(from_task, "marsrag_task", None) or getattr(from_task, "name", None)
        model_name = getattr(response_model, "__name__", None)
        output = step.output if step.output is not None else ""
        call = RecordedCall(
            recorded,
            task_name,
            model_name,
            output,
            structured_output=mode,
            started=started,
            ended=time.monotonic(),
            awaited=awaited,
        )
        with self._lock:
            self._calls.append(call)
        if step.error is not None:
            raise ScriptedHTTPError(int(step.error.get("status", 500)), str(step.error.get("body", "")))
        report(
            finish_reason=step.finish_reason,
            prompt_tokens=step.prompt_tokens,
            completion_tokens=step.completion_tokens,
        )
        return output


def _step(item: Any) -> ReplayStep | None:
    """A script line's step, or None when it is neither an output nor an error."""
    if not isinstance(item, dict):
        return None
    if not isinstance(item.get("output"), str) and not isinstance(item.get("error"), dict):
        return None
    try:
        return ReplayStep.model_validate(item)
    except ValueError:
        return None
