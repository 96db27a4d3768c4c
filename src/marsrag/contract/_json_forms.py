"""JSON in text: where documents are, how they decode, and the answers inside them.

Documents are found in code fences (several, of any language) and in prose (successive objects, JSON
Lines of one key each, key-value lines without braces); the answers inside a decoded value are found through
envelopes (a single-key wrapper, a one-element list, a JSON-encoded string, a tool call's ``arguments``).
Broken JSON is parsed in two steps, each by a real parser rather than hand-written fixes: Python-literal
style (single quotes, trailing commas) by the standard library's ``ast.literal_eval``, which parses exactly
that syntax, then anything else (comments, a missing brace, unquoted keys) by ``json_repair``. Repair runs
only when a field key is visible and the span is small. A flat object that is exact JSON but for the commonest
breakage (its closing brace left off, a trailing comma, comments) reads the same through the standard library's
``json`` once that one defect is undone (:func:`nearly_exact`), several times faster than the repair library.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, NamedTuple

from marsrag.contract._label_names import GLOSS, LABEL_FIELDS, LABEL_HINT
from marsrag.contract._reasoning import REASONING_NAMES
from marsrag.contract._trie import trie_pattern
from marsrag.contract.issues import ContractIssue
from marsrag.contract.rules import MAX_REPAIR_CHARS
from marsrag.contract.template import FIELDS

_FIELD_SET: Final = frozenset(FIELDS)
# A field name used as a key: bare or quoted (straight, curly, escaped or entity quotes), then a colon (full-width
# too). Gates repair.
_JSONISH_KEY: Final = re.compile(
    r"(?:hook|grip|payoff|reinforce|loop)(?:\\{0,3}[\"'“”‘’]|&(?:quot|#34|#x22);)?\s*[:：]", re.IGNORECASE
)
# A quoted field key, then a colon: a line of a bare key-value list when it starts its line. Written in its three
# cases rather than case-blind, so the search jumps from quote to quote.
_QUOTED_FIELD: Final = re.compile(
    '"(?:' + "|".join(variant for name in FIELDS for variant in (name, name.title(), name.upper())) + ')"[ \t]*:'
)
_QUOTED_KEY: Final = re.compile(r'"([^"\n]{1,40})"\s*:')
# Escapes whose meaning differs between JSON and Python literals (JSON's "\/" for one).
_NON_PYTHON_ESCAPE: Final = re.compile(r"\\[^\"'\\nrtbfu]")
_NON_LETTERS: Final = re.compile(r"[^a-z]")
# Deep enough for a trace around a response around a message (a HAR entry's response text, decoded, holds the
# API's choices: a dozen levels); the visits bound the work.
_MAX_UNWRAP_DEPTH: Final = 16
# An envelope is small (a tool call, a chat message, an API response, whose metadata can run to a few dozen keys): a
# wide object is data, not one.
_MAX_ENVELOPE_KEYS: Final = 48
# A list is an answer's envelope up to this many items (its blocks, or one object per field).
_MAX_BLOCKS: Final = 12
_MAX_VISITS: Final = 512
# The prompt's side of a request or a trace: messages in these roles, and keys with these words as a segment.
_PROMPT_ROLES: Final = frozenset({"user", "system", "developer", "human", "tool"})
_PROMPT_SEGMENTS: Final = frozenset({"prompt", "prompts", "system", "instruction", "instructions"})
# The reference side of an evaluation record: the answer its author expected, not one a model gave (DeepEval's
# expected_output, Ragas' reference and ground_truth, OpenAI evals' ideal, promptfoo's expected, datasets' golden).
_REFERENCE_SEGMENTS: Final = frozenset({"expected", "reference", "references", "ideal", "golden", "truth"})
_SIDE_SEGMENTS: Final = _PROMPT_SEGMENTS | _REFERENCE_SEGMENTS
# A key's words: camelCase and snake_case alike ("expectedOutput", "system_prompt").
_SEGMENT: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# The keys that say who wrote a message (OpenAI's role, AutoGen's source, a chat export's author or sender, a
# transcript's type).
_AUTHOR_KEYS: Final = frozenset({"role", "source", "sender", "author", "from", "speaker", "type"})
# Decoding is tried at most this many times where it fails (each failure may scan far); a value decoded consumes its
# text, so many of those cost one pass in all (a stream of chunks is hundreds of small objects).
_MAX_DECODE_STARTS: Final = 32
_MAX_DECODED: Final = 2048
# A stream of chunks or a response's parts: at least this many, its text under a key at most this deep, and at most
# this many candidate texts (string leaves that vary) read from it.
_MIN_CHUNKS: Final = 2
_MAX_STREAM_DEPTH: Final = 8
_MAX_STREAM_PATHS: Final = 4
# A piece that is a label alone (a card's "Hook" text block), and one that starts with a label ("*Hook*\n...").
_LABEL_ALONE: Final = re.compile(rf"[\W_]{{0,6}}(?:{trie_pattern(LABEL_FIELDS)}){GLOSS}[\W_]{{0,6}}", re.IGNORECASE)
_LABEL_FIRST: Final = re.compile(
    rf"[\W_]{{0,6}}(?:{trie_pattern(LABEL_FIELDS)}){GLOSS}[ \t*_]{{0,3}}(?:[:：\n]|$)", re.IGNORECASE
)
# JSON Schema's annotation keywords (draft 2020-12, Meta-Data vocabulary) and OpenAPI's "example": a property holding
# them describes a field, it gives no value.
_SCHEMA_ANNOTATIONS: Final = frozenset({"title", "description", "default", "examples", "example", "$comment"})
# How a message ends: a sentence's end, or a colon introducing the next.
_MESSAGE_ENDS: Final = frozenset(".!?:…。！？：")
# A list of strings whose pieces average at most this many characters is a text's tokens, not its lines.
_MAX_TOKEN_CHARS: Final = 12


class Unfinished(str):
    """A text known to stop in its last field: a stream of line records whose writer stopped mid-line."""

    __slots__ = ()


class Conflict(tuple[Any, ...]):
    """The values of a field key an object gives twice with different values: two answers for that field."""

    __slots__ = ()


def object_from_pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """An object from its pairs, as ``json`` builds it, but a field key given twice with different values holds
    a :class:`Conflict` of them instead of silently the last (one answer is never chosen over the other)."""
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    value = {}
    for key, item in pairs:
        previous = value.get(key, item)
        if previous != item and field_key(key) is not None:
            item = Conflict((*previous, item) if isinstance(previous, Conflict) else (previous, item))
        value[key] = item
    return value


_DECODER: Final = json.JSONDecoder(object_pairs_hook=object_from_pairs)
# A JSON string (matched whole, so a "//" inside it, a URL, stays), or a comment where a key or a value is due
# (after a comma or an opening bracket): the only place the repair library reads every comment as one.
_STRING_OR_COMMENT: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(?P<lead>[,{\[]\s*)(?://[^\n]*|/\*.*?\*/)', re.DOTALL)
# Escapes json and json_repair read differently, so a document holding one is left to the repair library and the
# verdict is the same either way: escaped surrogates (json pairs two into one character, the repair library keeps
# both), an escaped backslash (the repair library misreads what follows it), "\\/" and "\\f" (kept as written),
# "\\n" ending a string (dropped by the repair library).
_READ_OTHERWISE: Final = re.compile(r'\\(?:[^"ntrbu]|u[dD][89a-fA-F]|n")')


def _no_constants(name: str) -> Any:
    raise ValueError(name)


# NaN and Infinity are refused too: json reads a float, the repair library a string.
_STRICT_DECODER: Final = json.JSONDecoder(parse_constant=_no_constants, object_pairs_hook=object_from_pairs)


def field_key(key: object) -> str | None:
    """The contract field a JSON key names (any case, stray punctuation ignored), or None."""
    if key in _FIELD_SET:
        return key
    if not isinstance(key, str):
        return None
    folded = _NON_LETTERS.sub("", key.casefold())
    return folded if folded in _FIELD_SET else None


def loads(text: str) -> Any:
    """``json.loads`` that answers None instead of raising on malformed or absurdly nested input."""
    try:
        return _DECODER.decode(text)
    except (ValueError, RecursionError):
        return None


def answers(value: Any) -> Iterator[Mapping[str, Any] | str]:
    """The answers inside a parsed JSON (or YAML) value, in document order.

    An answer is a mapping holding contract keys, or a string that may hold one as text (labelled sections,
    or JSON that did not parse). Around them the walk goes through envelopes: a single-key wrapper
    (``{"output": {...}}``), a one-element list, the one item of a longer list that holds an answer (a
    response's thinking block beside its text block), a JSON-encoded string, and the values of an object without
    contract keys (a tool call's ``arguments`` or ``parameters`` beside its ``name``, a chat message's
    ``content`` beside its ``role``), and a text given as its tokens (read joined). It never splits a list or a bare
    string into fields: an array of texts has no keys, so it is no answer; nor does it choose among several items
    that each hold one. Depth
    and the number of values visited are bounded (YAML aliases can make a small document a huge tree).
    """
    return _walk(value, 0, [_MAX_VISITS])


def _walk(value: Any, depth: int, budget: list[int]) -> Iterator[Mapping[str, Any] | str]:
    budget[0] -= 1
    if depth > _MAX_UNWRAP_DEPTH or budget[0] < 0:
        return
    if isinstance(value, dict):
        if not _FIELD_SET.isdisjoint(value) or any(field_key(key) for key in value):
            yield value
        elif len(value) <= _MAX_ENVELOPE_KEYS and not _is_reasoning_block(value) and not _is_prompt_message(value):
            for key, inner in value.items():
                if not _names_reasoning(key) and not _is_prompt_side(key):
                    yield from _walk(inner, depth + 1, budget)
    elif isinstance(value, list):
        if len(value) == 1:
            yield from _walk(value[0], depth + 1, budget)
        else:
            last = _last_turn(value)
            if last is not None:
                # A conversation: the answer is the model's last turn; its earlier turns answered earlier questions.
                yield from _walk(last, depth + 1, budget)
                return
            pairs = _named_values(value)
            if pairs is not None:
                yield pairs
                return
            if _are_pieces(value):
                # A model's output as its tokens (Replicate's ``output``), a text as its lines (a notebook's
                # multiline strings): pieces of one text, read joined.
                joined = "".join(value)
                if joined.lstrip()[:1] in ("{", "[") or LABEL_HINT.search(joined):
                    yield joined
                return
            tree = tree_text(value)
            if tree is not None:
                # A rich-text document's nodes (Jira's ADF, ProseMirror, Slate, Portable Text, Notion's blocks):
                # the text its leaves spell, inline pieces joined as they are, blocks as paragraphs.
                if LABEL_HINT.search(tree):
                    yield tree
                return
            for joined in streamed_texts(value):
                # Pieces of one text (a stream's chunks, a response's parts): read joined, as text one layer down.
                if joined.lstrip()[:1] in ("{", "[") or LABEL_HINT.search(joined):
                    yield joined
            if len(value) <= _MAX_BLOCKS:
                # Blocks of several kinds (a thinking block and a text block, the user's message and the
                # assistant's): the answer is in the one block that holds one; several that do are a list of
                # answers, not one.
                found = [list(_walk(item, depth + 1, budget)) for item in value]
                holding = [answers for answers in found if answers]
                if len(holding) == 1:
                    yield from holding[0]
    elif isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[", '"'):
            parsed = loads(text)
            if parsed is not None:
                yield from _walk(parsed, depth + 1, budget)
                return
        if LABEL_HINT.search(text):
            yield text


def _last_turn(items: list[Any]) -> dict[Any, Any] | None:
    """The model's last message in a conversation (a list of messages, each with its author, the prompt's side among
    them: a chat's history, a saved session), or None when the list is no conversation."""
    if not all(isinstance(item, dict) and any(_names_the_author(key) for key in item) for item in items):
        return None
    if not any(_is_prompt_message(item) for item in items):
        return None
    answering = [item for item in items if not _is_prompt_message(item) and not _is_reasoning_block(item)]
    return answering[-1] if answering else None


def _names_reasoning(name: object) -> bool:
    """Whether a key or a type names reasoning (``reasoning_content``, ``reasoningContent``, ``thinking``)."""
    return isinstance(name, str) and _NON_LETTERS.sub("", name.casefold()).startswith(REASONING_NAMES)


def _is_prompt_side(key: object) -> bool:
    """Whether a key holds the prompt, not the answer (OpenTelemetry's ``gen_ai.prompt.0.content``, a request's
    ``system`` or ``instructions``): its examples and formats are what the model was shown."""
    return _has_segment(key, _SIDE_SEGMENTS)


def _has_segment(key: object, segments: frozenset[str]) -> bool:
    """Whether one of a key's words (camelCase and snake_case alike) is among ``segments``."""
    return isinstance(key, str) and not segments.isdisjoint(segment.casefold() for segment in _SEGMENT.findall(key))


def _names_the_author(key: object) -> bool:
    return isinstance(key, str) and key.casefold() in _AUTHOR_KEYS


def prompt_side_texts(value: Any) -> list[str]:
    """The texts of a parsed value's prompt side that hold labels: a user's, a system's or a tool's message, a
    prompt-named key's value. They are what the model was given; an answer repeating one of their sections repeats
    the prompt (a flow that wired its input straight to its output), whatever envelope the copy sits in."""
    found: list[str] = []
    _prompt_side(value, False, 0, [_MAX_VISITS], found)
    return found


def _prompt_side(value: Any, given: bool, depth: int, budget: list[int], found: list[str]) -> None:
    budget[0] -= 1
    if depth > _MAX_UNWRAP_DEPTH or budget[0] < 0 or len(found) >= _MAX_PROMPT_TEXTS:
        return
    if isinstance(value, str):
        if given and LABEL_HINT.search(value):
            found.append(value)
    elif isinstance(value, dict):
        given = given or _is_prompt_message(value)
        for key, inner in value.items():
            _prompt_side(inner, given or _names_the_prompt(key), depth + 1, budget, found)
    elif isinstance(value, list):
        for item in value:
            _prompt_side(item, given, depth + 1, budget, found)


_MAX_PROMPT_TEXTS: Final = 8


def _names_the_prompt(key: object) -> bool:
    """Whether a key names what the model was given (a prompt, an input, a system message); a reference answer's key
    (``expected_output``) does not: an answer matching it is a right answer, not an echo."""
    return _has_segment(key, _PROMPT_SEGMENTS)


def _is_prompt_message(block: dict[Any, Any]) -> bool:
    """Whether an object is a message of the prompt's side: the user's, the system's, a tool's."""
    return any(
        isinstance(author, str) and author.casefold() in _PROMPT_ROLES
        for key, author in block.items()
        if _names_the_author(key)
    )


def _is_reasoning_block(block: dict[Any, Any]) -> bool:
    """Whether an object of a response is its reasoning: typed so (``{"type": "thinking"}``, a ``reasoning`` item)
    or flagged so (Gemini's ``{"text": ..., "thought": true}``). Never an answer, whatever its text holds."""
    kind = block.get("type")
    return _names_reasoning(kind) or any(flag is True and _names_reasoning(key) for key, flag in block.items())


def _named_values(items: list[Any]) -> dict[str, Any] | None:
    """The answer of a list of name/value objects (``[{"type": "hook", "content": "..."}, ...]``), or None.

    Each item holds exactly two strings: one names a contract field, the other is its value (whatever the two
    keys are called). A field named twice, or any other item, makes the list data, not an answer.
    """
    if not 2 <= len(items) <= _MAX_BLOCKS:
        return None
    found: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict):
            return None
        strings = [text for text in item.values() if isinstance(text, str)]
        if len(strings) != 2:
            return None
        first, second = (field_key(text.strip()) for text in strings)
        if (first is None) == (second is None):
            return None  # neither names a field, or both do: which is the value is not said
        name, text = (first, strings[1]) if first is not None else (second, strings[0])
        if name is None or name in found:
            return None
        found[name] = text
    return found


