"""Find the five named sections in labelled text, without regex-per-form special cases.

One grammar covers the label shapes models produce: an optional Markdown decoration (heading hashes, a
bullet, bold or italic markers, a number such as ``1.`` or ``(1)``), the section name, an optional short
parenthetical, and a separator (a colon, or a dash after a decorated label). A label may also stand alone
on its line, its content starting on the next line. Labels are found at line starts first; labels inline in
a paragraph (after sentence punctuation, capitalized) are only considered when line labels miss a section,
and XML-style ``<hook>...</hook>`` tags win over both. A section's body runs to the next label.
"""

from __future__ import annotations

import html
import re
from typing import Final, NamedTuple

from marsrag.contract._block import block_end
from marsrag.contract._escapes import unescape_literal
from marsrag.contract._label_names import GLOSS, LABEL_FIELDS, capitalized_names
from marsrag.contract._prose import is_prose
from marsrag.contract._trie import trie_pattern
from marsrag.contract.issues import ContractIssue, second_answer_issue
from marsrag.contract.rules import text_problem
from marsrag.contract.template import FIELDS

# Decoration may include symbols and emoji ("### 🪝 Hook", "▶ GRIP:"): the symbol blocks, and the joiners and
# variation selectors that compose emoji.
_SYMBOLS: Final = "\u2190-\u21ff\u2500-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff\ufe0f\u200d"
_NAMES: Final = trie_pattern(LABEL_FIELDS)
_CAPITALIZED_NAMES: Final = trie_pattern(capitalized_names())


# A label's decoration: indentation, a block quote, heading hashes, a bullet, emphasis, a number, control characters,
# symbols and emoji; CJK headings' brackets (【Hook】, 「Hook」) and numerals with an enumeration comma (一、).
_DECORATION: Final = rf" \t>#*+•_()\d.【「『〔［一二三四五六七八九十、\x00-\x08\x0b\x0c\x0e-\x1f\ufeff\ufffd{_SYMBOLS}-"
# An emoji shortcode (":arrow_right:") is a symbol too: Slack, GitHub and Discord write them so. Not a field name in
# colons: that is reStructuredText's field list (":hook: ...").
_SHORTCODE: Final = rf":(?!(?:{_NAMES}):)[a-z0-9_+-]{{1,40}}:"
# A titled block's opener before its title: a callout or alert ("> [!tip]- Payoff", Obsidian's and GitHub's), an
# admonition ('!!! note "Grip"', '??? info "Grip"', Python-Markdown's and MkDocs') and a directive container
# (":::tip Hook", Docusaurus' and VitePress'). The block's type is the writer's choice of look; its title is the
# label. An admonition's quote opened here closes after the name.
_BLOCK_OPENER: Final = (
    r"(?P<opener>\[![\w-]{1,30}\][+-]?[ \t]+|(?:!!!|\?{3}\+?)[ \t]*[\w-]{1,30}[ \t]+\"|:{3,}[ \t]*[\w-]{1,30}[ \t]+)"
)


def _line_label(glossed: bool) -> re.Pattern[str]:
    """The pattern of a label at a line start: a run of decoration (indentation, block quote, heading hashes, a
    bullet, bold or italic markers, a number such as "1." or "(1)"), the name, an optional short parenthetical, then
    a run of closing markers and separators. When ``glossed``, the label's words are the user's language and the
    field's name follows them in parentheses (``**Зацепка (Hook):**``).

    The leading newline lets the regex engine jump from line to line with a literal search instead of trying every
    character; possessive runs keep failures cheap.
    """
    translated = r"(?P<glossed>[^\s()（）:：*_#][^()（）:：*_\n]{0,30}?[ \t]*[(（])" if glossed else ""
    after_name = r"[)）]" if glossed else GLOSS
    return re.compile(
        rf"\n(?P<prefix>(?:[{_DECORATION}]|{_SHORTCODE})*+:?{_BLOCK_OPENER}?)"
        rf"{translated}(?P<name>{_NAMES})(?![\w-]){after_name}"
        r"(?P<suffix>(?(opener)\"?)[ \t*_:：—–】」』〕］｜-]*+)"
        # Org-mode headline tags (":drill:", ":ops:urgent:") end a headline: they are no content.
        r"(?P<tags>(?<=[ \t]:)[\w@#%]++:(?:[\w@#%]++:)*+[ \t]*+(?=\n|\Z))?"
        r"(?P<eol>(?=\n|\Z))?",
        re.IGNORECASE,
    )


_LINE_LABEL: Final = _line_label(glossed=False)
# Tried only when the plain form misses a field and a field's name stands in parentheses.
_GLOSSED_LINE_LABEL: Final = _line_label(glossed=True)
_NAME_IN_PARENTHESES: Final = re.compile(rf"[(（](?:{_NAMES})[)）]", re.IGNORECASE)

