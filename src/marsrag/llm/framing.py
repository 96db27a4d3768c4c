"""How a structured request frames a contract task's prompt: a draft from its sources, no worked example.

Under a structured request (:class:`marsrag.llm.structured.Offer`: a schema, a grammar or JSON mode) the
server makes the model write the contract's form, so what the prompt has left to do is the content. Small
models fill each field with the text the prompt puts nearest to its name: the template's own instruction
lines, a source's header line, the worked example (Qwen2.5-Coder-0.5B did each, measured in ``docs/crewai.md``).
So a request whose prompt has sources and the goal shows, right before the goal, a **draft**: the answer
:func:`marsrag.llm.composition.compose` makes from the same prompt without a model (grounded sentences of the
sources, each cited, in the contract's form, honest about weak or missing support), to be improved. A model that
only copies copies a grounded, valid answer; a model that writes uses it as notes. The template itself stays
word for word in the prompt (spec section 2); only what surrounds it changes.

A repair request (CrewAI's retry after the guardrail's feedback) quotes the failed answer back under "Previous
result"; it shows only the sections of that answer that passed the contract, so a failed section (an echoed
template line, a placeholder) is not there to be copied again, while the feedback names the sections to rewrite.

The worked example (an unrelated goal's answer) is left out of a request that shows a draft or whose decoder
enforces the form: the draft shows the form about this very goal, and a decoder held to the schema writes the
form whatever the prompt shows, while small models copy the example's sentences.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Final

from marsrag.chain.briefing import GOAL_PREFIX, SOURCES_HEADING
from marsrag.contract import render_sections, validate_output
from marsrag.contract.template import drop_example
from marsrag.llm.composition import compose
from marsrag.llm.structured import Offer

__all__ = ["DRAFT_HEADING", "NOTHING_PASSED", "draft", "framed", "passing_only"]

#: Opens the draft in a prompt; the JSON object follows on the next line.
DRAFT_HEADING: Final = (
    "A draft of the answer, put together from the sources without a model. Improve it into your own answer: "
    "keep what answers the goal, rewrite what does not, keep the citations of what you keep."
)
#: What the draft's answer calls the step (compose names it when the sources do not cover the goal).
_STEP: Final = "current"
_GOAL_LINE: Final = f'{GOAL_PREFIX} "'
#: Shown as the previous result of a repair request when none of its sections passed.
NOTHING_PASSED: Final = "(none of its sections passed the contract)"


def draft(prompt: str) -> str | None:
    """The draft block for a prompt (:data:`DRAFT_HEADING`, then the answer as one JSON line), or None.

    None when the prompt has no sources block or no goal line (a task whose agent searches with its own
    tools, a prompt not built by MarsRAG): there is nothing to draft from.
    """
    if SOURCES_HEADING not in prompt or _GOAL_LINE not in prompt:
        return None
    return f"{DRAFT_HEADING}\n{json.dumps(compose(prompt, _STEP), ensure_ascii=False)}"


def passing_only(content: str) -> str:
    """``content`` with the failed answer CrewAI quotes in a repair request cut to its sections that passed.

    Validated again here (no model call; a few hundred microseconds), as the guardrail did: the sections that
    passed, labelled, or :data:`NOTHING_PASSED`. Content without CrewAI's "Previous result" block is returned as
    it is.
    """
    opener, closer = _previous_result()
    start = content.rfind(opener)
    end = content.find(closer, start + len(opener)) if start >= 0 else -1
    if end < 0:
        return content
    result = validate_output(content[start + len(opener) : end])
    passed = {name: value for name, value in result.loop_output.items() if name in result.passing_fields}
    return f"{content[: start + len(opener)]}{render_sections(passed) or NOTHING_PASSED}{content[end:]}"


@functools.cache
def _previous_result() -> tuple[str, str]:
    """The text CrewAI puts before and after the failed answer it quotes in a repair request."""
    # lazy: CrewAI; framing runs inside a CrewAI request, and the wording is CrewAI's own (its validation_error)
    from crewai.utilities.i18n import I18N_DEFAULT

    template = I18N_DEFAULT.errors("validation_error")
    before, after = template.split("{task_output}", 1)
    return before.split("{guardrail_result_error}", 1)[1], after


def framed(messages: Any, offer: Offer | None) -> Any:
    """The messages a request under ``offer`` sends: the draft before the goal line, without the worked example.

    Without an offer (no structure asked for) the messages are sent as they are. The draft goes into the last
    message holding the goal line, right before that line; the example is dropped where a draft is shown or
    the offer enforces the form (:attr:`Offer.enforces_form`). Messages are copied, never changed in place
    (CrewAI reuses its list); anything but a list of messages is returned as it is.
    """
    if offer is None or not isinstance(messages, list):
        return messages
    contents = [_text(message) for message in messages]
    block = draft("\n".join(contents))
    at = next((i for i in reversed(range(len(contents))) if _GOAL_LINE in contents[i]), None)
    drop = block is not None or offer.enforces_form
    sent, changes = [], 0
    for index, message in enumerate(messages):
        content = contents[index]
        if content and isinstance(message, dict) and message.get("content") == content:
            changed = passing_only(drop_example(content) if drop else content)
            if index == at and block is not None:
                cut = changed.rindex(_GOAL_LINE)
                changed = f"{changed[:cut]}{block}\n\n{changed[cut:]}"
            if changed != content:
                message, changes = {**message, "content": changed}, changes + 1
        sent.append(message)
    return sent if changes else messages


def _text(message: Any) -> str:
    """A message's text content ("" for content parts or anything else, which are sent as they are)."""
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""