def typed_value(value: dict[Any, Any]) -> Any:
    """The text a typed value wraps (DynamoDB's ``{"S": "..."}``, Firestore's ``{"stringValue": "..."}``, Terraform's
    ``{"type": "string", "value": "...", "sensitive": false}``): its one string of words, beside type names and
    flags; else the value as it is (a field holding other data, or two texts, is no text, nor is a schema's property
    described by JSON Schema's annotation keywords)."""
    if not _SCHEMA_ANNOTATIONS.isdisjoint(value):
        return value  # a schema's property: its description says what the field should hold, it holds nothing
    texts = [item for item in value.values() if isinstance(item, str) and len(item.split()) > 1]
    others = [item for item in value.values() if isinstance(item, dict | list)]
    return texts[0] if len(texts) == 1 and not others else value


def unwrap(value: Any) -> Mapping[str, Any] | None:
    """The first mapping holding contract keys inside a parsed JSON value (see :func:`answers`), or None."""
    return next((found for found in answers(value) if not isinstance(found, str)), None)


def normalize_keys(mapping: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[ContractIssue, ...]]:
    """Map keys to contract fields; unknown and duplicate keys become warnings (first value wins)."""
    if mapping.keys() <= _FIELD_SET:
        return dict(mapping), ()
    values: dict[str, Any] = {}
    notes: list[ContractIssue] = []
    for key, value in mapping.items():
        name = field_key(key)
        if name is None:
            notes.append(ContractIssue(None, "unknown_key", f"unknown key {str(key)[:60]!r} ignored"))
        elif name in values:
            notes.append(ContractIssue(name, "duplicate_key", f"key {str(key)[:60]!r} repeats {name}; ignored"))
        else:
            values[name] = value
    return values, tuple(notes)


