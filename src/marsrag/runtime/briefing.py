"""What a task is told besides its config: the goal, the hook handed over, and the sources retrieved.

One wording for the run and for operator actions, so a task re-run by an operator sees what it saw in the
run. The composer LLM reads these exact phrases back (``llm/composer.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def briefing(goal: str, hook: str | None, results: Sequence[dict[str, Any]], *, extra: str | None = None) -> str:
    """The text appended to a task's description: goal, hook (when chained), sources, then ``extra``."""
    parts = [f'The user\'s goal: "{goal}"']
    if hook is not None:
        parts.append(f'The previous step handed over this question or action; open your HOOK with it: "{hook}"')
    if results:
        passages = "\n".join(f"[{item.get('source', '?')}] {item.get('text', '')}" for item in results)
        parts.append(f"Sources retrieved for this step:\n{passages}")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def without_placeholders(text: str) -> str:
    """``text`` safe to add before kickoff: CrewAI would read ``{word}`` in it as an input to interpolate."""
    return text.replace("{", "(").replace("}", ")")
