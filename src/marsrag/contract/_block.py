"""The block holding an answer's labels: where its last section ends, read from the markup around the labels.

Nothing marks where the last labelled section ends, so without more it runs to the end of the text and takes in
whatever follows the answer (a wrapper's closing tags, a fence, a sign-off). The markup the labels sit in says
where the block ends:

- an element opened before the first label (``<result>``, ``<attempt_completion>``) closes after the last section;
- a fence opened before the first label closes after it: Markdown's backtick and tilde fences, the colon fences
  of Pandoc's and MyST's divs and of directives (``:::artifact{...}``), a triple-quoted block, a named block (Org's
  ``#+begin_example``, LaTeX's ``\\begin{verbatim}``);
- a bracket opened on the first label's paragraph (``Finish[``, ``const answer = {``, a dumped array's
  ``Array (``) closes at its first closer the last section did not open, and a double quote opened there
  (``finish(message="``) at the section's very end: those closers are markup;
- a thematic break (a line of ``---``, ``***``, ``___``, or ``===``, or an ``<hr>``) after content separates the
  answer from what follows, as does an email's signature delimiter (``-- `` alone on its line, RFC 3676), and so
  does a label of another name in the answer's own label style after a blank line (``**Sources:**`` after
  ``**Loop:**``);
- a list item ends where a paragraph after a blank line starts unindented (CommonMark's rule for what belongs
  to an item).
"""

from __future__ import annotations

import re
from typing import Final

# An element's tag (opening, closing or self-closing).
_TAG: Final = re.compile(r"<(?P<close>/)?[ \t]*(?P<name>[A-Za-z][\w:.-]{0,40})(?:\s[^<>]{0,200})?(?P<self>/)?>")
# A fence line: three or more backticks, tildes or colons, or a triple quote, at a line start.
_FENCE: Final = re.compile(r"(?m)^[ \t]{0,3}(?P<mark>`{3,}|~{3,}|:{3,}|'''|\"\"\")")
# A thematic break: three or more of one of - * _ = alone on a line (spaces between allowed); or a signature
# delimiter ("-- ", RFC 3676 4.3; mail clients that trim trailing space leave "--").
# HTML's break element is the same break.
_BREAK: Final = re.compile(
    r"(?m)^(?:[ \t]{0,3}([-*_=])(?:[ \t]*\1){2,}[ \t]*|-- ?|[ \t]*<hr\b[^<>\n]{0,80}>[ \t]*)$", re.I
)
# A named block's opening line: Org's "#+begin_example", LaTeX's "\begin{verbatim}".
_NAMED_OPEN: Final = re.compile(r"(?im)^[ \t]*(?:#\+begin_|\\begin\{)(?P<name>\w+)")
_LIST_ITEM: Final = re.compile(r"[ \t>]*(?:[-*+•]|\(?\d{1,2}[.)])[ \t]")
# A blank line, then a line that starts a paragraph at the left margin and is no list item.
_UNINDENTED_PARAGRAPH: Final = re.compile(r"\n[ \t]*\n(?=[^\s\-*+•\d(>|])")
_NON_SPACE: Final = re.compile(r"\S")
_CLOSERS: Final = {"(": ")", "[": "]", "{": "}", '"': '"'}
_OPENERS: Final = {")": "(", "]": "[", "}": "{"}
_BRACKET: Final = re.compile(r"[()\[\]{}]")
_MAX_OPENER_SCAN: Final = 1000
# A double quote that closes a string literal: unescaped, then only a comma, a closer or a semicolon on its line.
_STRING_CLOSE: Final = re.compile(r'(?<!\\)"(?=[ \t]*[,;)\]}][ \t]*(?:\n|$))')


def block_end(
    text: str,
    first: int,
    label_start: int,
    body_start: int,
    other_label: re.Pattern[str] | None = None,
    limit: int | None = None,
) -> int:
    """Where the last section (labelled at ``label_start``, its body from ``body_start``) ends in ``text``.

    ``first`` is where the first label starts: the markup before it is what the labels sit in. ``other_label``
    finds a label of another name in the answer's label style: another section, not ours. ``limit``: where text
    that is not the answer's starts (a comment block, quoted history), known to the caller.
    """
    before = text[:first]
    end = len(text) if limit is None else limit
    if "</" in text:
        end = min(end, _element_end(text, before, body_start))
    if "`" in before or "~" in before or ":" in before or "'''" in before or '"""' in before:
        end = min(end, _fence_end(text, before, body_start))
    if "#+" in before or "\\begin" in before:
        end = min(end, _named_end(text, before, body_start))
    content = _NON_SPACE.search(text, body_start, end)
    if content is None:
        return end
    for rule in _BREAK.finditer(text, content.start(), end):
        if text[content.start() : rule.start()].strip():
            end = rule.start()
            break
    if other_label is not None:
        other = other_label.search(text, content.start(), end)
        if other is not None:
            end = other.start()
    if _LIST_ITEM.match(text, label_start):
        paragraph = _UNINDENTED_PARAGRAPH.search(text, content.start(), end)
        if paragraph is not None:
            end = paragraph.start()
    return _before_closers(text, before, body_start, end)