def unknown_key_notes(json_text: str) -> tuple[ContractIssue, ...]:
    """Warnings for the keys of a JSON object that are not contract fields."""
    value = loads(json_text)
    return normalize_keys(value)[1] if isinstance(value, dict) else ()


class Segment(NamedTuple):
    """A stretch of a region: a code fence's body or the text between fences, at ``start``."""

    start: int
    text: str
    fenced: bool


def segments(region: str) -> list[Segment]:
    """The region split into code-fence bodies and the text around them, in order (blank stretches left out).

    A fence opens with three backticks or tildes anywhere (its info string, "json" or "python", is the rest
    of that line) and closes with the same three characters; an unclosed last fence runs to the end. Three
    backticks whose line holds another backtick open no fence: that is an inline code span.
    """
    # One-character tests first: they are memchr scans, a three-character one is not.
    marks = [mark for mark, char in (("```", "`"), ("~~~", "~")) if char in region and mark in region]
    if not marks:
        return [Segment(0, region, False)]
    found: list[Segment] = []
    pos = scan = 0
    while True:
        starts = [index for index in (region.find(mark, scan) for mark in marks) if index >= 0]
        if not starts:
            break
        start = min(starts)
        line_end = region.find("\n", start + 3)
        if line_end < 0:
            break
        if region[start] == "`" and "`" in region[start + 3 : line_end]:
            # A backtick fence's info string holds no backtick (CommonMark): "```{...}```" is an inline code span,
            # part of the prose around it.
            scan = line_end
            continue
        if region[pos:start].strip():
            found.append(Segment(pos, region[pos:start], False))
        end = region.find(region[start : start + 3], line_end)
        found.append(Segment(line_end + 1, region[line_end + 1 : end if end >= 0 else len(region)], True))
        if end < 0:
            return found
        pos = scan = end + 3
    if region[pos:].strip() or not found:
        found.append(Segment(pos, region[pos:], False))
    return found


