"""What a run may be asked: the goal and session-id rules the CLI, the JSON API, the pages and the runner share.

- A **goal** is non-blank after trimming, at most 100,000 characters, and holds no control character but
  newline and tab (a carriage return, as a browser's textarea sends, becomes a newline). It is stored trimmed.
- A **session id** is 1-128 characters: ASCII letters, digits and ``-`` ``_`` ``.`` ``:``, starting with a
  letter or a digit. So it is never ``.`` or ``..``, holds no ``/``, ``\\``, whitespace or control character,
  and is one path segment of ``/sessions/ID`` as it is.

:func:`clean_goal` and :func:`check_session_id` raise :class:`~marsrag.errors.InputError` naming the problem;
:data:`Goal` and :data:`SessionId` are the same rules as pydantic types for request models.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

from marsrag.contract.rules import MAX_INPUT_CHARS
from marsrag.errors import InputError

__all__ = [
    "MAX_GOAL_CHARS",
    "MAX_SESSION_ID_CHARS",
    "SESSION_ID_PATTERN",
    "SESSION_ID_RULE",
    "Goal",
    "SessionId",
    "check_session_id",
    "clean_goal",
    "goal_problem",
    "session_id_problem",
]

#: The longest goal accepted, in characters (the contract's input limit).
MAX_GOAL_CHARS = MAX_INPUT_CHARS
MAX_SESSION_ID_CHARS = 128
#: A session id, as a regular expression (also the API's documented ``pattern``).
SESSION_ID_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9_.:-]{{0,{MAX_SESSION_ID_CHARS - 1}}}$"
#: The session-id rule in words, for error messages and forms.
SESSION_ID_RULE = f"1-{MAX_SESSION_ID_CHARS} letters, digits and - _ . : only, starting with a letter or digit"

_SESSION_ID = re.compile(SESSION_ID_PATTERN)
_NEWLINES = re.compile(r"\r\n?")
_ALLOWED_CONTROLS = frozenset("\n\t")


def _normalized(goal: str) -> str:
    return _NEWLINES.sub("\n", goal).strip()


def goal_problem(goal: str) -> str | None:
    """Why ``goal`` (as given) cannot be a run's goal, in words; None when it can."""
    text = _normalized(goal)
    if not text:
        what = "empty" if not goal else "blank (only whitespace)"
        return f"the goal is {what}: say what the assistant should answer or do"
    if len(text) > MAX_GOAL_CHARS:
        return f"the goal has {len(text):,} characters; the limit is {MAX_GOAL_CHARS:,}"
    for position, character in enumerate(text, start=1):
        if unicodedata.category(character) == "Cc" and character not in _ALLOWED_CONTROLS:
            shown = f"\\x{ord(character):02x}"
            what = f"a NUL character ({shown})" if character == "\x00" else f"a control character ({shown})"
            return f"the goal contains {what} at character {position}: remove it"
    return None


def clean_goal(goal: str) -> str:
    """``goal`` as it is stored: carriage returns as newlines, trimmed.

    Raises:
        InputError: the goal is empty or blank, too long, or holds a control character (the message says which).
    """
    problem = goal_problem(goal)
    if problem is not None:
        raise InputError(problem)
    return _normalized(goal)


def session_id_problem(session_id: str) -> str | None:
    """Why ``session_id`` cannot name a session, in words; None when it can."""
    if _SESSION_ID.fullmatch(session_id):
        return None
    shown = repr(session_id[:40]) + ("..." if len(session_id) > 40 else "")
    return f"session id {shown}: use {SESSION_ID_RULE}"


def check_session_id(session_id: str | None) -> str | None:
    """``session_id`` when it is a valid session id (None stays None: a new session).

    Raises:
        InputError: it breaks the session-id rule (the message gives the rule).
    """
    if session_id is None:
        return None
    problem = session_id_problem(session_id)
    if problem is not None:
        raise InputError(problem)
    return session_id


def _validated_goal(goal: str) -> str:
    problem = goal_problem(goal)
    if problem is not None:
        raise ValueError(problem)
    return _normalized(goal)


def _validated_session_id(session_id: str) -> str:
    problem = session_id_problem(session_id)
    if problem is not None:
        raise ValueError(problem)
    return session_id


#: A goal in a request model: validated and cleaned by :func:`clean_goal`'s rules (422 naming the problem).
Goal = Annotated[
    str,
    AfterValidator(_validated_goal),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": MAX_GOAL_CHARS}),
]
#: A session id in a request model or query: :func:`check_session_id`'s rule.
SessionId = Annotated[
    str,
    AfterValidator(_validated_session_id),
    WithJsonSchema({"type": "string", "pattern": SESSION_ID_PATTERN, "maxLength": MAX_SESSION_ID_CHARS}),
]