def _element_end(text: str, before: str, body_start: int) -> int:
    """Where the first element left open before the labels closes after ``body_start`` (else the text's end)."""
    stack: list[str] = []
    for match in _TAG.finditer(before):
        name = match["name"].lower()
        if match["close"]:
            if name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name) :]
        elif not match["self"]:
            stack.append(name)
    if not stack:
        return len(text)
    closing = re.compile(r"</\s*(?:" + "|".join(map(re.escape, stack)) + r")\s*>", re.IGNORECASE)
    closed = closing.search(text, body_start)
    return closed.start() if closed is not None else len(text)


def _fence_end(text: str, before: str, body_start: int) -> int:
    """Where a fence left open before the labels closes after ``body_start`` (else the text's end)."""
    open_mark = ""
    for match in _FENCE.finditer(before):
        mark = match["mark"]
        if not open_mark:
            open_mark = mark
        elif mark[0] == open_mark[0] and len(mark) >= len(open_mark):
            open_mark = ""
    if not open_mark:
        return len(text)
    for match in _FENCE.finditer(text, body_start):
        if match["mark"][0] == open_mark[0] and len(match["mark"]) >= len(open_mark):
            return match.start()
    return len(text)


def _named_end(text: str, before: str, body_start: int) -> int:
    """Where the last named block opened before the labels (``#+begin_example``, ``\\begin{verbatim}``) closes after
    ``body_start`` (``#+end_example``, ``\\end{verbatim}``), else the text's end."""
    opened = list(_NAMED_OPEN.finditer(before))
    if not opened:
        return len(text)
    name = re.escape(opened[-1]["name"])
    closing = re.compile(rf"(?im)^[ \t]*(?:#\+end_{name}\b|\\end\{{{name}\}})").search(text, body_start)
    return closing.start() if closing is not None else len(text)


def _before_closers(text: str, before: str, body_start: int, end: int) -> int:
    """``end`` moved back to the closers of the brackets and quotes the first label's paragraph opened.

    A bracket still open there closes at its first closer after the last label that the body did not open itself
    (``Finish[...]``, a call's ``(...)``, a dumped array's ``Array ( ... )``); a quote still open closes at the
    body's very end (``message="...")``), since a quote in the body cannot be told from one that closes.
    """
    # The paragraph holding the first label, its last _MAX_OPENER_SCAN characters: an opener is on the label's line
    # or just above it, and the scan is a Python loop.
    tail = before.rstrip()
    if tail[-1:] in _CLOSERS:
        before = tail  # the opener right before the blank lines the labels start after (text: "\n\nhook: ...)
    paragraph = before[max(before.rfind("\n\n") + 1, len(before) - _MAX_OPENER_SCAN) :]
    if not any(opener in paragraph for opener in _CLOSERS):
        return end
    stack: list[str] = []
    for char in paragraph:
        if char == '"' and stack[-1:] == ['"']:
            stack.pop()
        elif char in _CLOSERS:
            stack.append(char)
        elif char in _OPENERS and stack[-1:] == [_OPENERS[char]]:
            stack.pop()
    open_brackets = {_CLOSERS[opener] for opener in stack if opener != '"'}
    if '"' in stack:
        # The string literal closes at a quote followed by what follows a string in code: a comma, a closer, a
        # semicolon, the end (``content: "...",`` in a debug print); a quote followed by a word is a quotation.
        closing = _STRING_CLOSE.search(text, body_start, end)
        if closing is not None:
            end = closing.start() + 1
    if open_brackets:
        end = _first_unopened(text, body_start, end, open_brackets)
    while end > body_start and text[end - 1].isspace():
        end -= 1
    if stack and text[end - 1 : end] == ";":
        end -= 1
    if '"' in stack and text[end - 1 : end] == '"':
        end -= 1
    return end


def _first_unopened(text: str, start: int, end: int, closers: set[str]) -> int:
    """The first of ``closers`` in ``text[start:end]`` that no bracket of its kind opened there, else ``end``."""
    depth = dict.fromkeys(_OPENERS, 0)
    for match in _BRACKET.finditer(text, start, end):
        char = match.group()
        if char in depth:
            if depth[char] == 0 and char in closers:
                return match.start()
            depth[char] = max(0, depth[char] - 1)
        else:
            depth[_CLOSERS[char]] += 1
    return end