class Decoded(NamedTuple):
    """A JSON value decoded exactly from ``text[start:end]``."""

    start: int
    end: int
    value: Any


def decode_all(text: str) -> tuple[list[Decoded], list[int]]:
    """The top-level JSON values in ``text``, decoded exactly; and where broken JSON documents start.

    Objects are decoded from successive ``{`` positions (skipping what a decoded value covers), an array or a
    string only at the very start. A broken document starts at the first ``{`` of a gap between decoded values
    that fails to decode while a field key follows it in that gap: it is the one to rewrite or repair.
    """
    found: list[Decoded] = []
    failed: list[int] = []
    gap_failure: int | None = None
    first = len(text) - len(text.lstrip())
    pos = first
    if text[first : first + 1] in ("[", '"'):
        try:
            value, end = _DECODER.raw_decode(text, first)
        except (ValueError, RecursionError):
            pass
        else:
            found.append(Decoded(first, end, value))
            pos = end
    failures = 0
    while failures < _MAX_DECODE_STARTS and len(found) < _MAX_DECODED:
        start = text.find("{", pos)
        if start < 0:
            break
        decoded = _decode_at(text, start)
        if decoded is None:
            failures += 1
            if gap_failure is None:
                gap_failure = start
            pos = start + 1
            continue
        value, end = decoded
        if gap_failure is not None and _JSONISH_KEY.search(text, gap_failure, start):
            failed.append(gap_failure)
        gap_failure = None
        found.append(Decoded(start, end, value))
        pos = end
    if gap_failure is not None and _JSONISH_KEY.search(text, gap_failure):
        failed.append(gap_failure)
    return found, failed


