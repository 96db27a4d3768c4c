"""Answers printed from Python: a model's repr (``LoopOutput(hook='...', grip='...')``) or its ``str``
(``hook='...' grip='...'``), as agents and tool wrappers hand them on.

Each ``field=<string literal>`` pair is read by the standard library's literal parser, so quotes, escapes
and prefixes mean exactly what Python says; a variable or an expression in a field's place is read as the code
it is (and judged so: :mod:`._expressions`). A literal left open at the end (the answer was cut) keeps its
text and marks its field unfinished.
"""

from __future__ import annotations

import ast
import itertools
import re
from typing import Final, NamedTuple

from marsrag.contract._escapes import FOREIGN_ESCAPE, unescape_literal
from marsrag.contract._expressions import code_values
from marsrag.contract._json_forms import field_key

_PAIR: Final = re.compile(
    r"\b(?P<key>hook|grip|payoff|reinforce|loop)[ \t]*=[ \t]*"
    r"(?P<literal>[rRuU]?(?:'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))",
    re.IGNORECASE,
)
_OPEN_PAIR: Final = re.compile(r"\b(?P<key>hook|grip|payoff|reinforce|loop)[ \t]*=[ \t]*['\"](?P<rest>[^\n]*)\Z", re.I)
_HINT: Final = re.compile(r"\b(?:hook|grip|payoff|reinforce|loop)[ \t]*=[ \t]*[rRuU]?['\"]", re.IGNORECASE)


# What a printer writes after a string it cut at its limit.
_ELISIONS: Final = ("...", "…")


class Printed(NamedTuple):
    """The pairs read, where the first starts, and the field whose literal was left open (None when none was)."""

    values: dict[str, str]
    start: int
    truncated: str | None


def read_printed(text: str) -> Printed | None:
    """The ``field='...'`` pairs of a printed model, or None when there are none."""
    first = _HINT.search(text)
    if first is None:
        return None
    values: dict[str, str] = {}
    truncated: str | None = None
    end = first.start()
    for match in _PAIR.finditer(text, first.start()):
        literal = match["literal"]
        if FOREIGN_ESCAPE.search(literal):
            # Escapes Python has not (Haskell's "\\8217", Perl's "\\x{2014}"): the literal is another language's.
            value: object = unescape_literal(literal[literal.index(literal[-1]) + 1 : -1])
        else:
            try:
                value = ast.literal_eval(literal)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
        name = field_key(match["key"])
        if name is not None and isinstance(value, str):
            values.setdefault(name, value)
            if truncated is None and text.startswith(_ELISIONS, match.end()):
                truncated = name  # a debugger's print limit cut the string ("...rele"...): gdb, lldb, reprlib
        end = match.end()
    # Code in a field's place (loop=next_q) is read as written, so the field is judged as code, not as missing.
    for name, code in code_values(text[first.start() :]).items():
        values.setdefault(name, code)
    tail = _OPEN_PAIR.search(text, end)
    if tail is not None and (name := field_key(tail["key"])) is not None and name not in values:
        values[name], truncated = tail["rest"].rstrip(")"), name
    return Printed(values, first.start(), truncated) if values else None


# Printed Python values: the paragraphs of a text (blank lines apart) that are one expression each.
_PARAGRAPH: Final = re.compile(r"\S(?:.|\n(?![ \t]*\n))*")
_MAX_PRINTED_CHARS: Final = 32_768
_MAX_NODES: Final = 4096


class _NotAValue(Exception):
    """An expression that is no printed value (an operation, a comprehension, a lambda)."""


def printed_values(text: str) -> list[tuple[int, int, object]]:
    """The values of the paragraphs of ``text`` that are printed Python values, each with its span.

    A printed value is a literal (``{'hook': '...'}``, with Python's quotes, escapes and implicit string
    concatenation) whose objects may be printed as calls: ``AIMessage(content='...', id='run-1')`` is read as the
    mapping of its keyword arguments, ``Some(Stop)`` as its one argument. A name in a value's place (``None``,
    ``True`` aside) stays a name, which is no string, so it is never read as content.
    """
    found: list[tuple[int, int, object]] = []
    for paragraph in _PARAGRAPH.finditer(text):
        body = paragraph.group().rstrip()
        if len(body) > _MAX_PRINTED_CHARS or body[-1:] not in ")}]":
            continue
        # The paragraph, else the value printed under the lines that asked for it (a console's "In [13]: pprint(x)",
        # a shell's command line): from the first line that opens a value and parses to the paragraph's end.
        openers = [match.start() + 1 for match in itertools.islice(_VALUE_LINE.finditer(body, 1), _MAX_OPENERS)]
        for start in (0, *openers):
            value = _parsed(body[start:])
            if value is not _NOTHING:
                found.append((paragraph.start() + start, paragraph.start() + len(body), value))
                break
    return found


_NOTHING: Final = object()
# A line opening a printed value: a list, a dict, or an object printed as a call ("ChatCompletionResponse(...").
_VALUE_LINE: Final = re.compile(r"\n[ \t]*(?:[\[{]|[A-Za-z_][\w.]{0,80}\()")
_MAX_OPENERS: Final = 8


def _parsed(body: str) -> object:
    try:
        return _value(ast.parse(body, mode="eval").body, [_MAX_NODES])
    except (SyntaxError, ValueError, MemoryError, RecursionError, _NotAValue):
        return _NOTHING


_NAMES: Final = {"None": None, "True": True, "False": False}


def _value(node: ast.expr, budget: list[int]) -> object:
    budget[0] -= 1
    if budget[0] < 0:
        raise _NotAValue
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        pairs = zip(node.keys, node.values, strict=True)
        return {_value(key, budget) if key is not None else None: _value(value, budget) for key, value in pairs}
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_value(item, budget) for item in node.elts]
    if isinstance(node, ast.Name):
        return _NAMES.get(node.id, _Name(node.id))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value if isinstance(node.operand.value, int | float) else _Name("-")
    if isinstance(node, ast.Call):
        if node.keywords:
            return {keyword.arg: _value(keyword.value, budget) for keyword in node.keywords if keyword.arg}
        if len(node.args) == 1:
            return _value(node.args[0], budget)
        return [_value(arg, budget) for arg in node.args]
    if isinstance(node, ast.Attribute):
        return _Name(ast.unparse(node))
    raise _NotAValue


class _Name:
    """A name printed where a value is (an enum member, a variable): no string the answer wrote."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name
