"""What the Ask page tells a person before they ask: which LLM will answer, and what each workflow does.

Framework-free like the rest of :mod:`marsrag.views`: the web page prints what these return.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from urllib.parse import urlsplit

from marsrag.llm.select import REPLAY_PREFIX
from marsrag.settings import COMPOSER
from marsrag.tasks.config import WorkflowConfig

#: How the Ask page names the default LLM: it is not a language model, and says so.
COMPOSER_LABEL = "offline composer (not a language model; deterministic, grounded in the knowledge base)"


@dataclass(frozen=True)
class WorkflowChoice:
    """A workflow the Ask form offers: its name, its one-line description ("" when it has none), its audience."""

    name: str
    description: str
    kind: str


def answering_llm(spec: str | None, base_url: str | None = None) -> str:
    """Who answers a run started with the LLM ``spec`` (the settings' ``llm``), in words.

    The offline composer says it is not a language model; a replay script names its file (not the folder it
    is in); a model string is named with the host (and port) of its ``base_url``, never its credentials, path
    or query.
    """
    if not spec or spec == COMPOSER:
        return COMPOSER_LABEL
    if spec.startswith(REPLAY_PREFIX):
        return f"replay script {PurePath(spec[len(REPLAY_PREFIX) :]).name} (recorded answers, not a live model)"
    host = _host(base_url) if base_url else None
    return f"{spec} at {host}" if host else spec


def workflow_choices(workflows: Iterable[WorkflowConfig]) -> list[WorkflowChoice]:
    """The workflows to offer, user-facing ones first (each group in config order), with their descriptions."""
    listed = list(workflows)
    ordered = [w for w in listed if w.kind == "user_facing"] + [w for w in listed if w.kind != "user_facing"]
    return [WorkflowChoice(w.name, " ".join(w.description.split()), w.kind) for w in ordered]


def _host(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown


__all__ = ["COMPOSER_LABEL", "WorkflowChoice", "answering_llm", "workflow_choices"]
