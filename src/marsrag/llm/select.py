"""Choosing the LLM of a run from ``--llm``: ``replay:FILE`` or any CrewAI model string."""

from __future__ import annotations

import os
from typing import Any

from marsrag.errors import InputError

REPLAY_PREFIX = "replay:"
#: The embedded default: the offline composer (deterministic, grounded in retrieved passages; not an LLM).
COMPOSER = "composer"


def resolve_llm(spec: str | None, *, base_url: str | None = None) -> Any:
    """The LLM object for a spec (``--llm``, else ``MARSRAG_LLM``, else the offline composer).

    ``composer`` (the default) is the offline composer; ``replay:FILE`` is the replay LLM over a JSON Lines
    script; anything else is handed to CrewAI as a model string (``openai/gpt-4o-mini``, ``ollama/llama3.1``),
    with ``base_url`` for OpenAI-compatible servers (Ollama, llama.cpp, vLLM).

    Raises:
        InputError: the replay file cannot be used.
    """
    spec = spec or os.environ.get("MARSRAG_LLM")
    base_url = base_url or os.environ.get("MARSRAG_BASE_URL")
    if not spec or spec == COMPOSER:
        from marsrag.llm.composer import OfflineComposer

        return OfflineComposer(model="offline-composer")
    if spec.startswith(REPLAY_PREFIX):
        from marsrag.llm.replay import ReplayLLM

        try:
            return ReplayLLM.from_file(spec[len(REPLAY_PREFIX) :])
        except Exception as error:
            raise InputError(str(error)) from None
    from marsrag.integrations.crewai import crewai_llm

    return crewai_llm(spec, base_url=base_url)