# Labels inside a paragraph: only after sentence punctuation (or a header's colon or arrow, "Final output: HOOK: ...",
# "[content] => Hook: ..."; CJK
# punctuation takes no space after it), capitalized, and always with a colon, so that prose such as "the retry
# loop: it spins" is never taken for a label. An item number before the label ("... stalls. 2. GRIP: ...")
# belongs to the label, not to the end of the previous section.
_INLINE_LABEL: Final = re.compile(
    r"(?:[.!?;:>|)\]\"'*”’][ \t]+|[：。][ \t]*)(?:\*\*|__)?(?:\(?\d{1,2}[.)][ \t]*+(?:\*\*|__)?)?"
    rf"(?P<name>{_CAPITALIZED_NAMES})"
    r"(?:\*\*|__)?[ \t]*[:：](?:\*\*|__)?[ \t]*"
)

# A label glued to what precedes it on its line: an opener (``finish(message="Hook: ...``, ``Finish[Hook: ...``) or
# the last word of an echoed prompt the model wrote on from (``... short answerHook: ...``; an escape's letter, as
# in ``\\nHook``, is no word). Capitalized, always with a colon, only the first label, and, like inline labels,
# only looked for when the line labels miss a section.
_GLUED_LABEL: Final = re.compile(
    rf"(?:(?<=[\[(\"'=>{{])|(?<=[a-z])(?<!\\[a-z]))(?P<name>{_CAPITALIZED_NAMES})[ \t]*[:：][ \t]*"
)

# A lowercase label after a header's colon on its line (a record's "output_text : hook: ..."), always with a colon.
_HEADER_LABEL: Final = re.compile(
    rf"[:：=>|][ \t]+(?P<name>{trie_pattern(sorted(name for name in LABEL_FIELDS if name.islower()))})[ \t]*[:：][ \t]*"
)

# Tags are matched open then close, per name: a lazy ".*?" with a backreference would be quadratic on
# text full of unclosed tags.
_XML_OPEN: Final = re.compile(r"<(?P<name>hook|grip|payoff|reinforce|loop)\b[^>\n]{0,80}>", re.IGNORECASE)
_XML_CLOSE: Final = {name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in FIELDS}

