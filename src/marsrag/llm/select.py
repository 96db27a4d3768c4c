"""Choosing the LLM of a run from ``--llm``: ``replay:FILE`` or any CrewAI model string."""

from __future__ import annotations

from typing import Any

from marsrag.errors import InputError
from marsrag.llm.boundary import make_resilient
from marsrag.llm.resilient import CallPolicy, tune_native_client
from marsrag.settings import COMPOSER

__all__ = ["COMPOSER", "REPLAY_PREFIX", "resolve_llm"]

REPLAY_PREFIX = "replay:"


def resolve_llm(
    spec: str | None,
    *,
    base_url: str | None = None,
    policy: CallPolicy | None = None,
    structured_output: str = "auto",
    max_tokens: int | None = None,
) -> Any:
    """The LLM object for a resolved spec (:attr:`marsrag.settings.Settings.llm`; None means the composer).

    ``composer`` (the default) is the offline composer; ``replay:FILE`` is the replay LLM over a JSON Lines
    script; anything else is handed to CrewAI as a model string (``openai/gpt-4o-mini``, ``ollama/llama3.1``),
    with ``base_url`` for OpenAI-compatible servers (Ollama, llama.cpp, vLLM).

    Every one gets the call ``policy`` (the resolved settings' ``llm_calls``; None: ``MARSRAG_LLM_TIMEOUT``,
    ``MARSRAG_LLM_RETRIES`` and ``MARSRAG_LLM_BACKOFF``, see :mod:`marsrag.llm.resilient`): a time limit per
    attempt, retries with backoff for transport errors only, and answers cleaned to valid Unicode. Structure is
    asked for as ``structured_output`` says (:mod:`marsrag.llm.structured`); ``max_tokens`` caps a CrewAI
    model's answers (None: the provider's limit).

    Raises:
        InputError: the replay file cannot be used, or a call-policy variable is not a usable number.
    """
    policy = policy or CallPolicy.from_env()
    return make_resilient(_choose(spec, base_url, policy, max_tokens), policy, structured_output=structured_output)


def _choose(spec: str | None, base_url: str | None, policy: CallPolicy, max_tokens: int | None = None) -> Any:
    if not spec or spec == COMPOSER:
        # lazy: CrewAI, loads only when an LLM or a crew is built
        from marsrag.llm.composer import OfflineComposer

        return OfflineComposer(model="offline-composer")
    if spec.startswith(REPLAY_PREFIX):
        # lazy: CrewAI, loads only when an LLM or a crew is built
        from marsrag.llm.replay import ReplayLLM

        try:
            return ReplayLLM.from_file(spec[len(REPLAY_PREFIX) :])
        except Exception as error:
            raise InputError(str(error)) from None
    # lazy: CrewAI, loads only when an LLM or a crew is built
    from marsrag.integrations.crewai import crewai_llm

    return tune_native_client(crewai_llm(spec, base_url=base_url, max_tokens=max_tokens), policy)