def _decode_at(text: str, start: int) -> tuple[Any, int] | None:
    """The value decoded exactly from the ``{`` at ``start`` and where it ends, or None."""
    # No closing brace after it: no object can start here (the usual broken answer), so do not parse.
    if text.find("}", start) < 0:
        return None
    try:
        return _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None


def joined_lines(text: str, found: list[Decoded]) -> Decoded | None:
    """JSON Lines of one field each (``{"hook": ...}`` then ``{"grip": ...}``) joined into one object.

    Joined only when two or more objects follow each other with nothing but white space or commas between
    them, every key is a contract field and no field repeats. Returns the joined object and the span of its lines.
    """
    run: list[Decoded] = []
    for item in found:
        if not isinstance(item.value, dict) or not item.value:
            run = []
            continue
        if run and text[run[-1].end : item.start].strip(" \t\r\n,"):
            run = []
        run.append(item)
    if len(run) < 2:
        return None
    joined: dict[str, Any] = {}
    for item in run:
        for key, value in item.value.items():
            name = field_key(key)
            if name is None or name in joined:
                return None
            joined[name] = value
    return Decoded(run[0].start, run[-1].end, joined)


# Stands for a node whose content is no text (never in a text: a private-use character).
_HIDDEN: Final = "\U000f0000"


