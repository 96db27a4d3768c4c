"""Validate raw text: remove what is never the answer, gather every candidate answer, keep the best one.

The work goes cheapest first:

0. a capture is read as its reader sees it (:data:`_AS_SEEN`: a terminal's screen, a panel's text, a transfer
   encoding undone, character data, tokens that stand for characters), each only when its cheap test says so;
1. clean JSON is one pydantic parse (the benchmarked hot path); a text that is none is read for what it spells
   (:data:`_SPELLED`: a stream's text frames, keys written in another script);
2. what follows the model's first end-of-turn token is dropped (:mod:`._turns`), then reasoning blocks and
   leaked special tokens are removed, each only when its trigger character is present (an output that is only
   reasoning fails and says so);
3. one flat JSON object broken the commonest way (no closing brace, a trailing comma, comments) that reads as a
   valid answer is the answer at once: the pipeline below could find no other candidate in it;
4. every candidate is validated: each JSON document (in any fence or in prose; exact, rewritten, repaired;
   the answers inside its envelopes), the labelled sections, the readings of YAML, tables and printed
   models, and, when none of them is valid, the HTML read as Markdown and the text with one layer of string
   escaping removed;
5. the best candidate wins: more passing fields (valid over partial over failed), then the later one, so an
   example or a placeholder object before the answer never beats it. A text that was cut (the provider said
   so, or a value string is open at its end) stopped in its last candidate, so that one is the answer.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from pydantic import ValidationError

from marsrag.contract._aliases import aliased, may_have_aliases
from marsrag.contract._config_files import config_values, may_be_config
from marsrag.contract._escapes import unescape_layer
from marsrag.contract._expressions import code_issues, code_values
from marsrag.contract._framed import framed_text, may_be_framed
from marsrag.contract._html import html_to_markdown, may_be_html
from marsrag.contract._inferred import Inferred, only_marks, read_inferred
from marsrag.contract._json_cut import cut_field, scan_end, unfinished_field
from marsrag.contract._json_forms import (
    Decoded,
    Unfinished,
    answers,
    bare_pairs,
    decode_all,
    field_key,
    has_quoted_field_key,
    joined_lines,
    loads,
    nearly_exact,
    prompt_side_texts,
    repair,
    repairable,
    segments,
    streamed_texts,
)
from marsrag.contract._json_rewrites import may_rewrite, rewrite
from marsrag.contract._keyed import may_have_keys, read_keyed
from marsrag.contract._python_repr import printed_values, read_printed
from marsrag.contract._reasoning import may_have_reasoning, strip_reasoning
from marsrag.contract._runaway import ends_in_loop
from marsrag.contract._sections import comment_blocks, find_sections
from marsrag.contract._tables import may_have_table, table_sections
from marsrag.contract._terminal import may_be_panelled, may_be_terminal, panel_text, screen_text
from marsrag.contract._tokens import (
    character_tokens,
    has_special_token,
    may_have_character_tokens,
    may_have_tokens,
    strip_special_tokens,
    strip_token_fragment,
    strip_trailing_tokens,
)
from marsrag.contract._transcribed import may_be_transcribed, transcribed_text
from marsrag.contract._transport import may_be_transport, transport_decoded
from marsrag.contract._turns import awaits_completion, end_of_turn, may_end_early, strip_role_prefix
from marsrag.contract._verdict import from_keys, from_mapping, from_model, has_truncated, input_failure, with_issues
from marsrag.contract._yaml_answers import load, yaml_document
from marsrag.contract.issues import ContractIssue, second_answer_issue
from marsrag.contract.model import LoopOutput
from marsrag.contract.result import Mode, ValidationResult
from marsrag.contract.rules import MAX_INPUT_CHARS, fold, stops_mid_sentence
from marsrag.contract.template import FIELDS
from marsrag.contract.truncation import stopped_early

_NON_SPACE: Final = re.compile(r"\S")
_CDATA: Final = re.compile(r"<!\[CDATA\[(?P<inner>.*?)\]\]>", re.DOTALL)
_NOT_LINE_BREAK: Final = re.compile(r"[^\n]")
_QUOTED_KEYS: Final = tuple(f'"{name}"' for name in FIELDS)
_FINAL_ANSWER_MARKERS: Final = ("Final Answer:", "final answer:", "FINAL ANSWER:", "Final answer:")
_REPAIRED: Final = ContractIssue(None, "repaired_json", "the JSON was malformed and was repaired")
# Decoded layers nest (an envelope's string holding escaped text): a bound keeps hostile input linear.
_MAX_LAYERS: Final = 3
_FIELD_NAME: Final = re.compile(r"hook|grip|payoff|reinforce|loop", re.IGNORECASE)
# Labelled text whose line breaks are written as "\n" escapes: a label right after one.
_ESCAPED_LINES: Final = re.compile(r"\\n(?:\W|\d){0,8}(?:hook|grip|payoff|reinforce|loop)\b", re.IGNORECASE)


class _Candidates:
    """The candidates of one text, keeping the best and the last as they come."""

    __slots__ = (
        "best",
        "best_key",
        "last",
        "last_key",
        "cut",
        "covered",
        "not_exact",
        "text",
        "code",
        "marked",
        "documents",
        "exact",
        "prompted",
    )

    def __init__(self, cut: bool, text: str) -> None:
        self.best: ValidationResult | None = None
        self.best_key = (-1, -1)
        self.last: ValidationResult | None = None
        self.last_key = (-1, -1)
        self.cut = cut
        #: The spans of the JSON documents that gave a candidate, in order.
        self.covered: list[tuple[int, int]] = []
        #: A text the one-parse path already found not to be an exact answer (so it is not parsed twice).
        self.not_exact: str | None = None
        #: The text the candidates come from, and its fields whose value is code (found on the first candidate).
        self.text = text
        self.code: dict[str, str] | None = None
        #: The text as the model wrote it, special tokens included (the keyed markup reader reads this one).
        self.marked = text
        #: The valid answers of JSON documents, with their spans: two that differ are two answers.
        self.documents: list[tuple[int, int, ValidationResult]] = []
        #: The spans of the JSON documents decoded exactly: their strings were read by the walk through them.
        self.exact: list[tuple[int, int]] = []
        #: What a prompt in the text (one awaiting its completion) gives for each field, folded.
        self.prompted: dict[str, set[str]] = {}

    def add(self, result: ValidationResult | None, position: int, end: int | None = None) -> None:
        if result is None:
            return
        if self.code is None:
            self.code = code_values(self.text)
        if self.code:
            result = with_issues(result, code_issues(result.loop_output, self.code))
        if end is not None:
            self.covered.append((position, end))
            if result.ok:
                self.documents.append((position, end, result))
        passing = len(result.passing_fields)
        if (passing, position) >= self.best_key:
            self.best, self.best_key = result, (passing, position)
        if (position, passing) >= self.last_key:
            self.last, self.last_key = result, (position, passing)
        # A value string open at the end of the text: the text was cut in this candidate, whatever was said.
        self.cut = self.cut or has_truncated(result)

    @property
    def valid(self) -> bool:
        return self.best is not None and self.best.ok and not self.cut

    def result(self) -> ValidationResult | None:
        if self.cut:
            return self.last
        best = self.best
        if best is not None and best.ok and len(self.documents) > 1:
            best = with_issues(best, _second_document(self.documents))
        if best is not None and self.prompted:
            best = with_issues(best, _prompt_echoes(best, self.prompted))
        return best

    def prompt(self, text: str) -> None:
        """Note what a prompt found in the text gives for each field: the same text as an answer's is an echo."""
        sections = find_sections(text)
        for name, value in (sections.values if sections is not None else {}).items():
            self.prompted.setdefault(name, set()).add(fold(value))


