"""Values that were never values: code in a field's place, where the syntax around it says strings are quoted.

A code agent's final call (``final_answer(hook="...", loop=next_q)``), a JSON object whose last values are
variables (``{"reinforce": summary, "loop": steps[-1]}``), a template variable left unfilled (``{{loop}}``,
``${loop}``): a reader that repairs such text turns the code into a string holding its name, and the name would
pass every content rule. Where strings are quoted (after a quoted key and a colon, a key and a colon inside
braces, a key and ``=``), an unquoted value is read as code when Python's own parser reads it as an expression
that is not a literal: a name, an attribute, a call, a subscript, an operation, an f-string, a set display.
Prose does not parse (``Restart the cache tier first`` is a syntax error), and numbers, ``true`` and ``null`` are
literals, which the field rules already refuse as ``not_string``. Block-style labels (``LOOP: Roll back?`` at a
line start) are prose by definition and are never read here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Final

from marsrag.contract._prose import is_prose
from marsrag.contract.fields import FIELDS
from marsrag.contract.issues import ContractIssue

# What follows a field name used as a key: its closing quote (if quoted), ":" or "=", then an unquoted value up to
# the end of its item. Matched only at a field name, found by plain substring search (the hot path pays little).
_AFTER_KEY: Final = re.compile(
    r"""(?P<quote>["']?)[ \t]*(?P<sep>:|=(?!=))[ \t]*(?P<value>[^\s"'`“‘,}\])\n][^,}\n]{0,160})"""
)
# Template variables no parser knows: ${name}, $name, <%= name %>, {{ name }} (the last parses as a set display).
_TEMPLATE_VARIABLE: Final = re.compile(r"\$\{?[A-Za-z_][\w.]*\}?|<%=?[^%]{1,60}%>|\{\{[^{}]{1,60}\}\}")
_TRIGGERS: Final = ("=", ":")
# Bare words that are literals, not names: the field rules refuse them as ``not_string`` when they parse.
_LITERAL_WORDS: Final = frozenset({"True", "False", "None", "true", "false", "null"})
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# A prefixed string literal that interpolates (f"...", rf'...'): its text is only known when the code runs.
_F_STRING: Final = re.compile(r"(?:[rR]?[fF]|[fF][rR])[\"']")
# What a repair may keep after an unquoted value: the item's comma, then a line comment (JSON5/JSONC "//", YAML and
# Python "#").
# A line comment closing an unquoted value ("loop": next_step // from the runbook): not part of the code.
_LINE_COMMENT: Final = re.compile(r"[ \t]+(?://|#[ \t]).*")
# A member whose value is one string literal, alone on its line (``hook: "..."``, ``grip = '...';``).
_LITERAL_MEMBER: Final = re.compile(
    r"""[ \t]*[\w"'.-]{1,40}[ \t]*[:=][ \t]*(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')[ \t]*[,;]?[ \t]*"""
)
# A literal combined with code after a key (``loop: 'Next step: %s' % next``, ``"Hi " + name``,
# ``"{}".format(x)``): its text is only known when the code runs.
_COMBINED_LITERAL: Final = re.compile(
    r"""(?P<quote>["']?)[ \t]*(?P<sep>:|=(?!=))[ \t]*(?P<value>(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
    r"""[ \t]*(?:%|\+|\.\.|\|\||\.(?=[A-Za-z_]))[ \t]*[A-Za-z_(][^\n]{0,120})"""
)
_COMMENT_AFTER: Final = re.compile(r"[ \t]*[,;]?(?:\s*(?:#|//)[^\n]*)*")
# Line comments ("// What is at stake") between a member and the key after it, with the line breaks before them.
_COMMENT_LINES: Final = re.compile(r"(?:\n[ \t]*//[^\n]*)+(?=\s*$)")


def code_values(text: str) -> dict[str, str]:
    """The fields of ``text`` whose value is code, not a string: field name -> the code as written."""
    if not any(trigger in text for trigger in _TRIGGERS):
        return {}
    lowered = text.translate(_ASCII_LOWER)  # keeps every index (str.lower may not: "İ" becomes two characters)
    found: dict[str, str] = {}
    for name in FIELDS:
        index = lowered.find(name)
        while index >= 0:
            after = _AFTER_KEY.match(text, index + len(name))
            if after is not None and _is_key(text, index, after) and name not in found:
                value = _balanced(_LINE_COMMENT.sub("", after["value"]).strip().rstrip(";").rstrip())
                if is_code(value) or (_among_literals(text, index) and _not_prose(value)):
                    found[name] = value
            elif name not in found:
                combined = _COMBINED_LITERAL.match(text, index + len(name))
                if combined is not None and _is_key(text, index, combined):
                    found[name] = combined["value"].rstrip().rstrip(",;").rstrip()
            index = lowered.find(name, index + len(name))
    return found


def _is_key(text: str, index: int, after: re.Match[str]) -> bool:
    """Whether the field name at ``index`` is a key where values are quoted (see the module docstring)."""
    before = text[index - 1] if index else ""
    if before.isalnum() or before == "_":
        return False  # part of a longer word
    if after["quote"]:
        return before == after["quote"]  # "key": or 'key':
    if after["sep"] == "=":
        return True  # key=value: a keyword argument
    lead = text[max(0, index - 80) : index]
    if "//" in lead:
        lead = _COMMENT_LINES.sub("", text[max(0, index - 400) : index])
    lead = lead.rstrip(" \t\n")
    # key: value inside braces, after the opening brace or the previous member (a comma, or TypeScript's
    # semicolon), line comments between them skipped; or on the line after a member whose value is a literal
    # (CUE, HCL and Nix structs separate members by line breaks)
    return (
        lead[-1:] in ("{", ",")
        or (lead[-1:] == ";" and "{" in text[max(0, index - 400) : index])
        or _among_literals(text, index)
    )


def _among_literals(text: str, index: int) -> bool:
    """Whether the key at ``index`` starts a line right after a member written ``key: "a literal"``."""
    line = text.rfind("\n", 0, index)
    if line < 0 or text[line + 1 : index].strip():
        return False
    previous = text.rfind("\n", 0, line) + 1
    return _LITERAL_MEMBER.fullmatch(text, previous, line) is not None


def _not_prose(value: str) -> bool:
    """Whether an unquoted value has fewer than three words of prose (``string & !=""``, a type, an expression)."""
    return not is_prose(value)


def is_code(value: str) -> bool:
    """Whether an unquoted value is a code expression (not a literal, not prose)."""
    if _TEMPLATE_VARIABLE.fullmatch(value) or _F_STRING.match(value):
        return True
    if value.isidentifier() and value not in _LITERAL_WORDS:
        return True  # a bare name, even one Python reserves ("as", "if", "in"), which its parser refuses alone
    try:
        tree = ast.parse(value, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    body = tree.body
    if isinstance(body, ast.UnaryOp) and isinstance(body.operand, ast.Constant):
        return False  # -1, +2.5: a number
    return not isinstance(body, ast.Constant)


def _balanced(value: str) -> str:
    """``value`` without the closing brackets of the call or list around it (``next_q)`` in ``f(loop=next_q)``)."""
    while value[-1:] in (")", "]") and value.count(value[-1]) > value.count("(" if value[-1] == ")" else "["):
        value = value[:-1].rstrip()
    return value


def code_issues(values: Mapping[str, str | None], code: Mapping[str, str]) -> list[ContractIssue]:
    """A ``placeholder`` error for each field whose value read back is the code written in its place."""
    issues = []
    for name, source in code.items():
        value = values.get(name)
        if value is not None and _same(value, source):
            issues.append(
                ContractIssue(
                    name,
                    "placeholder",
                    f"{name} is code ({source[:40]!r}, unquoted: a variable or an expression), not content: "
                    "write the text itself",
                )
            )
    return issues


def _same(value: str, source: str) -> bool:
    # A repair may keep the code as written or keep only part of it ("steps[-1][" for steps[-1]["q"], "f" for
    # f"...", "a" for _.a): whatever of the code it kept is still the code.
    value = value.strip()
    if not value:
        return False
    if value in source:
        return True
    if not value.startswith(source):
        return False
    # Or it kept more than the code: the rest of an f-string the value pattern stopped in (at a "}" or ","), or
    # a line comment written after the code ("loop: next_step, # ask the lead"), which is no content either.
    # Or a reading by labels ran past the code's line into the lines after it (a struct's closing brace).
    return (
        _F_STRING.match(source) is not None
        or _COMMENT_AFTER.fullmatch(value, len(source)) is not None
        or value[len(source) : len(source) + 1] == "\n"
    )