def tree_text(nodes: list[Any]) -> str | None:
    """The text of a list of rich-text nodes, or None when the list is no such tree.

    A node is a text leaf (its ``text`` a string, or Notion's ``{"text": {"content": ...}}``) or a container (a list
    of nodes under some key: ``content``, ``children``, ``rich_text``). A tree has a container with two children at
    least (a stream's chunks each hold one choice). Siblings join as a list's pieces do (:func:`_joined_pieces`).
    A leaf that is only its type is a break; one with attributes and no text (a link card, a mention) shows what
    the text does not hold, so a tree with one reads as no text ("").
    """
    if not all(isinstance(node, dict) for node in nodes):
        return None
    budget = [_MAX_VISITS]
    texts = [_node_text(node, 0, budget) for node in nodes]
    if budget[0] < 0 or not any(_branches(node, 0) for node in nodes):
        return None
    if _HIDDEN in "".join(texts):
        return ""  # a node shown as something else than text (a link card, a mention): the text is not all there
    return _joined_pieces([text for text in texts if text])


def _children(node: dict[Any, Any]) -> list[Any] | None:
    """A node's child nodes: its one list of objects that hold text."""
    for value in node.values():
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            if any(_leaf_text(item) is not None or _children(item) for item in value):
                return value
    return None


def _leaf_text(node: dict[Any, Any]) -> str | None:
    text = node.get("text")
    if isinstance(text, dict):
        text = text.get("content")
    return text if isinstance(text, str) else None


def _node_text(node: dict[Any, Any], depth: int, budget: list[int]) -> str:
    budget[0] -= 1
    if depth > _MAX_UNWRAP_DEPTH or budget[0] < 0:
        return ""
    children = _children(node)
    if children is None:
        text = _leaf_text(node)
        if text is None:
            # A node without text: a line break or a rule when it is only its type, else content shown otherwise.
            return "\n" if set(node) <= {"type", "_type"} else _HIDDEN
        return text
    return _joined_pieces([text for text in (_node_text(child, depth + 1, budget) for child in children) if text])


def _branches(node: dict[Any, Any], depth: int) -> bool:
    """Whether a node, or one below it, has two children or more."""
    children = _children(node) if depth <= _MAX_UNWRAP_DEPTH else None
    return children is not None and (len(children) > 1 or any(_branches(child, depth + 1) for child in children))