def _prompt_echoes(result: ValidationResult, prompted: dict[str, set[str]]) -> list[ContractIssue]:
    """``template_echo`` errors for the fields whose value is what the text's own prompt gives for them."""
    return [
        ContractIssue(name, "template_echo", f"{name} repeats what the output's own prompt says of it: no answer")
        for name in FIELDS
        if isinstance(result.loop_output[name], str) and fold(result.loop_output[name] or "") in prompted.get(name, ())
    ]


def _second_document(documents: list[tuple[int, int, ValidationResult]]) -> list[ContractIssue]:
    """Errors for the fields two valid JSON answers in separate documents give different content.

    The same rule as two labelled answers (:mod:`._sections`): which one is meant ("Corrected:", a model that
    answered twice) the text does not say reliably, so neither is chosen and the two are never mixed. The same
    answer written twice, or one document read two ways (exact and repaired, an envelope and its content), is one.
    """
    differing: set[str] = set()
    for index, (start, end, first) in enumerate(documents):
        for other_start, other_end, other in documents[index + 1 :]:
            if other_start < end and start < other_end:
                continue  # overlapping spans: one document
            for name in FIELDS:
                mine, theirs = first.loop_output[name], other.loop_output[name]
                if " ".join((mine or "").split()) != " ".join((theirs or "").split()):
                    differing.add(name)
    return [second_answer_issue(name) for name in FIELDS if name in differing]