# Decoration left around a body: emphasis markers, stray separators, horizontal rules and fences.
_BODY_LEAD: Final = re.compile(r"(?:[ \t]*(?:\*\*|__|[:：]))+")
_RULE_OR_FENCE: Final = re.compile(r"[ \t]*(?:-{3,}|\*{3,}|_{3,}|`{3,}\w*|:{3,})[ \t]*")
_EMPTY_ELEMENTS: Final = re.compile(r"(?:\s*<[A-Za-z][\w:.-]{0,40}(?:\s[^<>]{0,200})?/>)+\s*\Z")
_DECORATED_EDGES: Final = frozenset("*_:：-`\"',")
_MARKDOWN_ESCAPE: Final = re.compile(r"\\([!-/:-@\[-`{-~])")
# An escape of punctuation other than the backslash, not itself escaped: what shows a text was escaped (a doubled
# backslash alone is a Windows path's, as in \\server\share).
_ESCAPED_PUNCTUATION: Final = re.compile(r"(?<!\\)\\[!-/:-@\[\]^_`{-~]")
_STRING_LITERAL: Final = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_ADJACENT_STRINGS: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s+"(?:[^"\\\n]|\\.)*")+,?')
_SETEXT: Final = re.compile(r"(?:-{3,}|={3,})[ \t]*(?:\n|$)")
# A body written as one quoted string ("hook: \"...\"," in YAML or key-value style): its quotes are no content.
_QUOTED: Final = re.compile(r"(?P<quote>[\"'])(?P<inner>.*)(?P=quote),?", re.DOTALL)
# An underscore closing emphasis: after a non-space, before no word character.
_EMPHASIS_CLOSE: Final = re.compile(r"\S_(?!\w)")
# Records: a line's stamp (brackets or digits and their punctuation, with a digit, before the first letter) and a
# console prompt at the text's start (up to a ">", a "$" or a "]:" and a space).
_STAMP: Final = re.compile(r"[ \t]*[\[(]?\d[\d/.:,\-T Z+]{3,40}[\])]?[ \t]*")
_PROMPT: Final = re.compile(r"[ \t]*(?P<prompt>[^\n]{0,40}?(?:>|\$|\]:))[ \t]")
_SYMBOL_PROMPT: Final = re.compile(r"(?<=\n)[ \t]*(?P<prompt>(?!>[ \t])[>$%❯»]{2,4}|[$%❯])[ \t](?=\S)")
_DIGITS: Final = re.compile(r"(?:\\d)+|\d+")
# Line-comment blocks: a "#" alone on its line, and runs of lines that start with "#".
# A "#" alone, or before brackets only (a commented-out object's "# {" and "# }").
_BARE_HASH: Final = re.compile(r"(?m)^[ \t]*#[ \t]*[{}\[\](),]*[ \t]*$")
_HASH_RUN: Final = re.compile(r"(?m)^[ \t]*#.*(?:\n[ \t]*#.*)*")
_SLASH_RUN: Final = re.compile(r"(?m)^[ \t]*//.*(?:\n[ \t]*//.*)*")
_EXPLICIT_MARKUP: Final = re.compile(r"(?m)^\.\. .*(?:\n[ \t]+\S.*)*")
_BLANK_RUNS: Final = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_TRAILING_SPACE: Final = re.compile(r"[ \t]+\n")
_NON_SPACE: Final = re.compile(r"\S")
_PART_COUNTER: Final = re.compile(r"(?m)^[ \t]*[(（\[]?\d{1,2}[ \t]*/[ \t]*\d{1,2}[)）\]]?[ \t]*(?:\n|\Z)")
_ENTITY: Final = re.compile(r"&(?:[A-Za-z]{2,8}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_LABELLED_LINK: Final = re.compile(r"<(?:https?|mailto|ftp):[^\s<>|]{1,2000}\|([^<>\n|]{1,200})>")
_INLINE_TAG: Final = re.compile(r"</?[A-Za-z][\w:.-]{0,40}(?:\s[^<>\n]{0,80})?>")
_BRACKETED_LINE: Final = re.compile(r"[ \t]*\[[^\[\]\n]*\][ \t]*")
_CONTINUES: Final = re.compile(r"[ \t]|`{3}|~{3}|(?:[-*+•]|\d{1,2}[.)])[ \t]")


# Plain names with a dash are labels when at least this many fields are written so.
_MIN_DASHED_FIELDS: Final = 3

# (start of the label, start of its body, section name), offsets into the text.
_Label = tuple[int, int, str]


def _line_labels(text: str) -> list[_Label]:
    """Labels at line starts, in order: the plain form, else the glossed form when it finds more fields."""
    labels = _labels_of(_LINE_LABEL, text)
    if len({label[2] for label in labels}) < len(FIELDS) and _NAME_IN_PARENTHESES.search(text):
        glossed = _labels_of(_GLOSSED_LINE_LABEL, text)
        if len({label[2] for label in glossed}) > len({label[2] for label in labels}):
            return glossed
    return labels


def _labels_of(pattern: re.Pattern[str], text: str) -> list[_Label]:
    """Labels at line starts by ``pattern``. This is the hot path of labelled answers: one regex pass, no calls."""
    labels: list[_Label] = []
    dashed: list[_Label] = []
    # Offsets are into "\n" + text, so a match starting at m.start() has its line at m.start() in text.
    for match in pattern.finditer("\n" + text):
        prefix, name, suffix, eol = match.group("prefix", "name", "suffix", "eol")
        if match.start("tags") >= 0 and prefix.lstrip(" \t")[:1] != "*":
            # Tags follow only an Org headline ("** Hook   :drill:"); elsewhere "Hook: Fix:" is a label and content.
            labels.append((match.start(), match.start("tags") - 1, LABEL_FIELDS[name.casefold()]))
            continue
        if ":" not in suffix and "：" not in suffix:
            if not suffix.strip(" \t*_"):
                # "Loop detection fails..." is content: a label without separator stands alone on its line.
                if eol is None:
                    continue
            # A dash separates a label only when the label is visibly one (decorated or in capitals), or when the
            # text's labels are written so: three fields or more, each a plain name and a dash ("Hook — ...").
            elif not (prefix.strip() or name.isupper()):
                dashed.append((match.start(), match.end() - 1, LABEL_FIELDS[name.casefold()]))
                continue
        body = match.end() - 1
        if suffix[-1:] == "_" and suffix[-2:] != "__" and not _emphasis_closes(text, body):
            body -= 1  # "reinforce: _cat/allocation ...": the underscore starts a name, it opens no emphasis
        labels.append((match.start(), body, LABEL_FIELDS[name.casefold()]))
    if dashed and len({label[2] for label in dashed}) >= _MIN_DASHED_FIELDS:
        return sorted(labels + dashed)
    return labels


def _emphasis_closes(text: str, start: int) -> bool:
    """Whether an underscore just before ``start`` opens emphasis: one closes it later on the line (``_text._``)."""
    end = text.find("\n", start)
    return _EMPHASIS_CLOSE.search(text, start, len(text) if end < 0 else end) is not None


def _clean(body: str) -> str:
    """Strip a body's leftover decoration: emphasis, separators, trailing rules or fences, blank-line runs."""
    body = body.strip()
    if body[:1] in ("-", "="):
        underline = _SETEXT.match(body)
        if underline is not None:
            body = body[underline.end() :].strip()  # a lone label's setext underline ("Hook\n----")
    if body[:1] in ("*", "_", ":", "："):
        lead = _BODY_LEAD.match(body)
        if lead is not None:
            body = body[lead.end() :].strip()
    # Checking the last character first keeps the common case (a plain sentence) free of regex work.
    while body[-1:] in ("*", "_", "-", "`", ":"):
        if body.endswith(("**", "__")):
            body = body[:-2].rstrip()
            continue
        head, _, last = body.rpartition("\n")
        if not _RULE_OR_FENCE.fullmatch(last):
            break
        body = head.rstrip()
    if "\n" in body:
        body = _BLANK_RUNS.sub("\n\n", _TRAILING_SPACE.sub("\n", body))
    if body[:1] in ('"', "'"):
        quoted = _QUOTED.fullmatch(body)
        if "\n" in body and _ADJACENT_STRINGS.fullmatch(body):
            # Adjacent string literals on their lines are one string (C, Python, Go, protobuf's text format).
            body = "".join(_STRING_LITERAL.findall(body)).strip()
        elif quoted is not None and _one_string(quoted["inner"], quoted["quote"]):
            body = quoted["inner"].strip()
            if quoted["quote"] == '"' and "\\" in body:
                body = unescape_literal(body).strip()  # a string literal's escapes ("\n", "\u00e9") are its text
    return body


def _one_string(inner: str, quote: str) -> bool:
    """Whether quotes around ``inner`` enclose one string: inside it a quote may only open a quotation.

    ``"The "cold" cache"`` is one string; ``"A" and "B"`` is two, whose outer quotes are content.
    """
    first = inner.find(quote)
    return first < 0 or first == 0 or inner[first - 1].isspace()


def _tidy(body: str) -> str:
    """A stripped body, cleaned when it needs it: most are plain sentences, only decorated or multi-line ones."""
    if "\\" in body and "`" not in body and _ESCAPED_PUNCTUATION.search(body) is not None:
        # Markdown's backslash escapes of ASCII punctuation (CommonMark), as a chat platform's escaping leaves them
        # visible ("in\-flight", "\(set in March\)"); inside a code span they are literal, so a body with one
        # keeps them.
        body = _MARKDOWN_ESCAPE.sub(r"\1", body)
    if "&" in body and _ENTITY.search(body) is not None:
        # A character reference a platform escaped (Slack's "&amp;"): a Markdown or HTML reader shows the character.
        body = html.unescape(body)
    if "/" in body and "\n" in body:
        # A line that only counts the message's parts ("(2/2)", a reply split in two): the platform's, not content.
        body = _PART_COUNTER.sub("", body).strip()
    if "|" in body and "<" in body:
        # A chat platform's link (Slack's and Mattermost's "<https://...|cohort chart>"): the reader sees its label.
        body = _LABELLED_LINK.sub(r"\1", body)
    if body[-2:] == "/>":
        # An empty element after the text (SSML's <break time="500ms"/>, an <br/>) is markup, not content.
        body = _EMPTY_ELEMENTS.sub("", body)
    if body and (body[0] in _DECORATED_EDGES or body[-1] in _DECORATED_EDGES or "\n" in body):
        return _clean(body)
    return body


def _usable(body: str) -> bool:
    return text_problem(body) is None


def _pick(found: list[tuple[str, str]]) -> tuple[dict[str, str], list[ContractIssue]]:
    """Keep one body per section: the last one that is content, else the last one.

    Sections come in the order of their last label, so the last one is the one the text ends in.
    """
    if len({name for name, _ in found}) == len(found):
        return dict(found), []
    sections: dict[str, str] = {}
    notes: list[ContractIssue] = []
    seen: set[str] = set()
    for name, body in found:
        if name in seen:
            if name not in {note.field for note in notes}:
                notes.append(ContractIssue(name, "duplicate_section", f"{name} appears more than once"))
            earlier = sections[name]
            kept = body if _usable(body) or not _usable(earlier) else earlier
            if _comparable(body) == _comparable(earlier):
                kept = min(body, earlier, key=len)  # the same words, one copy marked up (citation tags): the plain one
            del sections[name]
            sections[name] = kept
        else:
            seen.add(name)
            sections[name] = body
    return sections, notes


def _comparable(body: str) -> str:
    """A body's words, white space collapsed and inline markup removed: two copies of one answer, one with citation
    tags (``<co: 0>...</co: 0>``), are the same answer."""
    return " ".join(_INLINE_TAG.sub("", body).split())


def _second_answer(found: list[tuple[str, str]]) -> tuple[ContractIssue, ...]:
    """Errors for the fields a second answer gives other content: two answers are never mixed, nor is one chosen.

    Once all five sections have been given, a section labelled again is a second answer for it, as a JSON key given
    twice is: a model that went on past its turn (answering a question it wrote itself), one that wrote its answer
    twice, or one that gave a field again ("loop: ..." once more). Which is meant, and where the first one's last
    section ends, the text does not say; so each field given again with other content fails. A stand-in given
    first (an instruction, a placeholder) and then content is one answer.
    """
    first: dict[str, str] = {}
    later: list[tuple[str, str]] = []
    for name, body in found:
        if len(first) < len(FIELDS):
            if name not in first or (_usable(body) and not _usable(first[name])):
                first[name] = body  # a stand-in (an instruction, a placeholder) given again with content replaces it
        else:
            later.append((name, body))
    if not later:
        return ()
    differing = {
        name
        for name, body in later
        if _usable(body) and _usable(first[name]) and _comparable(body) != _comparable(first[name])
    }
    return tuple(second_answer_issue(name) for name in FIELDS if name in differing)


def _xml_sections(text: str) -> list[tuple[int, str, str]]:
    """``(offset, name, body)`` of ``<hook>...</hook>`` style tags (any case, attributes allowed), in text order.

    Linear time.
    """
    found: list[tuple[int, str, str]] = []
    unclosed: set[str] = set()
    end = 0
    for opening in _XML_OPEN.finditer(text):
        name = opening["name"].lower()
        if name in unclosed or opening.start() < end:
            continue  # no closing tag left for this name, or nested inside the previous section
        # The closing tag written like the opening one is found at C speed; the case-blind search then only
        # scans the body before it, for an earlier closing tag in another case.
        same = text.find(f"</{opening['name']}>", opening.end())
        if same >= 0:
            earlier = text.find("</", opening.end(), same) >= 0
            other = _XML_CLOSE[name].search(text, opening.end(), same) if earlier else None
            body_end, end = (other.start(), other.end()) if other else (same, same + len(opening["name"]) + 3)
        else:
            closing = _XML_CLOSE[name].search(text, opening.end())
            if closing is None:
                unclosed.add(name)
                continue
            body_end, end = closing.span()
        found.append((opening.start(), name, _tidy(text[opening.end() : body_end].strip())))
    return found


class Sections(NamedTuple):
    """Labelled sections found in a text: ``{section: body}`` in text order, notes, and where the first starts."""

    values: dict[str, str]
    notes: list[ContractIssue]
    start: int
    #: Errors: the fields a second answer in the same text gives other content (see :func:`_second_answer`).
    conflicts: tuple[ContractIssue, ...] = ()


def find_sections(text: str) -> Sections | None:
    """The labelled sections of ``text``, or None when it has no section labels.

    The sections are in text order (of each one's last label).
    """
    if "</" in text:
        tagged = _xml_sections(text)
        if tagged:
            pairs = [(name, body) for _, name, body in tagged]
            return Sections(*_pick(pairs), tagged[0][0], _second_answer(pairs))
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    labels = _line_labels(text)
    if len({label[2] for label in labels}) < 5:
        # The match starts at the punctuation that ends the previous sentence; keep that in its body.
        inline = [(m.start() + 1, m.end(), LABEL_FIELDS[m["name"].casefold()]) for m in _INLINE_LABEL.finditer(text)]
        if len({label[2] for label in labels + inline}) < 5:
            # A glued label is where the answer was joined to what came before it, so only the first label can be
            # one: glued after every opener, labels are the prompt's or a schema's text ('"Hook: ...", "Grip: ...').
            first = min((label[0] for label in labels + inline), default=len(text))
            glued = _GLUED_LABEL.search(text, 0, first)
            if glued is not None:
                inline.append((glued.start(), glued.end(), LABEL_FIELDS[glued["name"].casefold()]))
        if inline:
            labels = sorted(labels + inline)
        if labels and len({label[2] for label in labels}) < 5:
            header = _after_a_header(text, labels)
            if header is not None:
                labels = sorted([*labels, header])
    limit = None
    if labels and ("\n#" in text or ">" in text or "//" in text or "\n.. " in text):
        labels, limit = _own_labels(text, labels)
    if not labels:
        return None
    record = _next_record(text, labels)
    if record is not None:
        limit = record if limit is None else min(limit, record)
    found: list[tuple[str, str]] = []
    # An answer all in a block quote (a callout, a quoted reply alone): the quote's markers are its layout.
    quoted = ">" in text and all(text[_line_start(text, at) : at + 1].lstrip()[:1] == ">" for at, _, _ in labels)
    last = len(labels) - 1
    for index, (_, body_start, name) in enumerate(labels):
        if index < last:
            end = _before_header(text, body_start, labels[index + 1][0])
        else:
            one_line_each = _one_line_each(text, labels)
            other = _other_label(text, labels[-1][0], one_line_each)
            end = block_end(text, labels[0][0], labels[-1][0], body_start, other, limit)
            if one_line_each:
                end = min(end, _record_end(text, body_start, _aligned(text, labels)))
            end = _before_note(text, body_start, _before_sign_off(text, body_start, end))
            if all(_PARAGRAPH_BREAK.search(body) is None for _, body in found):
                end = _first_paragraph_end(text, body_start, end)
            end = _before_closing_quote(text, labels[0][0], body_start, end)
        body = text[body_start:end].strip()
        if quoted:
            body = _QUOTE_MARKER.sub("", body)
        found.append((name, _tidy(body)))
    return Sections(*_pick(found), labels[0][0], _second_answer(found))


_PARAGRAPH_BREAK: Final = re.compile(r"\n[ \t]*\n")
_QUOTE_MARKER: Final = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)
_SENTENCE_ENDS: Final = ".!?…。！？"
_SIGN_OFF_LINES: Final = 2
_SIGN_OFF_WORDS: Final = 5