def streamed_texts(chunks: list[Any]) -> list[str]:
    """The texts a list of pieces spells: for each string leaf the pieces share, its values joined in order.

    A streaming API's output pasted raw is one JSON object per chunk, each holding the next piece of the answer
    under the same key (Ollama's ``{"response": "Ho"}``, OpenAI's ``{"choices": [{"delta": {"content": "Ho"}}]}``,
    Anthropic's ``{"delta": {"text": "Ho"}}``, Gemini's chunks collected in an array), beside metadata that repeats
    or counts; a response may also give its text in several parts (Gemini's ``parts``). Which key holds the text is
    not assumed: every string leaf present in most pieces and not the same in all of them is a candidate text, and
    the reader judges each. Two pieces at least, all objects.

    Pieces that are lines (most end in a line break: a container's log records) and one that does not, with more
    after it, stopped mid-line (the writer crashed or restarted): the text ends there, :class:`Unfinished`.
    """
    if not _MIN_CHUNKS <= len(chunks) <= _MAX_DECODED or not all(isinstance(chunk, dict) for chunk in chunks):
        return []
    # A reasoning piece (Gemini's thought parts) is no piece of the answer, nor is a message of the prompt's side (a
    # list of messages is no stream).
    leaves = [
        _string_leaves(chunk, (), 0)
        for chunk in chunks
        if not _is_reasoning_block(chunk) and not _is_prompt_message(chunk)
    ]
    counts: dict[tuple[Any, ...], int] = {}
    for chunk_leaves in leaves:
        for path in chunk_leaves:
            counts[path] = counts.get(path, 0) + 1
    texts: list[str] = []
    for path, count in counts.items():
        if 3 * count < 2 * len(chunks):
            continue
        values = [chunk_leaves[path] for chunk_leaves in leaves if path in chunk_leaves]
        if len(set(values)) > 1 and len(texts) < _MAX_STREAM_PATHS:
            texts.append(_joined_pieces(values))
    return texts


def _are_pieces(values: list[Any]) -> bool:
    """Whether a list is one text in pieces: strings only, and either short on average (tokens, cut anywhere) or
    lines, each but the last ending in its line break (nbformat's multiline strings). Other strings are texts of
    their own (a list of answers, of messages), each read on its own."""
    if not all(isinstance(value, str) for value in values):
        return False
    if sum(map(len, values)) <= _MAX_TOKEN_CHARS * len(values):
        return True
    return all(value.endswith("\n") for value in values[:-1])


def _block_boundary(piece: str, after: str) -> bool:
    """Whether two pieces of a list meet where blocks do: the first ends a sentence (or a colon), or is a label
    alone, or the next starts with a label. A stream's chunks are cut anywhere, mostly inside sentences."""
    if piece.rstrip()[-1:] in _MESSAGE_ENDS:
        return True
    return _LABEL_ALONE.fullmatch(piece.strip()) is not None or _LABEL_FIRST.match(after.strip()) is not None


def _joined_pieces(values: list[str]) -> str:
    """Pieces joined; line records cut short by one that stopped mid-line (see :func:`streamed_texts`)."""
    if all(_block_boundary(value, after) for value, after in zip(values, values[1:], strict=False)):
        # Every piece ends where a block ends: messages of one reply (a bot's one message per paragraph), a card's
        # text blocks, not chunks cut anywhere; each is its own paragraph.
        return "\n\n".join(value.strip() for value in values)
    lines = sum(value.endswith("\n") for value in values)
    if 3 * lines >= 2 * len(values):
        stopped = next((index for index, value in enumerate(values[:-1]) if not value.endswith("\n")), None)
        if stopped is not None:
            return Unfinished("".join(values[: stopped + 1]))
    return "".join(values)