def from_text(text: str, mode: Mode, cut: bool, layer: int = 0) -> ValidationResult:
    """Validate one raw text (see the module docstring for the order of the work)."""
    if len(text) > MAX_INPUT_CHARS:
        return input_failure(mode, "too_long", f"the output has more than {MAX_INPUT_CHARS:,} characters")
    if text[:1] == "\ufeff":
        text = text[1:]
    text = _read_as(text, _AS_SEEN)
    tried: str | None = None
    if text[:1] == "{":
        # Clean JSON, or clean JSON with the usual leak: a special token glued to its end.
        candidate = strip_trailing_tokens(text) if text[-1:] in (">", "]") else text
        if candidate[-1:] == "}":
            clean = _exact(candidate, mode)
            if clean is not None:
                return clean
            tried = candidate
    text = _read_as(text, _SPELLED)
    if may_end_early(text) and not _is_a_document(text):
        # What the model wrote after its turn ended is no answer, and no later candidate either.
        text = end_of_turn(text)
    reasoning = None
    if may_have_reasoning(text):
        text, reasoning = strip_reasoning(text)
    had_tokens = False
    marked = text  # with its tokens: some families key their fields with them (<|open|>argument key="hook"<|sep|>)
    if may_have_tokens(text):
        stripped = strip_special_tokens(text)
        text, had_tokens = stripped, len(stripped) != len(text)
    text = strip_token_fragment(strip_role_prefix(text))
    match = _NON_SPACE.search(text)
    if match is None:
        if reasoning is not None:
            return input_failure(
                mode, "unparseable", f"the output is only reasoning ({reasoning} …) with no answer after it"
            )
        return input_failure(
            mode, "empty", "the output is only special tokens" if had_tokens else "the output is empty"
        )
    if (reasoning is not None or had_tokens) and text[match.start()] == "{":
        # The answer after a reasoning block, or between leaked tokens, is most often clean JSON: one parse.
        text = text.strip()
        clean = _exact(text, mode) if text[-1] == "}" else None
        if clean is not None:
            return clean
    region = _final_answer_region(text)
    if awaits_completion(region):
        return input_failure(
            mode, "unparseable", "the output is a prompt that ends with a cue for the answer, and no answer after it"
        )
    if may_be_transcribed(region):
        # Captions or a delimited table: the text they carry is the answer's text, their cue numbers, timings and
        # other columns are not.
        region = transcribed_text(region) or region
    if not cut and region is text and text[match.start()] == "{":
        single = _single_document(text, match.start(), mode, layer, tried)
        if single is not None:
            return single
    # A text that ends in a repetition loop ran away to its token limit: it was cut, whatever the provider said.
    found = _Candidates(cut or ends_in_loop(region), region)
    found.not_exact = tried
    found.marked = _final_answer_region(marked) if had_tokens else region
    _collect(region, mode, found, layer)
    # Escaped line breaks in text that is no JSON document and has no real line breaks: its labels are one layer
    # down, whatever the inline labels read above.
    escaped_lines = not found.covered and "\n" not in region.strip()
    # A text that is JSON read exactly had its escapes read with its structure, which said where the answer is.
    structured = bool(found.exact) and not _names_a_field(_uncovered(region, found.exact))
    if layer < _MAX_LAYERS and "\\" in region and (not found.valid or escaped_lines) and not structured:
        _escaped_layer(region, mode, found, layer)
    result = found.result()
    if result is not None:
        return result
    return input_failure(mode, "unparseable", "no JSON object or labelled sections with contract fields found")


def _screen(text: str) -> str:
    """A console capture as its screen shows it; what follows the turn's end overwrites nothing of the answer."""
    return screen_text(end_of_turn(text) if may_end_early(text) else text)


def _has_character_data(text: str) -> bool:
    return "<![CDATA[" in text


def _character_data(text: str) -> str:
    """XML character data sections as their text, on lines of their own (a WeChat reply's ``<Content>``)."""
    return _CDATA.sub(lambda match: "\n" + match["inner"] + "\n", text)


