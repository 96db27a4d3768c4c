"""An embedder from a setting: ``wordllama`` (the default), ``none``, or ``PROVIDER/MODEL`` on an endpoint.

``PROVIDER/MODEL`` is a model on an OpenAI-compatible ``/v1/embeddings`` endpoint, named as CrewAI names its
embedder providers: ``openai/text-embedding-3-small`` (OpenAI's API unless a base URL is given),
``ollama/nomic-embed-text`` (``http://localhost:11434/v1`` unless given), and any other provider name (``vllm``,
``llamacpp``, ``custom``...) with its base URL given (``--embedder-url``, ``$MARSRAG_EMBEDDER_URL`` or the
settings file's ``embedder_url``).
"""

from __future__ import annotations

import re
from typing import Final

from marsrag.errors import InputError
from marsrag.rag.embedders.base import Embedder
from marsrag.rag.embedders.endpoint import EndpointEmbedder
from marsrag.rag.embedders.wordllama import WordLlamaEmbedder

#: The embedded default: offline, no key.
DEFAULT: Final = "wordllama"
#: No embedder: keyword search only.
NONE: Final = "none"
#: Where a provider's endpoint is when no base URL is given.
DEFAULT_URLS: Final = {"openai": "https://api.openai.com/v1", "ollama": "http://localhost:11434/v1"}

_SPEC = re.compile(r"(?P<provider>[A-Za-z0-9_.-]+)/(?P<model>\S+)")


def resolve_embedder(spec: str | None, *, base_url: str | None = None, api_key: str | None = None) -> Embedder | None:
    """The embedder ``spec`` names (None: keyword search only, for ``none``).

    Raises:
        InputError: ``spec`` names no embedder, or a provider with no known endpoint has no base URL.
    """
    name = (spec or DEFAULT).strip()
    if name.lower() == NONE:
        return None
    if name.lower() == DEFAULT:
        return WordLlamaEmbedder()
    matched = _SPEC.fullmatch(name)
    if matched is None:
        raise InputError(
            f"embedder {name!r} is not one: use {DEFAULT!r} (the embedded default), {NONE!r} (keyword search "
            "only) or PROVIDER/MODEL on an OpenAI-compatible endpoint (ollama/nomic-embed-text)"
        )
    provider, model = matched["provider"].lower(), matched["model"]
    url = base_url or DEFAULT_URLS.get(provider)
    if not url:
        raise InputError(
            f"embedder {name!r} needs the URL of its OpenAI-compatible endpoint: --embedder-url, "
            "$MARSRAG_EMBEDDER_URL or embedder_url in the settings file (http://host:port/v1)"
        )
    if not re.match(r"https?://[^/\s]+", url):
        raise InputError(f"embedder URL {url!r} is not an http(s) URL (http://host:port/v1)")
    return EndpointEmbedder(model, url, provider=provider, api_key=api_key)