def _string_leaves(value: Any, path: tuple[Any, ...], depth: int) -> dict[tuple[Any, ...], str]:
    """The string leaves of a chunk by path (a list's first item only: a stream's choices hold one)."""
    if isinstance(value, str):
        return {path: value}
    if depth >= _MAX_STREAM_DEPTH:
        return {}
    if isinstance(value, dict):
        leaves: dict[tuple[Any, ...], str] = {}
        for key, inner in value.items():
            if not _names_reasoning(key) and not _is_prompt_side(key):
                leaves.update(_string_leaves(inner, (*path, key), depth + 1))
        return leaves
    if isinstance(value, list) and value:
        return _string_leaves(value[0], (*path, 0), depth + 1)
    return {}


def bare_pairs(text: str) -> tuple[int, str] | None:
    """Key-value lines without braces (``"hook": "...",``): their offset and the object they spell, or None.

    The block runs over consecutive lines that start with a quoted key, the first a contract field's.
    """
    match = _QUOTED_FIELD.search(text)
    if match is None or "{" in text[: match.start()]:
        return None
    line_start = text.rfind("\n", 0, match.start()) + 1
    if text[line_start : match.start()].strip():
        return None
    lines = text[match.start() :].split("\n")
    block: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if _QUOTED_KEY.match(stripped) is None:
            break
        block.append(stripped)
    body = "\n".join(block).rstrip(",")
    return match.start(), "{" + body + "}"


def has_quoted_field_key(text: str) -> bool:
    """Whether a contract field is used as a quoted JSON key (``"hook":``) somewhere in ``text``."""
    return '"' in text and _QUOTED_FIELD.search(text) is not None


def repairable(span: str, *, key_seen: bool = False) -> bool:
    """Whether a broken span is worth handing to repair: small enough, and a field key is visible in it."""
    return len(span) <= MAX_REPAIR_CHARS and (key_seen or _JSONISH_KEY.search(span) is not None)


@functools.cache
def _repair_loads() -> Callable[..., Any]:
    # Deferred: importing json_repair costs ~50 ms, which only broken JSON should pay.
    # lazy: json-repair, only broken JSON needs it
    from json_repair import loads as repair_loads

    return repair_loads


def _drop_comment(match: re.Match[str]) -> str:
    lead = match.group("lead")
    return match.group() if lead is None else lead + " "


def nearly_exact(span: str) -> dict[str, Any] | None:
    """The object a flat ``span`` spells when it is exact JSON but for its commonest breakage; else None.

    The breakage undone, each exactly: the closing brace left off after a complete last value, a trailing comma
    before the closing brace, ``//`` and ``/* */`` comments after a comma or an opening bracket (a comment
    elsewhere is read otherwise by the repair library, so it is left to it). :func:`repair` reads such a span
    the same way (every string is complete, so nothing was cut); this is one C parse instead. ``span`` holds
    one ``{`` only, at its start (a nested object changes where a broken document ends), and is stripped.
    None too for a span with none of that breakage: it is exact JSON or broken otherwise.
    """
    text = span
    if "/" in text and ("//" in text or "/*" in text):
        # Each comment becomes one space, so the text gets shorter exactly when there was one.
        text = _STRING_OR_COMMENT.sub(_drop_comment, text).rstrip()
    if "\\" in text and _READ_OTHERWISE.search(text):
        return None
    broken = len(text) != len(span)
    if text[-1:] != "}":
        text, broken = text + "}", True
    body = text[:-1].rstrip()
    if body[-1:] == ",":
        text, broken = body[:-1] + "}", True
    if not broken:
        return None
    try:
        value = _STRICT_DECODER.decode(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def repair(span: str) -> tuple[Any, bool]:
    """Parse a malformed JSON span: Python-literal syntax exactly, anything else with ``json_repair``.

    Returns the parsed value (walk it with :func:`answers`; None when nothing could be parsed) and whether it
    was parsed exactly (as a Python literal, which is complete: it has no string left open and no bracket).
    """
    if span.endswith("}") and "//" not in span and "/*" not in span and not _NON_PYTHON_ESCAPE.search(span):
        try:
            # Single quotes and trailing commas are Python literal syntax: parse it exactly, and fast.
            value = ast.literal_eval(span)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = None
        if value is not None and next(answers(value), None) is not None:
            return value, True
    try:
        # Every exact parse already failed on this text, so the library need not try json.loads again.
        return _repair_loads()(span, skip_json_loads=True), False
    except (ValueError, TypeError, IndexError, RecursionError):
        return None, False