_Reading = tuple[Callable[[str], bool], Callable[[str], str | None]]
#: A capture as its reader sees it, in order, each a cheap test and its reading (None: the text as it was): a
#: terminal's screen, a terminal UI's panels without their frames, a wire's or a mailbox's transfer encoding undone,
#: XML character data, tokens that stand for characters.
_AS_SEEN: Final[tuple[_Reading, ...]] = (
    (may_be_terminal, _screen),
    (may_be_panelled, panel_text),
    (may_be_transport, transport_decoded),
    (_has_character_data, _character_data),
    (may_have_character_tokens, character_tokens),
)
#: What a text spells once it is no clean JSON: a line-framed stream's text frames joined, the five keys written in
#: the user's script by their sound.
_SPELLED: Final[tuple[_Reading, ...]] = ((may_be_framed, framed_text), (may_have_aliases, aliased))


def _read_as(text: str, readings: tuple[_Reading, ...]) -> str:
    for applies, reading in readings:
        if applies(text):
            text = reading(text) or text
    return text


# Where a JSON document starts: the text's start, or a line within the first few hundred characters (under a file's
# path, the command that printed it).
_DOCUMENT_START: Final = re.compile(r"(?:\A|\n)[ \t]*[{\[]")
_DOCUMENT_HEADER_CHARS: Final = 400


def _document_start(text: str) -> int:
    """Where a JSON document ending the text starts, at the text's start or on a line near it; -1 when none does."""
    start = _DOCUMENT_START.search(text, 0, _DOCUMENT_HEADER_CHARS)
    if start is None or text.rstrip()[-1:] not in ("}", "]"):
        return -1
    return start.end() - 1


def _is_a_document(text: str) -> bool:
    """Whether the text is one JSON document, alone or under a header line without special tokens: its strings may
    hold a prompt's special tokens (an evaluation record's ``origin_prompt``), which its structure reads; none of
    them ends the text."""
    start = _document_start(text)
    if start < 0 or may_end_early(text[:start]):
        return False
    return isinstance(loads(text[start:]), dict | list)


def _exact(text: str, mode: Mode) -> ValidationResult | None:
    """One pydantic parse: the valid result when ``text`` is exactly a valid answer object, else None.

    None too when a value carries a leaked special token: the slower path reads the object and removes it.
    """
    try:
        model = LoopOutput.model_validate_json(text)
    except ValidationError:
        return None
    if _repeats_a_key(text):
        return None  # pydantic keeps the last of a key given twice: the slower path sees both
    if may_have_tokens(text) and any(has_special_token(value) for value in model.__dict__.values()):
        return None
    return from_model(model, mode, json_source=text)


def _repeats_a_key(text: str) -> bool:
    """Whether a field's key may be given twice (a quoted field name seen twice): five C-speed counts."""
    return any(text.count(key) > 1 for key in _QUOTED_KEYS)


def _single_document(text: str, first: int, mode: Mode, layer: int, tried: str | None) -> ValidationResult | None:
    """The valid answer of a text that is one flat JSON object, exact or broken the commonest way; else None.

    The repair forms' fast path: with one ``{`` (at ``first``), no fence and no ``Final Answer:`` marker, the
    object's document covers the text, so once it is a valid answer no other candidate can beat it. The answer is
    the one the candidate pipeline reads (exact, else what repair gives for a missing closing brace, a trailing
    comma or comments: :func:`nearly_exact`), without the repair library, the end scan and the other readings.
    Not for a cut text (its last field is judged by how the document ends) nor a span a rewrite would change.
    """
    # One-character tests before the three-character ones: memchr scans.
    if text.count("{") != 1 or ("`" in text and "```" in text) or ("~" in text and "~~~" in text):
        return None
    span = text[first:]
    stripped = span.rstrip()
    if stripped[-1] == "}" and stripped != tried:
        clean = _exact(stripped, mode)
        if clean is not None:
            return clean
    if may_rewrite(span) or not repairable(span):
        return None
    value = nearly_exact(stripped)
    if value is None:
        return None
    found = _Candidates(False, span)
    _add_value(value, first, mode, found, layer, cut=False, notes=(_REPAIRED,), end=first + len(stripped))
    return found.best if found.valid else None


def _final_answer_region(text: str) -> str:
    """The text after CrewAI's last ``Final Answer:`` marker, or the whole text when there is none."""
    # The one-character test is a memchr scan; only text with a colon pays for the marker scans.
    if ":" not in text or ("nswer:" not in text and "NSWER:" not in text):
        return text
    for marker in _FINAL_ANSWER_MARKERS:
        index = text.rfind(marker)
        if index >= 0:
            rest = text[index + len(marker) :]
            if rest.strip():
                return rest
    return text