def _before_header(text: str, body_start: int, next_label: int) -> int:
    """Where a section ends before the next label: at the label, or, when the label is inline after a short header
    on its line (``Grounded answer: Hook: ...``), at that line's start: the header introduces what follows."""
    line = _line_start(text, next_label)
    if line <= body_start:
        return next_label
    header = text[line:next_label].strip()
    if header[-1:] in (":", "：") and len(header) <= _HEADER_MAX and len(header.split()) <= _HEADER_WORDS:
        return line
    return next_label


_HEADER_MAX: Final = 40
_HEADER_WORDS: Final = 4


def _before_note(text: str, start: int, end: int) -> int:
    """Where the last section ends when its last paragraph is a note set in emphasis (``_The figures are
    estimates._``) and the section's own text is not: the answer's footnote, not the section's."""
    body = text[start:end].rstrip()
    breaks = list(_PARAGRAPH_BREAK.finditer(body))
    if not breaks:
        return end
    last = body[breaks[-1].end() :].strip()
    own = body[: breaks[-1].start()].rstrip()
    # (The section's own text ending in the same mark is emphasized itself: its label may have taken the opener.)
    if _EMPHASIZED_PARAGRAPH.fullmatch(last) and own[-1:] != last[-1:]:
        return start + breaks[-1].start()
    return end


