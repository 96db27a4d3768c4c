"""Choosing the LLM of a run from ``--llm``: ``replay:FILE`` or any CrewAI model string."""

from __future__ import annotations

import difflib
from typing import Any

from marsrag.errors import InputError
from marsrag.llm.boundary import make_resilient
from marsrag.llm.resilient import CallPolicy, tune_native_client
from marsrag.settings import COMPOSER

__all__ = ["BUILT_INS", "COMPOSER", "REPLAY_PREFIX", "check_spec", "resolve_llm"]

REPLAY_PREFIX = "replay:"
#: The LLMs of MarsRAG itself, by the name a spec starts with, as ``--help`` spells them.
BUILT_INS = {COMPOSER: COMPOSER, REPLAY_PREFIX[:-1]: REPLAY_PREFIX + "FILE"}
#: How alike a spec and a built-in name must be (difflib's ratio) for the spec to be taken for a typo of it:
#: ``compser`` is 0.93 from ``composer``, ``replya`` 0.83 from ``replay``; ``comp`` (0.67) is not suggested.
TYPO_SIMILARITY = 0.75


def resolve_llm(
    spec: str | None,
    *,
    base_url: str | None = None,
    policy: CallPolicy | None = None,
    structured_output: str = "auto",
    max_tokens: int | None = None,
    stream: str = "auto",
) -> Any:
    """The LLM object for a resolved spec (:attr:`marsrag.settings.Settings.llm`; None means the composer).

    ``composer`` (the default) is the offline composer; ``replay:FILE`` is the replay LLM over a JSON Lines
    script; anything else is handed to CrewAI as a model string (``openai/gpt-4o-mini``, ``ollama/llama3.1``),
    with ``base_url`` for OpenAI-compatible servers (Ollama, llama.cpp, vLLM).

    ``stream`` (see :attr:`marsrag.settings.LlmCallSettings.stream`): ``auto`` streams a CrewAI model's answers
    (every server MarsRAG targets streams: OpenAI, Anthropic, Ollama, vLLM, llama.cpp), not the composer's (it
    answers at once); ``on`` streams the composer's too; ``off`` none. A replay file's LLM streams when its
    script says so or with ``on``.

    Every one gets the call ``policy`` (the resolved settings' ``llm_calls``; None: ``MARSRAG_LLM_TIMEOUT``,
    ``MARSRAG_LLM_RETRIES`` and ``MARSRAG_LLM_BACKOFF``, see :mod:`marsrag.llm.resilient`): a time limit per
    attempt, retries with backoff for transport errors only, and answers cleaned to valid Unicode. Structure is
    asked for as ``structured_output`` says (:mod:`marsrag.llm.structured`); ``max_tokens`` caps a CrewAI
    model's answers (None: the provider's limit).

    Raises:
        InputError: the spec is a typo of a built-in name (see :func:`check_spec`), the replay file cannot be
            used, or a call-policy variable is not a usable number.
    """
    check_spec(spec)
    policy = policy or CallPolicy.from_env()
    llm = _choose(spec, base_url, policy, max_tokens, stream)
    return make_resilient(llm, policy, structured_output=structured_output)


def _choose(
    spec: str | None, base_url: str | None, policy: CallPolicy, max_tokens: int | None = None, stream: str = "auto"
) -> Any:
    if not spec or spec == COMPOSER:
        # lazy: CrewAI, loads only when an LLM or a crew is built
        from marsrag.llm.composer import OfflineComposer

        return OfflineComposer(model="offline-composer", stream=stream == "on")
    if spec.startswith(REPLAY_PREFIX):
        # lazy: CrewAI, loads only when an LLM or a crew is built
        from marsrag.llm.replay import ReplayLLM

        try:
            replay = ReplayLLM.from_file(spec[len(REPLAY_PREFIX) :])
        except Exception as error:
            raise InputError(str(error)) from None
        if stream != "auto":
            replay.stream = stream == "on"
        return replay
    # lazy: CrewAI, loads only when an LLM or a crew is built
    from marsrag.integrations.crewai import crewai_llm

    llm = crewai_llm(spec, base_url=base_url, max_tokens=max_tokens, stream=stream != "off")
    return tune_native_client(llm, policy)


def check_spec(spec: str | None) -> None:
    """Refuse a spec that looks like a misspelt built-in name rather than a model, suggesting the names it is near.

    A spec is taken for a typo when it names no provider (no ``/``), is close to a built-in name
    (:data:`BUILT_INS`, compared up to its first ``:``; a ``replay:FILE`` keeps its file in the suggestion),
    and is not a model CrewAI knows without a provider (its providers' model tables and naming patterns:
    ``gpt-4o-mini``, ``claude-...``, ``gemini-...``). Every other spec goes to CrewAI as before.

    Raises:
        InputError: ``unknown LLM 'compser': did you mean 'composer'?``.
    """
    if not spec or spec == COMPOSER or spec.startswith(REPLAY_PREFIX) or "/" in spec:
        return
    head, colon, rest = spec.partition(":")
    near = difflib.get_close_matches(head.lower(), BUILT_INS, n=len(BUILT_INS), cutoff=TYPO_SIMILARITY)
    if not near or _crewai_knows(spec):
        return
    suggestions = [REPLAY_PREFIX + rest if name == "replay" and colon and rest else BUILT_INS[name] for name in near]
    said = " or ".join(repr(suggestion) for suggestion in suggestions)
    raise InputError(
        f"unknown LLM {spec!r}: did you mean {said}? (a model of a provider is named provider/model, "
        "e.g. openai/gpt-4o-mini)"
    )


def _crewai_knows(model: str) -> bool:
    """Whether CrewAI resolves ``model``, a name without a provider, to a model one of its tables lists."""
    # lazy: CrewAI, loads only when an LLM or a crew is built (here: only for a spec near a built-in name)
    from marsrag.integrations.crewai import crewai_knows_model

    return crewai_knows_model(model)