def _collect(region: str, mode: Mode, found: _Candidates, layer: int) -> None:
    """Add every candidate answer of ``region``: its keyed markup, its JSON documents, its sections, its other forms."""
    if may_have_keys(found.marked) and not _json_document(region):
        # (A JSON document's strings are read through its structure: markup in one string, a prompt's "<loop>",
        # would key a value running across the others.)
        keyed = read_keyed(found.marked)
        if keyed is not None:
            last = next(reversed(keyed.values)) if found.cut else None
            found.add(from_mapping(keyed.values, mode, (), truncated=last, from_text=True), keyed.start)
            if found.valid or (len(keyed.values) == len(FIELDS) and not has_quoted_field_key(found.marked)):
                # All five fields keyed by explicit markup, and none as a JSON key: that is how this text is
                # written, and a repair of it as JSON, or a looser reading of it, can only do worse (it would keep
                # the markup in the values, and take a key's markup for the content of a value left empty).
                if any(_marked_edge(value) for value in keyed.values.values()):
                    _inferred_keys(region, mode, found)  # unless the same keys read tighter by their own shape
                return
    if "{" in region or "[" in region or '"' in region:
        for segment in segments(_without_comments(region)):
            _json_candidates(segment.text, segment.start, mode, found, layer)
        if found.valid and not _names_a_field(_uncovered(region, found.covered)):
            return  # a label can only be outside the JSON documents, and none is
        if found.exact and not _names_a_field(_uncovered(region, found.exact)):
            # The text is JSON, read exactly: its strings were read through its structure, which says which one is
            # the answer (a reasoning block's labels are not); a label reader would take them all alike.
            _other_forms(region, mode, found, layer, 0, structured=True)
            return
    sections = find_sections(region)
    if sections is not None:
        # Sections have no closing mark to prove the last one ended: after a cut, it did not.
        last = next(reversed(sections.values)) if sections.values else None
        if last is not None and not found.cut and not stops_mid_sentence(sections.values, last):
            last = None  # the last section ended: the text was not cut there
        result = from_mapping(sections.values, mode, tuple(sections.notes), truncated=last, from_text=True)
        # The section the cut stopped in is truncated, whatever else was said of it.
        conflicts = [issue for issue in sections.conflicts if issue.field != last]
        found.add(with_issues(result, conflicts), sections.start)
    _other_forms(region, mode, found, layer, sections.start if sections is not None else 0)
    best = found.best
    if not found.valid or (best is not None and any("\n" in str(value) for value in best.loop_output.values())):
        # Nothing valid read, or a value over several lines, where a key the contract does not know may hide.
        _inferred_keys(region, mode, found)


def _other_forms(
    region: str, mode: Mode, found: _Candidates, layer: int, sections_start: int, *, structured: bool = False
) -> None:
    """Add the readings of forms beside JSON and labels: YAML, tables, printed models, HTML."""
    if ":" in region:
        document = yaml_document(region)
        value = load(document[1]) if document is not None else None
        # Only a mapping (or a list of one) is a YAML answer; a scalar is the same text again.
        if document is not None and isinstance(value, dict | list):
            # The same text as the labels read, read exactly: it wins a tie with them.
            _add_value(value, max(document[0], sections_start), mode, found, layer, cut=False)
    if may_have_table(region):
        table = table_sections(region)
        if table is not None:
            last = next(reversed(table[1])) if found.cut and table[1] else None
            found.add(from_mapping(table[1], mode, (), truncated=last, from_text=True), table[0])
    if "=" in region:
        printed = read_printed(region)
        if printed is not None:
            found.add(
                from_mapping(printed.values, mode, (), truncated=printed.truncated, from_text=True), printed.start
            )
    if not found.valid and may_be_config(region):
        # A configuration file (TOML, INI): its sections read as a JSON document's objects are.
        for value in config_values(region):
            _add_value(value, sections_start, mode, found, layer, cut=False)
    if not found.valid and layer < _MAX_LAYERS and ("(" in region or "'" in region):
        # Objects printed by Python (``AIMessage(content='...')``): their keyword arguments are walked as JSON is.
        for start, end, value in printed_values(region):
            _add_value(value, start, mode, found, layer, cut=False)
            # Read through its structure, like a JSON document read exactly: its strings' escapes were read there.
            found.exact.append((start, end))
    if structured:
        return  # a JSON document read exactly: its strings were each read as text, never its markup across them
    if not found.valid and layer < _MAX_LAYERS and may_be_html(region):
        found.add(from_text(html_to_markdown(region), mode, found.cut, layer + 1), region.index("<"))
    if not found.valid and layer < _MAX_LAYERS and "&lt;" in region:
        # Markup escaped as entities inside other markup (an Atom or RSS entry's HTML content, an XML string):
        # read once more with the entities decoded.
        found.add(from_text(html.unescape(region), mode, found.cut, layer + 1), region.index("&lt;"))