_EMPHASIZED_PARAGRAPH: Final = re.compile(r"(?P<mark>[_*])(?![_*\s])[^\n]*[^_*\s](?P=mark)", re.DOTALL)


# A quote opened by an assignment right before the first label (``AiMessage { text = "Hook: ...``), and the quote
# that closes it: before the next member or a closer (``", thinking = null }``, ``', role='assistant')``).
_OPENING_QUOTE: Final = re.compile(r"[=:(][ \t]*([\"'])\Z")
_CLOSING_QUOTE: Final = {
    quote: re.compile(rf"{quote}(?=[ \t]*(?:[)}}\]]|,[ \t]*[\"']?[A-Za-z_][\w-]*[\"']?[ \t]*[=:]))") for quote in "\"'"
}


def _before_closing_quote(text: str, first: int, start: int, end: int) -> int:
    """Where the last section ends when the answer is a string opened before the first label and printed unescaped
    (a ``toString`` that quotes without escaping, so the text's lines break the record): at the quote that closes
    it, before the record's next member."""
    opened = _OPENING_QUOTE.search(text, max(0, first - 40), first)
    if opened is None:
        return end
    closing = _CLOSING_QUOTE[opened[1]].search(text, start, end)
    return closing.start() if closing is not None else end


_ITEM_MARKER: Final = re.compile(r"[ \t]*(?:[-*+•]|\d{1,2}[.)])[ \t]+")


