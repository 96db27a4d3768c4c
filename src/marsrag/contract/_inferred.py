"""Keys by the shape the text gives them: the last resort for a key syntax no reader knows.

A format names its keys one way throughout: PHP's ``print_r`` writes ``[hook] => ...``, ``var_dump``
``["hook"]=>``, R's list print ``$hook``, EDN ``:hook "..."``, a Redis reply ``1) "hook"``, LaTeX
``\\item[Hook]``, troff ``.SH HOOK``, a Kotlin data class ``hook=...``. Whatever the syntax, the five field names
stand in it with the same marks around them. This reader finds that shape (the marks before a field name, the
marks after it and the separator that follows), takes every key of that shape (other names too, so a key the
contract does not know ends the value before it) and reads each field's value as the text up to the next key: a
string literal when the value is one, else the text without the structure's closing marks.

Only a shape that all five fields share and that marks a key (a mark, a separator or a line of its own) is read:
a field name in prose has none, so a text that merely mentions the fields is never read as keyed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, NamedTuple
from urllib.parse import unquote_plus

from marsrag.contract._escapes import unescape_literal
from marsrag.contract._sections import comment_blocks
from marsrag.contract.fields import FIELDS

_FIELD_WORD: Final = re.compile(r"(?<![\w-])(?:hook|grip|payoff|reinforce|loop)(?![\w-])", re.IGNORECASE)
# What follows a key's name: its closing marks (a closing quote first, never an opening one), a separator after
# spaces, and whether the line ends there.
_AFTER: Final = re.compile(
    r"(?P<suffix>[\"'”»]?(?:\[/\w{1,10}\]|</\w{1,10}>|[^\w\s\"'“«]){0,6})(?P<gap>[ \t]*)"
    r"(?P<sep>=>|->|:=|::|=+|:|\|\||\||—|–)?[ \t]*(?P<eol>\r?\n|$)?"
)
# Marks that end a sentence or a list item, not a key: a shape made only of these marks nothing.
_PROSE_MARKS: Final = frozenset(",.;!?)")
_MARKER_MAX: Final = 6
_MAX_OCCURRENCES: Final = 120
_NAME_MAX: Final = 40
_JUNK_MAX: Final = 16
_QUOTES: Final = {'"': '"', "'": "'", "“": "”", "«": "»"}
_LITERAL_START: Final = re.compile(rf"^(?:[^\s\"'“«]{{1,{_JUNK_MAX}}}[ \t]*)?(?P<quote>[\"'“«])")
_TRAILING_JUNK: Final = re.compile(rf"[^\w\"'”»]{{0,{_JUNK_MAX}}}$")
_EDGE_TAGS: Final = re.compile(r"(?:\s*</?[A-Za-z][^<>\n]{0,80}>|\s*<[A-Za-z][\w:.-]{0,40})+\s*$")
_COMMAND: Final = re.compile(r"\\[A-Za-z]+(?:\{[^{}\n]*\})*|<[^<>\n]*>")
_LETTER: Final = re.compile(r"[^\W\d_]")
_ALNUM: Final = re.compile(r"[^\W_]")
_KEYED_VALUE: Final = re.compile(r"[^\W\d][\w.-]{0,40}[ \t]*(?:=>|:|=)[ \t]")
_LEADING_SEPARATOR: Final = re.compile(r"^(?:=>|->|[:=|—–-])[ \t]+")
_CODE_POINT_ESCAPE: Final = re.compile(r"\\u[0-9A-Fa-f]{4}")
_FORM_ENCODED: Final = re.compile(r"%[0-9A-Fa-f]{2}|\w\+\w")


@dataclass(frozen=True, slots=True)
class _Occurrence:
    start: int
    end: int
    name: str
    prefix: str
    suffix: str
    sep: str
    eol: bool
    line_start: bool
    #: Whether white space follows the key (``hook: value``, not ``hook=value``).
    spaced: bool


class Inferred(NamedTuple):
    """The five values read, where the first key starts, and the pattern of every key of the shape."""

    values: dict[str, str]
    start: int
    keys: re.Pattern[str]
    #: The field whose key carries the structure's opener (``LoopOutput(hook=``), if any: a reading by labels
    #: cannot see it.
    opened: str | None


def read_inferred(text: str) -> Inferred | None:
    """The five fields keyed in ``text`` by one shape of key, or None when no shape keys all five."""
    matches: list[re.Match[str]] = []
    for match in _FIELD_WORD.finditer(text):
        matches.append(match)
        if len(matches) > _MAX_OCCURRENCES:
            return None  # the field names hundreds of times: no record keyed once each (and a bound on the work)
    if len({match[0].lower() for match in matches}) < len(FIELDS):
        return None
    comments = comment_blocks(text)
    occurrences = [
        _occurrence(text, match)
        for match in matches
        if not any(start <= match.start() < end for start, end in comments)  # a comment is no part of an answer
    ]
    if len({occurrence.name for occurrence in occurrences}) < len(FIELDS):
        return None
    for prefix in sorted({o.prefix for o in occurrences}, key=len, reverse=True):
        for shape in {(o.suffix, o.sep, o.eol) for o in occurrences if o.prefix == prefix}:
            chosen = _chosen(occurrences, prefix, shape)
            at_line_start = all(o.line_start for o in chosen[1:])
            if {o.name for o in chosen} != set(FIELDS) or not _marks_a_key(prefix, *shape, at_line_start):
                continue
            if prefix.startswith(">"):
                continue  # quoted lines are someone else's message: the label readers decide when they count
            found = _read(text, chosen, prefix, *shape)
            if found is not None:
                return found
    return None


def _occurrence(text: str, match: re.Match[str]) -> _Occurrence:
    line_start = text.rfind("\n", 0, match.start()) + 1
    before = text[line_start : match.start()]
    token = re.search(r"[^\s,;&]*$", before)
    prefix = token[0] if token else ""
    head = before[: len(before) - len(prefix)]
    start = match.start() - len(prefix)
    # A short marker alone before the name on its line (".SH", "h2.", "==", "1)") is part of the key.
    marker = re.fullmatch(rf"[ \t]*(?P<marker>\S{{1,{_MARKER_MAX}}})[ \t]+", head)
    if marker and not marker["marker"].isalpha():
        prefix, head = marker["marker"] + " " + prefix, head[: marker.start("marker")]
        start = line_start + marker.start("marker")
    after = _AFTER.match(text, match.end())
    assert after is not None  # every group is optional
    return _Occurrence(
        start=start,
        end=after.end(),
        name=match[0].lower(),
        prefix=re.sub(r"\d+", "0", prefix),
        suffix=after["suffix"],
        sep=after["sep"] or "",
        eol=after["eol"] is not None,
        line_start=head.strip() == "",
        spaced=after.end() == len(text) or text[after.end() - 1].isspace(),
    )


def _chosen(occurrences: list[_Occurrence], prefix: str, shape: tuple[str, str, bool]) -> list[_Occurrence]:
    """The occurrences of one shape, in order; before them, the first key of a structure may carry more marks (its
    opener: ``{:hook``, ``LoopOutput(hook=``, a nested reply's ``2) 1) "hook"``)."""
    exact = [o for o in occurrences if o.prefix == prefix and (o.suffix, o.sep, o.eol) == shape]
    first = exact[0].start
    opening = [
        o
        for o in occurrences
        if o.start < first and o.prefix != prefix and o.prefix.endswith(prefix) and (o.suffix, o.sep, o.eol) == shape
    ]
    return opening[-1:] + exact


def _marks_a_key(prefix: str, suffix: str, sep: str, eol: bool, at_line_start: bool) -> bool:
    """Whether a shape marks a key: a separator, a mark that is not prose punctuation, or a line of its own (a name
    that merely ends a line of prose is none)."""
    marks = set(prefix.strip() + suffix)
    return bool(sep) or (eol and at_line_start) or not marks <= _PROSE_MARKS | {"("}


def _read(text: str, chosen: list[_Occurrence], prefix: str, suffix: str, sep: str, eol: bool) -> Inferred | None:
    at_line_start = all(o.line_start for o in chosen[1:])
    one_line = "\n" not in text[chosen[0].start : chosen[-1].end].rstrip("\r\n")
    marked = bool(prefix.strip()) or suffix not in ("", ":", "=")
    if not (marked or at_line_start or one_line):
        # A plain "name:" inside lines of several records (a chat log's, a stamped log's): which text is a key and
        # where a value ends is for the label readers, which know records.
        return None
    spaced = all(o.spaced for o in chosen)
    pattern = _key_pattern(prefix, suffix, sep, eol, at_line_start and not marked, spaced and not marked)
    # The fields' keys as found (the first one with the structure's opener), then every other key of the shape.
    starts = {o.start: o.end for o in chosen}
    for match in pattern.finditer(text):
        if not any(start <= match.start() < end for start, end in starts.items()):
            starts[match.start()] = match.end()
    keys = sorted(starts.items())
    names = {o.start: o.name for o in chosen}
    spans: dict[str, list[tuple[int, int, int]]] = {}
    for index, (start, end) in enumerate(keys):
        if start in names:
            limit = keys[index + 1][0] if index + 1 < len(keys) else len(text)
            spans.setdefault(names[start], []).append((start, end, limit))
    if set(spans) != set(FIELDS):
        return None
    given = {name: {" ".join(text[end:limit].split()) for _, end, limit in found} for name, found in spans.items()}
    if any(len(texts) > 1 for texts in given.values()):
        return None  # a field keyed twice with two values: two answers, or a draft and its answer
    firsts = {name: found[0] for name, found in spans.items()}
    raw = {name: text[end:limit].strip() for name, (_, end, limit) in firsts.items()}
    last = max(firsts, key=lambda name: firsts[name][0])
    others = [raw[name] for name in raw if name != last]
    single_line = all("\n" not in value for value in others)
    # Quoted keys quote their values too ("hook" => "..."), unless the key is an attribute ending a tag.
    quoted = any(quote in prefix + suffix for quote in _QUOTES) and ">" not in suffix.replace("=>", "")
    values: dict[str, str] = {}
    for name in FIELDS:
        value = _value(raw[name], name == last, single_line, quoted)
        if value is None or _KEYED_VALUE.match(value) or (sep and sep in value and len(sep) > 1):
            # More than a value: text beside a literal, a value keyed itself ("value: ..."), another entry's
            # separator: the structure is other than this shape.
            return None
        values[name] = value
    opened = chosen[0].name if chosen[0].prefix != prefix else None
    return Inferred(values, min(start for start, _, _ in firsts.values()), pattern, opened)


def _key_pattern(prefix: str, suffix: str, sep: str, eol: bool, line_start: bool, spaced: bool) -> re.Pattern[str]:
    # A key marked by a separator alone is found only where the fields' keys are (at a line's start, or after a
    # space or an entry's separator on a one-line record), and before a space, so "note: " inside a value or
    # "Lock:relation" is no key.
    lead = r"(?m:^)[ \t]*" if line_start else r"(?:(?<=[\s,;])|^)"
    marks = re.escape(prefix).replace("0", r"\d+").replace("\\ ", r"[ \t]+")
    tail = re.escape(suffix) + (r"[ \t]*" + re.escape(sep) if sep else "")
    end = r"[ \t]*(?:\r?\n|$)" if eol else r"(?=\s|$)" if spaced else ""
    return re.compile(rf"{lead}{marks}[^\W\d][\w.-]{{0,{_NAME_MAX}}}{tail}{end}")


def _value(raw: str, last: bool, single_line: bool, quoted: bool) -> str | None:
    """A key's value from the text up to the next key, or None when the text is more than a value.

    A value is string literals (adjacent ones joined, as C, Python and gettext join them) with nothing but marks
    around them, and must be when the keys are quoted; else it is one line of text without the structure's marks
    (separators between entries, closing tags, closers opened before it).
    """
    value = raw
    if last and single_line:
        value = value.split("\n", 1)[0]  # the last entry ends where the others do: at its line's end
    if last:
        value = _without_closing_lines(value)
    literal = _literals(value)
    if literal is not None or quoted or value[:1] in _QUOTES:
        return literal
    value = _EDGE_TAGS.sub("", value.rstrip().rstrip(",;&|")).strip()
    value = _LEADING_SEPARATOR.sub("", value)
    if "\n" in value:
        return None  # text over several lines is a section, not a value: the label readers read those
    while _unbalanced_end(value):
        value = value[:-1].rstrip().rstrip(",;").rstrip()
    if _FORM_ENCODED.search(value) and not any(char.isspace() for char in value):
        value = unquote_plus(value)  # a query string's value: its spaces are "+" and its marks "%XX"
    elif _CODE_POINT_ESCAPE.search(value):
        value = unescape_literal(value)  # a format that escapes its values unquoted (Java's properties: "f\u00FCr")
    return value


_PAIRS: Final = {")": "(", "]": "[", "}": "{"}


def _unbalanced_end(value: str) -> bool:
    """Whether ``value`` ends with a closer opened before it (the structure's), or a quote closing a string opened
    before it (``content='...'``) after the sentence's end."""
    last = value[-1:]
    if last in _PAIRS:
        return value.count(last) > value.count(_PAIRS[last])
    return last in ("'", '"') and value[-2:-1] in (".", "?", "!") and value.count(last) % 2 == 1


def _literals(value: str) -> str | None:
    """The content of the string literals ``value`` is (after a short type mark: ``string(61) "..."``,
    ``[1] "..."``, ``<<"...">>``), joined, or None when anything but marks is left around them."""
    start = _LITERAL_START.match(value)
    if start is None:
        return None
    pieces: list[str] = []
    position = start.start("quote")
    while True:
        quote = value[position]
        close = _closing_quote(value, position + 1, _QUOTES[quote])
        if close is None:
            return None
        pieces.append(unescape_literal(value[position + 1 : close]))
        rest = re.compile(r"[^\w\"'“«]*").match(value, close + 1)
        assert rest is not None
        if rest.end() == len(value):
            if _LETTER.search(value[close + 1 :]) is not None:
                return None
            return "".join(pieces).strip()
        if value[rest.end()] not in _QUOTES or len(value[close + 1 : rest.end()].strip()) > _JUNK_MAX:
            return None
        position = rest.end()


def _closing_quote(value: str, start: int, quote: str) -> int | None:
    index = start
    while index < len(value):
        char = value[index]
        if char == "\\":
            index += 2
            continue
        if char == quote:
            return index
        index += 1
    return None


def _without_closing_lines(value: str) -> str:
    """``value`` without its last lines that only close a structure (``)``, ``\\end{description}``, ``</dict>``)."""
    lines = value.rstrip().split("\n")
    while len(lines) > 1 and only_marks(lines[-1]):
        lines.pop()
    return "\n".join(lines).rstrip()


def only_marks(text: str) -> bool:
    """Whether ``text`` holds no letter or digit but in markup's commands and tags."""
    return _ALNUM.search(_COMMAND.sub("", text)) is None