def _inferred_keys(region: str, mode: Mode, found: _Candidates) -> None:
    """The last resort: the fields keyed by a shape the text itself gives its keys. When another reading found the
    fields, this one still replaces it if it is the same answer read tighter (the other kept a key's marks, or the
    next key, in its values)."""
    inferred = read_inferred(region)
    if inferred is None:
        return
    last = next(reversed(inferred.values)) if found.cut else None
    result = from_mapping(inferred.values, mode, (), truncated=last, from_text=True)
    best = found.best
    if best is None or not best.loop_output or not any(best.loop_output.values()):
        # Only where nothing else read a field: a refusal another reading gave has its reason (a second answer, a
        # quote, a cut), which a shape of keys cannot see.
        found.add(result, inferred.start)
    elif _tighter(inferred, best.loop_output):
        found.best = result


def _marked_edge(value: str) -> bool:
    """Whether a value read by keyed markup may hold a key's marks: a separator first, or a line of markup after."""
    stripped = value.strip()
    return bool(stripped) and (not (stripped[0].isalnum() or stripped[0] in "\"'“«(¿¡*_") or "\n" in stripped)


def _tighter(inferred: Inferred, other: Mapping[str, Any]) -> bool:
    """Whether the values read by shape are ``other``'s, some of them without what surrounds them there: marks
    (``=> ``, ``\\item``, a closing ``)``) or the next key of the shape with its value."""

    def around(mine: str, theirs: str) -> bool:
        extra = theirs.replace(mine, "\n", 1)
        return only_marks(extra) or inferred.keys.search(extra) is not None

    # The field keyed with the structure's opener, if the other reading did not find it at all, is no disagreement
    # (the opener hid its key from that reading).
    pairs = [
        (" ".join(inferred.values[name].split()), str(other[name] or ""))
        for name in FIELDS
        if other[name] or name != inferred.opened
    ]
    return all(mine in " ".join(theirs.split()) and around(mine, theirs) for mine, theirs in pairs) and (
        len(pairs) < len(FIELDS) or any(mine != " ".join(theirs.split()) for mine, theirs in pairs)
    )