def _first_paragraph_end(text: str, start: int, end: int) -> int:
    """Where the last section ends when every other section is one paragraph: at the end of its own first one. The
    sections share one shape, so a paragraph after it is the writer's next words (a courtesy line, a console's status
    line, the next prompt), not the loop's. A paragraph ending in a colon introduces what follows (a list), and a
    line indented or bulleted under it continues it: there the section goes on."""
    content = _NON_SPACE.search(text, start, end)
    if content is None:
        return end
    # The section's own margin: where its first line's text starts, after a list item's marker (CommonMark).
    first_line = text[_line_start(text, content.start()) : content.start()]
    marker = _ITEM_MARKER.match(first_line)
    margin = marker.end() if marker is not None else len(first_line) - len(first_line.lstrip(" \t"))
    # A list item's paragraph indented to its content is the item's own (CommonMark); elsewhere a paragraph at the
    # margin is the next one (a renderer indents every line alike), and only a code block's four columns go deeper.
    deeper = 0 if marker is not None else 4
    position = content.start()
    while (paragraph := _PARAGRAPH_BREAK.search(text, position, end)) is not None:
        following = text[paragraph.end() : end]
        introduced = text[: paragraph.start()].rstrip()[-1:] in (":", "：")
        indent = len(following) - len(following.lstrip(" \t"))
        continued = indent >= margin + deeper or (indent >= margin and _CONTINUES.match(following, indent) is not None)
        if not introduced and not continued:
            return paragraph.start()
        position = paragraph.end()
    return end


def _before_sign_off(text: str, start: int, end: int) -> int:
    """Where the last section ends when its last paragraph is a letter's sign-off (``Viele Grüße`` and a name,
    ``Best,``): at most two short lines that end no sentence, after a paragraph that does."""
    body = text[start:end].rstrip()
    breaks = list(_PARAGRAPH_BREAK.finditer(body))
    if not breaks:
        return end
    lines = body[breaks[-1].end() :].strip().split("\n")
    before = body[: breaks[-1].start()].rstrip().rstrip("\"'»”’)*_")
    if (
        len(lines) > _SIGN_OFF_LINES
        or any(len(line.split()) > _SIGN_OFF_WORDS or line.rstrip()[-1:] in _SENTENCE_ENDS for line in lines)
        or before[-1:] not in _SENTENCE_ENDS
    ):
        return end
    return start + breaks[-1].start()


def _after_a_header(text: str, labels: list[_Label]) -> _Label | None:
    """The first label written after a header's colon on its line (``output_text : hook: ...``) in the style of the
    line labels after it, when they are lowercase (capitalized ones are found by the inline grammar): the last such
    label in the paragraph before the first line label, naming a field no label names."""
    first, body, _ = labels[0]
    written = _LINE_LABEL.match("\n" + text, first)
    if written is None or not written["name"].islower():
        return None
    start = text.rfind("\n\n", 0, first) + 1
    named = {label[2] for label in labels}
    found = [match for match in _HEADER_LABEL.finditer(text, start, first) if LABEL_FIELDS[match["name"]] not in named]
    if not found:
        return None
    return found[-1].start("name"), found[-1].end(), LABEL_FIELDS[found[-1]["name"]]


def _shape(prefix: str) -> str:
    """A pattern matching text shaped like ``prefix``: its digits any digits, the rest as written."""
    return _DIGITS.sub(r"\\d+", re.escape(prefix))


def _next_record(text: str, labels: list[_Label]) -> int | None:
    """Where the next record starts after the last label, in text made of records (or None).

    Two kinds of record say where they start: a line stamped the way the first label's line is (a chat export's
    ``[18/03/25, 07:41:31] OpsBot: hook: ...``, a log's timestamp), and a console's prompt, written the way the text's
    first line starts (``PS C:\\Ops>``, ``In [12]:``, ``iex(7)>``, ``>>>``): the next stamped line is someone else's
    message, the next prompt the next command, and neither is the answer's.
    """
    first = labels[0][0]
    shapes = []
    stamp = _STAMP.match(text, _line_start(text, first), first)
    if stamp is not None:
        shapes.append(_shape(stamp.group()))
    prompt = _PROMPT.match(text)
    if prompt is not None and prompt.end() <= first:
        shapes.append(_shape(prompt["prompt"]))
    # A REPL's own prompt, started from the shell (">>> " after "$ mlc_llm chat ..."): a prompt of symbols alone
    # on a line before the answer (never a lone ">", a block quote's marker).
    shapes += sorted({re.escape(m["prompt"].strip()) for m in _SYMBOL_PROMPT.finditer(text, 0, first)})
    if not shapes:
        return None
    found = re.compile(r"\n[ \t]*(?:" + "|".join(shapes) + ")").search(text, labels[-1][1])
    return found.start() if found is not None else None


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def comment_blocks(text: str) -> list[tuple[int, int]]:
    """The spans of comment blocks: runs of lines starting with ``//``, reStructuredText's explicit markup, and
    runs of lines starting with ``#`` that hold a line that is only ``#`` (or ``#`` and brackets).

    ``//`` starts a comment in C's family, JavaScript, Go, Rust and AsciiDoc, and nothing in Markdown; ``.. ``
    starts reStructuredText's explicit markup (a comment, a directive such as ``.. note::``), with its indented
    lines. A ``#`` alone on its line is how a comment block (a shell script's, a configuration file's, git's commit
    template) leaves a blank line, and ``# {`` how one comments out an object; as Markdown either would be a heading
    without words, which no one writes. Every tool that
    reads such a file drops its comments, so labels in them are not the answer, and the answer's last section ends
    where one starts.
    """
    blocks = [match.span() for match in _SLASH_RUN.finditer(text)] if "//" in text else []
    if "\n.. " in text:
        blocks += [match.span() for match in _EXPLICIT_MARKUP.finditer(text)]
    if _BARE_HASH.search(text) is not None:
        blocks += [match.span() for match in _HASH_RUN.finditer(text) if _BARE_HASH.search(match.group())]
    return sorted(blocks)


def _own_labels(text: str, labels: list[_Label]) -> tuple[list[_Label], int | None]:
    """The labels of the text's own answer, and where the text that is not its own starts after them (or None).

    Not its own: a comment block (:func:`comment_blocks`), and, when some labels are outside quotes, quoted text
    (``> `` lines: an email's quoted history, someone else's words). An answer that is all quoted is still read.
    """
    comments = comment_blocks(text)
    quoted = [text[_line_start(text, start) : start + 1].lstrip()[:1] == ">" for start, _, _ in labels]
    if quoted and all(quoted) and _replied_below(text, labels[-1][1]):
        return [], None  # a reply below the quote: the quoted answer is the message replied to, not this one's
    drop_quoted = any(quoted) and not all(quoted)
    if not comments and not drop_quoted:
        return labels, None
    kept: list[_Label] = []
    dropped: list[int] = []
    for label, is_quoted in zip(labels, quoted, strict=True):
        commented = next((span for span in comments if span[0] <= label[0] < span[1]), None)
        if commented is not None:
            dropped.append(commented[0])
        elif drop_quoted and is_quoted:
            # The quote starts its paragraph, with the attribution line before it ("On ... wrote:").
            paragraph = text.rfind("\n\n", 0, label[0])
            dropped.append(paragraph + 1 if paragraph >= 0 else _line_start(text, label[0]))
        else:
            kept.append(label)
    if not kept:
        return kept, None
    after = [start for start in dropped if start > kept[-1][1]]
    after += [start for start, _ in comments if start > kept[-1][1]]
    return kept, min(after, default=None)