def _json_document(text: str) -> bool:
    """Whether ``text`` is one JSON object or array, exactly, alone or under header lines that name no field (the
    command that printed it: ``$ cat /tmp/chat_cache/runner``)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]") and isinstance(loads(stripped), dict | list):
        return True
    return _headed_document(text) is not None


def _headed_document(text: str) -> tuple[int, str, Any] | None:
    """The JSON document under header lines that name no field (the command that printed it), as where it starts,
    its text and its value; None when the text is no such document."""
    start = _document_start(text)
    if start <= 0 or _names_a_field(text[:start]):
        return None
    document = text[start:].rstrip()
    value = loads(document)
    return (start, document, value) if isinstance(value, dict | list) else None


def _names_a_field(text: str) -> bool:
    """Whether ``text`` names a field as a word (``loop_contract_law.json``, a file's name, names none)."""
    folded = text.lower()  # five substring tests beat one case-blind alternation by far
    return any(name in folded for name in FIELDS) and _FIELD_WORD.search(folded) is not None


_FIELD_WORD: Final = re.compile(rf"(?<![\w-])(?:{'|'.join(FIELDS)})(?![\w-])")


def _uncovered(region: str, covered: list[tuple[int, int]]) -> str:
    pieces, pos = [], 0
    for start, end in sorted(covered):
        pieces.append(region[pos:start])
        pos = max(pos, end)
    pieces.append(region[pos:])
    return " ".join(pieces)


def _without_comments(region: str) -> str:
    """The region with its comment blocks (:func:`comment_blocks`) blanked, offsets kept: a document commented out
    is no answer."""
    blocks = comment_blocks(region)
    if not blocks:
        return region
    pieces: list[str] = []
    position = 0
    for start, end in blocks:
        if start >= position:
            pieces += [region[position:start], _NOT_LINE_BREAK.sub(" ", region[start:end])]
            position = end
    return "".join(pieces) + region[position:]


def _json_candidates(text: str, base: int, mode: Mode, found: _Candidates, layer: int) -> None:
    """Add the answers of the JSON documents in one fence body or stretch of prose."""
    stripped = text.strip()
    if stripped[:1] == "{" and stripped[-1:] == "}" and stripped != found.not_exact:
        clean = _exact(stripped, mode)
        if clean is not None:
            found.add(clean, base, base + len(text))
            found.exact.append((base, base + len(text)))
            return
    headed = _headed_document(text)
    if headed is not None:
        # One document under the command that printed it: its structure, not its objects one by one (a
        # conversation's messages read apart would each be an answer).
        under, document, value = headed
        end = base + under + len(document)
        found.exact.append((base + under, end))
        _add_value(value, base + under, mode, found, layer, cut=False, end=end)
        return
    decoded, broken = decode_all(text)
    found.exact += [(base + item.start, base + item.end) for item in decoded if isinstance(item.value, dict | list)]
    joined = joined_lines(text, decoded)
    if joined is None and layer < _MAX_LAYERS and len(decoded) > 1 and _streamed(decoded, base, mode, found, layer):
        return  # a stream's chunks are pieces of its answer, no candidates of their own
    for item in decoded:
        # A line of joined JSON Lines holds one field: only the joined answer is a candidate.
        if joined is None or not joined.start <= item.start < joined.end:
            _add_value(item.value, base + item.start, mode, found, layer, cut=False, end=base + item.end)
    if joined is not None:
        found.covered.append((base + joined.start, base + joined.end))
        broken = _joined(text, joined, broken, base, mode, found)
    if not broken and not any(isinstance(item.value, dict | list) for item in decoded):
        pairs = bare_pairs(text)
        if pairs is not None:
            _document(pairs[1], base + pairs[0], mode, found, layer, braces_added=True)
    for start in broken:
        end = next((item.start for item in decoded if item.start > start), len(text))
        _document(text[start:end], base + start, mode, found, layer)


def _streamed(decoded: list[Decoded], base: int, mode: Mode, found: _Candidates, layer: int) -> bool:
    """Add the answer of a streaming API's chunks pasted raw (the pieces they carry, joined); whether one was valid.

    Only a reading that is valid, or cut, counts as a stream: documents that are each an answer spell no text
    together, and a reading that finds only some fields (messages of a chat log joined, the answer glued to the
    question before it) is a candidate beside theirs.
    """
    # A chunk that says the response stopped early (a final event's status, a finish reason) cuts the whole text.
    cut = found.cut or any(isinstance(item.value, dict) and stopped_early(item.value) for item in decoded)
    for streamed in streamed_texts([item.value for item in decoded]):
        result = from_text(streamed, mode, cut or isinstance(streamed, Unfinished), layer + 1)
        if result.status != "failed":
            found.add(result, base + decoded[0].start, base + decoded[-1].end)
            if result.ok or has_truncated(result):
                return True
    return False


def _joined(text: str, joined: Decoded, broken: list[int], base: int, mode: Mode, found: _Candidates) -> list[int]:
    """Add JSON Lines joined into one answer; a broken line right after them (the last one, cut) joins too.

    Returns the broken documents left to read on their own.
    """
    tail = next((start for start in broken if not text[joined.end : start].strip(" \t\r\n,")), None)
    if tail is None:
        found.add(from_keys(joined.value, mode, from_text=True), base + joined.start)
        return broken
    span = text[tail:].strip()
    value = repair(span)[0] if repairable(span) else None
    extra = next((answer for answer in answers(value) if not isinstance(answer, str)), None)
    if extra is None or any(field_key(key) in joined.value for key in extra):
        found.add(from_keys(joined.value, mode, from_text=True), base + joined.start)
        return broken
    merged = {**joined.value, **extra}
    found.add(from_keys(merged, mode, _REPAIRED, truncated=cut_field(span, found.cut), from_text=True), base + tail)
    return [start for start in broken if start != tail]


def _document(
    span: str, position: int, mode: Mode, found: _Candidates, layer: int, *, braces_added: bool = False
) -> None:
    """One JSON document that may be broken: exact, then rewritten exactly, then repaired.

    ``braces_added``: the braces were added around bare key-value lines, so every key must be a contract
    field, and nothing proves the last value ended: after the provider's cut, it did not.
    """
    fixed = rewrite(span)
    # Unchanged by the rewrites, a broken span fails to decode as it did: straight to repair.
    decoded, broken = decode_all(fixed) if fixed is not span or braces_added else ([], [0])
    for item in decoded:
        if braces_added:
            keys = list(item.value) if isinstance(item.value, dict) else [None]
            if not all(field_key(key) for key in keys):
                return
            truncated = field_key(keys[-1]) if found.cut else None
            found.add(from_keys(item.value, mode, truncated=truncated, from_text=True), position, position + len(span))
        else:
            _add_value(item.value, position, mode, found, layer, cut=False, end=position + len(span))
    if decoded and not broken:
        return
    tail = fixed[broken[0] :] if broken else fixed
    if repairable(tail, key_seen=fixed is span and not braces_added):
        _repaired(tail.strip(), position, mode, found, layer)


def _repaired(span: str, position: int, mode: Mode, found: _Candidates, layer: int) -> None:
    value, exact = repair(span)
    if value is None:
        return
    truncated, inner_cut, unclosed = None, False, False
    if not exact:
        # Repair closes whatever was left open, so a value cut mid-string would read as complete: ask the text.
        # (A Python literal parsed exactly is complete: no string open, no bracket unclosed.)
        end = scan_end(span)
        truncated = unfinished_field(end, found.cut)
        # A string open at the end under another key (a tool call's "arguments") holds an answer that was cut;
        # so does a closed string in an envelope the provider's cut left open: its last field is unfinished.
        inner_cut = truncated is None and end.open_key is not None
        unclosed = truncated is None and found.cut and not end.closed
    _add_value(
        value,
        position,
        mode,
        found,
        layer,
        cut=inner_cut,
        notes=(_REPAIRED,),
        truncated=truncated,
        end=position + len(span),
        unfinished=unclosed,
    )


def _add_value(
    value: Any,
    position: int,
    mode: Mode,
    found: _Candidates,
    layer: int,
    *,
    cut: bool,
    notes: tuple[ContractIssue, ...] = (),
    truncated: str | None = None,
    end: int | None = None,
    unfinished: bool = False,
) -> None:
    """Add the answers inside one parsed value: mappings by their keys, strings as text one layer down.

    ``end`` is where the value's document ends when it was decoded exactly (its span is then covered);
    ``unfinished``: the document was cut while open, so a string answer's last field is not trusted.
    """
    if isinstance(value, dict) and stopped_early(value):
        # The envelope says the answer stopped before it ended (a token limit, a filter, a refusal).
        cut, unfinished = True, True
    if isinstance(value, dict | list):
        for given in prompt_side_texts(value):
            found.prompt(given)  # what the model was given: an answer repeating it is no answer
    for answer in answers(value):
        if isinstance(answer, Mapping):
            last = truncated
            if unfinished and last is None:
                # Decoded from a string inside the open document: its keys come in the order they were written.
                last = next((name for name in map(field_key, reversed(list(answer))) if name is not None), None)
            found.add(from_keys(answer, mode, *notes, truncated=last, from_text=True), position, end)
        elif awaits_completion(answer):
            found.prompt(answer)  # a prompt that awaits its answer: its fields are the prompt's, no candidate
        elif layer < _MAX_LAYERS:
            result = from_text(answer, mode, cut or found.cut or isinstance(answer, Unfinished), layer + 1)
            if unfinished and not has_truncated(result):
                result = _last_field_unfinished(result, answer, mode)
            found.add(result, position, end)


def _last_field_unfinished(result: ValidationResult, text: str, mode: Mode) -> ValidationResult:
    """``result`` with the field named last in ``text`` failed ``truncated`` (it was being written at the cut)."""
    names = [field_key(match.group()) for match in _FIELD_NAME.finditer(text)]
    last = next((name for name in reversed(names) if name is not None), None)
    values = {name: value for name, value in result.loop_output.items() if value is not None}
    return from_mapping(values, mode, result.warnings, truncated=last, from_text=True) if last else result


def _escaped_layer(region: str, mode: Mode, found: _Candidates, layer: int) -> None:
    """Labelled text written as a JSON string (``"HOOK: ...\\nGRIP: ..."``, quoted or not): one layer removed.

    A string that opens but never closes was cut.
    """
    if not _ESCAPED_LINES.search(region):
        return
    text = region.strip()
    opened = text[:1] == '"'
    closed = opened and len(text) > 1 and text[-1] == '"' and text[-2] != "\\"
    inner = text[1:-1] if closed else text[1:] if opened else text
    found.add(from_text(unescape_layer(inner), mode, found.cut or (opened and not closed), layer + 1), 0)