_REPLY_MIN_WORDS: Final = 3


def _replied_below(text: str, position: int) -> bool:
    """Whether the quote around ``position`` is followed, after a blank line, by unquoted words of someone's own
    (a chat reply's or an email's answer below the quoted message)."""
    rest = text[position:]
    end = re.search(r"\n[ \t]*\n(?=[ \t]*[^>\s])", rest)
    if end is None or any(
        line.strip() and not line.lstrip().startswith(">") for line in rest[: end.start()].split("\n")[1:]
    ):
        return False
    below = rest[end.end() :].split("\n\n", 1)[0]
    return len(below.split()) >= _REPLY_MIN_WORDS


def _one_line_each(text: str, labels: list[_Label]) -> bool:
    """Whether the sections before the last are one line each, on consecutive lines (``Hook: ...\nGrip: ...``)."""
    return len(labels) > 1 and all(
        text.count("\n", body_start, following[0]) == 1 and text[following[0] - 1] == "\n"
        for (_, body_start, _), following in zip(labels, labels[1:], strict=False)
    )


def _aligned(text: str, labels: list[_Label]) -> bool:
    """Whether the values start in one column, every label padded to one width: a record printed aligned
    (``hook:       ...`` over ``reinforce:  ...``, as a database shell's vertical or expanded display prints a row).
    The five names differ in length, so one width for all of them is padding, never chance."""
    return len({body_start - _line_start(text, body_start) for _, body_start, _ in labels}) == 1 and (
        len({body_start - start for start, body_start, _ in labels}) == 1
    )


def _record_end(text: str, body_start: int, aligned: bool = False) -> int:
    """Where the last section ends in an answer of one line per section: at the first line after its own, before a
    blank line, that is no prose (a log's next record, ``END RequestId: 7c1e...``, a section marker): the text the
    answer was printed in, not the answer. Prose lines (a wrapped sentence, the question's options) stay, as do a
    paragraph after a blank line and lines the section's own markup continues it with (a fence, an indented line, a
    list item). In a record printed ``aligned`` a value goes on only on lines indented to its column, and a blank
    line ends the record (what follows is the shell's, ``1 row in set.``)."""
    content = _NON_SPACE.search(text, body_start)
    if content is None:
        return len(text)
    line_start = _line_start(text, body_start)
    indent = len(text[line_start:body_start]) - len(text[line_start:body_start].lstrip(" \t"))
    column = body_start - line_start
    end = text.find("\n", content.start())
    while end >= 0:
        following = text.find("\n", end + 1)
        line = text[end + 1 : following if following >= 0 else len(text)]
        if aligned:
            if not line.strip() or len(line) - len(line.lstrip(" \t")) < column:
                return end
            end = following
            continue
        if not line.strip() or _CONTINUES.match(line, indent):
            # A paragraph, a fence, a line indented past the label's or a list item: the section's own structure.
            return len(text)
        if not is_prose(line) or _BRACKETED_LINE.fullmatch(line):
            return end  # no prose, or a line all in brackets (a console's "[Prompt tokens: 418, ...]")
        end = following
    return len(text)


def _other_label(text: str, start: int, one_line_each: bool = False) -> re.Pattern[str] | None:
    """A label of another name written the way the label at ``start`` is (``**Sources:**`` after ``**Loop:**``),
    as a new block (after a blank line): where the answer's last section ends and another section begins. In an
    answer of one line per section, a label word on the next line is one too (a git trailer, ``Signed-off-by:``).
    None when the label at ``start`` is no line label (an inline label has no style of its own)."""
    match = _LINE_LABEL.match("\n" + text, start)
    if match is None or match.start() != start:
        return None
    prefix, name, suffix, eol = match.group("prefix", "name", "suffix", "eol")
    if not suffix.strip() and eol is None:
        return None
    lead = re.sub(r"\\?\d+", r"\\d{1,3}", re.escape(prefix.lstrip(" \t")))
    word = r"[A-Z][A-Z0-9 _/&-]{1,40}" if name.isupper() else r"[A-Z][\w /&'-]{1,40}" if name[:1].isupper() else None
    if word is None:
        return None
    tail = re.escape(suffix.rstrip(" \t")) + (r"[ \t]*$" if eol is not None else "")
    other = rf"\n[ \t]*\n[ \t]*{lead}(?!(?:{_NAMES})\b){word}"
    if one_line_each and eol is None:
        # Without a blank line only one capitalized word counts, in any case ("Signed-off-by:" after "LOOP:"): a
        # sentence may go on "Note that X: ...".
        other = rf"(?:\n[ \t]*{lead}(?!(?:{_NAMES})\b)[A-Z][\w/&'-]{{1,40}}|{other})"
    return re.compile(rf"{other}{tail}", re.MULTILINE)


def section_labels(text: str) -> list[tuple[str, int]]:
    """The section labels at line starts of ``text``, as ``(section, offset)`` in order (used by lint)."""
    return [(name, start) for start, _, name in _line_labels(text)]
