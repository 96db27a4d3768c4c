"""Answers inside captures: a terminal's control sequences, a wire's or a mailbox's transfer encoding, a
transcript printed with role headings, an envelope that says its answer stopped early, a letter's sign-off, a
platform's placeholder and namespaced markup, and string literals of other languages. Each is read as its reader
sees it, and none makes an answer valid that is not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import validate_output
from marsrag.contract._framed import framed_text
from marsrag.contract._terminal import screen_text
from marsrag.contract._transport import transport_decoded
from marsrag.contract.truncation import stopped_early
from tests.contract.samples import CONTENT, labelled

BOLD = "\n\n".join(f"**{name.title()}:** {value}" for name, value in CONTENT.items())


def reads(raw: str, expected: dict[str, str] | None = None) -> None:
    result = validate_output(raw)
    assert result.status == "valid", (raw[:400], result.errors)
    assert dict(result.loop_output) == (expected or CONTENT)


# -- a terminal's capture --------------------------------------------------------------------------------------


@given(st.lists(st.sampled_from(["\x1b[1m", "\x1b[32m", "\x1b[0m", "\x1b[2K", "\x1b]0;title\x07", "\x1b[?25l"])))
def test_control_sequences_anywhere_are_not_the_answer(sequences: list[str]) -> None:
    """ANSI colours, erasures, window titles and cursor modes, between and inside the labels."""
    pieces = BOLD.split(" ")
    raw = "".join(
        piece + " " + (sequences[index % len(sequences)] if sequences else "") for index, piece in enumerate(pieces)
    ).strip()
    reads(raw)


def test_a_spinner_overwritten_by_the_answer_is_the_last_writing_of_its_line() -> None:
    raw = "\x1b[?25l⠋ thinking\r⠙ thinking\r\x1b[2K" + BOLD.replace("\n\n", "\n\n", 1) + "\x1b[?25h"
    assert screen_text("a\rb\x1b[31mc\x1b[0m\nd") == "bc\nd"
    reads(raw)


def test_a_carriage_return_without_a_terminal_overwrites_nothing() -> None:
    """Outside a terminal's capture a lone carriage return is a line end (old Mac files), never an overwrite."""
    reads(labelled("{T}: {v}").replace("\n", "\r"))


# -- a stream's frames and a text's tokens ------------------------------------------------------------------------


def _pieces(text: str, sizes: list[int]) -> list[str]:
    """``text`` cut anywhere, in pieces of the given sizes (cycled)."""
    pieces, index = [], 0
    while index < len(text):
        size = sizes[len(pieces) % len(sizes)]
        pieces.append(text[index : index + size])
        index += size
    return pieces


@given(st.lists(st.integers(1, 9), min_size=1, max_size=5), st.sampled_from(["0:", "data: ", "text:"]))
def test_a_line_framed_stream_is_the_text_its_text_frames_spell(sizes: list[int], frame: str) -> None:
    """Text frames cut the answer anywhere, between frames of metadata of other types (the AI SDK's data stream)."""
    frames = [f"{frame}{json.dumps(piece)}" for piece in _pieces(BOLD, sizes)]
    raw = "\n".join(['f:{"messageId":"msg-1"}', *frames, 'e:{"finishReason":"stop"}', 'd:{"usage":{"total":9}}'])
    reads(raw)


def test_keys_each_given_once_are_no_stream() -> None:
    """YAML's quoted values, or a record's keys, are one frame of each type: a document, not a stream."""
    yaml_text = "\n".join(f"{name}: {json.dumps(value)}" for name, value in CONTENT.items())
    assert framed_text(yaml_text) is None
    reads(yaml_text)
    assert framed_text('0:"a"\nsome prose between\nmore prose\n0:"b"\n0:"c"') is None  # mostly not frames


@pytest.mark.parametrize("sizes", [[1, 3, 2], [4, 7, 5, 2]])
def test_a_text_given_as_its_tokens_is_read_joined(sizes: list[int]) -> None:
    """An API's output as an array of tokens (Replicate's ``output``), the label cut like the words."""
    reads(json.dumps({"id": "p1", "status": "succeeded", "output": _pieces(BOLD, sizes)}))


def test_a_list_of_texts_is_never_joined_into_one_answer() -> None:
    """Longer strings are texts of their own (a notebook cell's source lines): five lines each holding a field are
    not read as one answer, nor are two answers' texts."""
    lines = [f"# {name}: {value}" for name, value in CONTENT.items()]
    assert validate_output(json.dumps({"source": [*lines, "answer = call()"]})).status != "valid"


def test_labels_with_a_gloss_are_read_inside_an_envelope() -> None:
    """A heading's gloss in parentheses ("### Hook (de spanning)") inside a JSON string, in any language."""
    glossed = "\n\n".join(
        f"### {name.title()} (the {index}th part)\n{value}" for index, (name, value) in enumerate(CONTENT.items())
    )
    reads(json.dumps({"result": {"response": glossed, "usage": {"total_tokens": 9}}, "success": True}))


# -- a wire's and a mailbox's transfer encodings ----------------------------------------------------------------


@pytest.mark.parametrize("size", [7, 64, 1000])
def test_a_chunked_http_body_is_joined_by_its_chunk_sizes(size: int) -> None:
    """Chunks cut the answer's words anywhere (and a UTF-8 character's bytes): their sizes say where."""
    body = json.dumps({"answer": {**CONTENT, "hook": "Über " + CONTENT["hook"]}}, ensure_ascii=False).encode()
    chunks = [body[index : index + size] for index in range(0, len(body), size)]
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for chunk in chunks)
        + b"0\r\n\r\n"
    )
    reads(
        raw.decode("utf-8", errors="surrogateescape").encode("utf-8", "surrogateescape").decode("utf-8"),
        {**CONTENT, "hook": "Über " + CONTENT["hook"]},
    )


def test_a_chunked_body_whose_sizes_do_not_add_up_is_left_as_it_was() -> None:
    raw = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot a chunk\r\n"
    assert transport_decoded(raw) is None


def test_a_quoted_printable_email_part_is_read_decoded() -> None:
    """Soft line breaks and =XX escapes (RFC 2045), in a multipart message whose HTML part says the same."""
    import quopri

    text = labelled("{T}: {v}", content={**CONTENT, "grip": "Die Größe " + CONTENT["grip"]})
    encoded = quopri.encodestring(text.encode("utf-8")).decode("ascii")
    raw = (
        "From: bot@example.com\nTo: ops@example.com\nSubject: answer\nMIME-Version: 1.0\n"
        'Content-Type: multipart/alternative; boundary="b1"\n\n--b1\n'
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"
        f"{encoded}\n--b1\nContent-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"
        "<p>same</p>\n--b1--\n"
    )
    assert "=\n" in encoded or "=C3" in encoded  # the encoding is really there
    reads(raw, {**CONTENT, "grip": "Die Größe " + CONTENT["grip"]})


# -- a transcript printed with role headings --------------------------------------------------------------------


@pytest.mark.parametrize(("prompt", "answer"), [("System message:", "Response:"), ("User:", "Assistant:")])
def test_the_answer_is_under_the_last_answering_heading(prompt: str, answer: str) -> None:
    """The prompt's side shows the format with every field; the response skips the loop: it is partial."""
    template = "\n\n".join(f"[[ ## {name} ## ]]\n{{{name}}}" for name in CONTENT)
    skipped = "\n\n".join(f"[[ ## {name} ## ]]\n{value}" for name, value in CONTENT.items() if name != "loop")
    instruction = "then `[[ ## loop ## ]]`, then done."
    raw = f"[2025-01-01T00:00:00]\n\n{prompt}\n\n{template}\n\n{instruction}\n\n{answer}\n\n{skipped}"
    result = validate_output(raw)
    assert result.status != "valid" and {issue.field for issue in result.errors} == {"loop"}, result.errors
    reads(raw + "\n\n[[ ## loop ## ]]\n" + CONTENT["loop"])


# -- an envelope that says the answer stopped early -------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("stop_reason", "refusal"),
        ("finish_reason", "content_filter"),
        ("finishReason", "MAX_TOKENS"),
        ("stopReason", "max_tokens"),
        ("done_reason", "length"),
    ],
)
def test_an_envelope_stopped_early_never_holds_a_valid_answer(key: str, reason: str) -> None:
    """The text reads complete (every field a sentence), but the provider says it stopped before it ended."""
    envelope = {"content": [{"type": "text", "text": BOLD}], key: reason}
    assert stopped_early(envelope)
    result = validate_output(json.dumps(envelope))
    assert result.status != "valid" and any(issue.code == "truncated" for issue in result.errors), result.errors
    reads(json.dumps({**envelope, key: "end_turn" if key == "stop_reason" else "stop"}))


def test_an_early_stop_beside_a_normal_one_says_nothing_of_the_answer() -> None:
    """Several choices, one cut and one complete: the envelope does not say which answer stopped."""
    assert not stopped_early({"choices": [{"finish_reason": "length"}, {"finish_reason": "stop"}]})
    assert stopped_early({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}})


# -- a letter's sign-off ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sign_off", ["Viele Grüße\nIhr IT-Assistent", "Best,\nOps Bot", "Cordialement"])
def test_a_sign_off_after_the_last_section_is_no_part_of_it(sign_off: str) -> None:
    reads(labelled("{T}: {v}") + "\n\n" + sign_off)


#: A grip of two paragraphs: sections that are not one paragraph each may have a last section of several.
GRIP_IN_TWO = {**CONTENT, "grip": CONTENT["grip"] + "\n\nThe same held in all three regions."}


@pytest.mark.parametrize("last", ["Or both.", "Or we could restart both of them together"])
def test_a_last_paragraph_that_is_a_sentence_stays_in_the_last_section(last: str) -> None:
    """A sentence's end, or more words than a sign-off has, where sections run to several paragraphs: the section's
    own paragraph."""
    raw = labelled("{T}: {v}", content=GRIP_IN_TWO) + "\n\n" + last
    assert validate_output(raw).loop_output["loop"].endswith(last)


@pytest.mark.parametrize(
    "after",
    ["Or both.", "N'hésitez pas si vous avez d'autres questions. Prenez soin de vous !", "1 row in set (0.00 sec)"],
)
@pytest.mark.parametrize("form", ["{T}: {v}", "## {T}\n\n{v}", "**{T}:** {v}"])
def test_the_last_section_is_one_paragraph_when_every_other_one_is(after: str, form: str) -> None:
    """The sections share one shape: a paragraph after the loop's own first one is the writer's next words (a
    courtesy line, a console's status line), not the loop's, whatever it says."""
    reads(labelled(form) + "\n\n" + after)


@pytest.mark.parametrize("after", ["- from the snapshot\n- from a replayed sample", "    indented under it"])
def test_a_last_sections_paragraph_ending_in_a_colon_goes_on_with_what_it_introduces(after: str) -> None:
    loop = "Pick the warm-up source:"
    result = validate_output(labelled("{T}: {v}", content={**CONTENT, "loop": loop}) + "\n\n" + after)
    assert result.ok and str(result.loop_output["loop"]).endswith(after.strip())


# -- markup a platform writes ---------------------------------------------------------------------------------


def test_a_placeholder_element_is_a_stand_in_and_namespaced_markup_is_no_text() -> None:
    """Confluence's storage format: <ac:placeholder> holds a template's hint, <ac:structured-macro> wraps text."""
    page = "".join(
        f'<h2>{name.title()}</h2><ac:structured-macro ac:name="info"><ac:rich-text-body><p>{value}</p>'
        "</ac:rich-text-body></ac:structured-macro>"
        for name, value in CONTENT.items()
    )
    reads(json.dumps({"body": {"storage": {"value": page, "representation": "storage"}}}))
    hinted = page.replace(CONTENT["reinforce"], "<ac:placeholder>Add the evidence here: graphs, logs.</ac:placeholder>")
    assert validate_output(hinted).status != "valid"


# -- string literals of other languages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("escaped", "text"),
    [("team\\8217s \\8212 60\\8211\\&80", "team’s — 60–80"), ("a \\x{2014} b", "a — b"), ("a \\u{2014} b", "a — b")],
)
def test_escapes_python_has_not_are_read_in_their_own_language(escaped: str, text: str) -> None:
    """GHCi's Show writes decimal escapes and \\&, Perl \\x{...}, Ruby and Rust \\u{...}."""
    hook = f"The {escaped} numbers are late today."
    fields = ", ".join(f'{name} = "{hook if name == "hook" else value}"' for name, value in CONTENT.items())
    reads(f"Right (Answer {{{fields}}})", {**CONTENT, "hook": f"The {text} numbers are late today."})


# -- a reply below a quoted answer --------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["markdown", "html"])
def test_an_answer_only_in_the_quote_a_reply_answers_is_no_answer(form: str) -> None:
    """A chat reply or an email quoting the bot's older answer above the writer's own words: the quote is the
    message replied to (Matrix's reply fallback, in its body and in its HTML), not an answer of this message."""
    reply = "That was last week's incident; tonight it is another cluster, can you look again?"
    if form == "markdown":
        raw = "\n".join("> " + line for line in labelled("{l}: {v}").split("\n")) + "\n\n" + reply
    else:
        raw = "<mx-reply><blockquote>" + labelled("{l}: {v}", sep="<br>") + "</blockquote></mx-reply>" + reply
    result = validate_output(raw)
    assert result.status != "valid", result.loop_output
    assert validate_output(raw.replace(reply, "")).status == "valid"  # the quote alone is the answer given


# -- forms met first in the eighth corpus -----------------------------------------------------------------------


def test_a_document_commented_out_is_no_answer() -> None:
    """A commented-out object (``# {`` ... ``# }``) in code is an example, not an answer; uncommented it is one."""
    body = json.dumps(CONTENT, indent=2).split("\n")
    code = "answer = json.loads(resp.content)\nanswer['hook']"
    assert validate_output("\n".join(f"# {line}" for line in body) + "\n" + code).status != "valid"
    reads("\n".join(body) + "\n")


def test_a_text_given_as_its_lines_is_read_joined() -> None:
    """nbformat's multiline strings: a list of lines, each ending in its line break."""
    lines = [line + "\n" for line in json.dumps(CONTENT, indent=2).split("\n")]
    lines[-1] = lines[-1].rstrip("\n")
    reads(json.dumps({"outputs": [{"name": "stdout", "output_type": "stream", "text": lines}]}))


def test_messages_of_one_reply_are_paragraphs() -> None:
    """A bot's reply as one message per field (each a whole sentence), decorated labels and all."""
    messages = [{"recipient_id": "u1", "text": "Here is the analysis you asked for:"}]
    messages += [{"recipient_id": "u1", "text": f"🔹 {name.title()}: {value}"} for name, value in CONTENT.items()]
    reads(json.dumps(messages, ensure_ascii=False))


def test_a_gloss_in_full_width_parentheses_is_no_content() -> None:
    raw = "\n".join(f"{name.title()}（第{index}部分）：{value}" for index, (name, value) in enumerate(CONTENT.items()))
    reads(raw)


@pytest.mark.parametrize(
    ("escaped", "text"),
    [(r"\xe2\x80\x94", "—"), (r"\226\128\148", "—"), (r"\xe9", "é"), (r"\u00e9", "é"), (r"\x41", "A")],
)
def test_escaped_bytes_are_read_as_their_encoding(escaped: str, text: str) -> None:
    """A printer that escapes bytes (redis-cli, OCaml, C) writes UTF-8's bytes one by one: they are one character."""
    hook = CONTENT["hook"].replace(" this week", f" this week {escaped}")
    pairs = [item for name, value in {**CONTENT, "hook": hook}.items() for item in (name, value)]
    raw = "127.0.0.1:6379> HGETALL answer\n" + "\n".join(f'{n:>2}) "{item}"' for n, item in enumerate(pairs, 1))
    reads(raw, {**CONTENT, "hook": CONTENT["hook"].replace(" this week", f" this week {text}")})


def test_unquoted_values_with_code_point_escapes_are_read_decoded() -> None:
    """Java's properties escape every character past Latin-1 as ``\\uXXXX`` in values that are not quoted."""
    hook = CONTENT["hook"].replace("five", "f\\u00FCnf")
    raw = "#export\n" + "\n".join(f"answer.{name}={value}" for name, value in {**CONTENT, "hook": hook}.items())
    reads(raw, {**CONTENT, "hook": CONTENT["hook"].replace("five", "fünf")})


@pytest.mark.parametrize(
    "after",
    ["END RequestId: 7c1e9b24-3fa0-4d58\nREPORT RequestId: 7c1e9b24 Duration: 3841.27 ms", "section_end:1719:answer"],
)
def test_the_next_record_after_one_line_sections_is_not_the_last_one(after: str) -> None:
    """Sections one line each, printed among a log's records: the record after the last one is the log's."""
    reads("START RequestId: 7c1e9b24-3fa0-4d58\n" + labelled("{L}: {v}") + "\n" + after + "\n")


@pytest.mark.parametrize(
    ("opened", "closed"), [("#+begin_example", "#+end_example"), ("\\begin{verbatim}", "\\end{verbatim}")]
)
def test_a_named_block_around_the_labels_ends_the_last_section(opened: str, closed: str) -> None:
    reads(f"#+RESULTS:\n{opened}\n{labelled('{L}: {v}', sep=chr(10) * 2)}\n{closed}\nMore notes after the block.")


def test_an_html_break_ends_the_last_section() -> None:
    reads(BOLD + "\n\n<hr/>\n\n<sup>I am a bot, and this action was performed automatically.</sup>")


@pytest.mark.parametrize(
    "words", [("Зацепка", "Суть", "Решение", "Подкрепление", "Следующий шаг"), ("A", "B c", "D", "E f g", "H")]
)
def test_labels_in_the_users_words_with_the_field_name_in_parentheses(words: tuple[str, ...]) -> None:
    """``**Зацепка (Hook):**``: the words are the user's language, the parenthesised name is the field."""
    raw = "\n\n".join(
        f"**{word} ({name.title()}):** {CONTENT[name]}" for word, name in zip(words, CONTENT, strict=True)
    )
    reads(raw)
    reads(raw.replace("(", "（").replace(")", "）").replace(":**", "：**"))


def test_a_parenthesised_field_name_in_prose_is_no_label() -> None:
    """Only at a line's start, before a separator: a sentence that names a field in parentheses is prose."""
    prose = "We tried the retry (loop) and the cache (hook) in staging, and both failed the same way: cold starts."
    assert validate_output(prose + "\n" + labelled("{T}: {v}").split("\n", 1)[1]).status != "valid"


def test_an_answer_given_again_with_citation_tags_is_the_same_answer() -> None:
    """Command R's grounded generation writes the answer, then the same answer with ``<co: n>`` spans after a header:
    one answer, read without the tags; other words in the second copy are a second answer."""
    cited = labelled("{T}: {v}").replace("cold caches", "<co: 0>cold caches</co: 0>")
    raw = "Answer: " + labelled("{T}: {v}") + "\nGrounded answer: " + cited
    reads(raw)
    other = cited.replace("pre-warm from the latest snapshot", "restart everything")
    result = validate_output("Answer: " + labelled("{T}: {v}") + "\nGrounded answer: " + other)
    assert result.status != "valid" and {issue.code for issue in result.errors} == {"duplicate_section"}


@pytest.mark.parametrize("token", ["<NL>", "<0x0A>"])
def test_tokens_that_stand_for_a_line_break_are_line_breaks(token: str) -> None:
    """rinna's ``<NL>`` (a catalogued template's line-break token) and SentencePiece's byte fallback ``<0x0A>``."""
    reads(labelled("{T}: {v}", sep=token) + "</s>")


def test_byte_fallback_tokens_spell_utf8() -> None:
    hook = CONTENT["hook"].replace(" this week", " this week <0xE2><0x80><0x94> again")
    reads(
        labelled("{T}: {v}", content={**CONTENT, "hook": hook}),
        {**CONTENT, "hook": hook.replace("<0xE2><0x80><0x94>", "—")},
    )


def test_a_cards_text_blocks_are_paragraphs() -> None:
    """An Adaptive Card's body: a title, then a label block and a value block per field."""
    blocks = [{"type": "TextBlock", "text": "Cache review", "weight": "Bolder"}]
    for name, value in CONTENT.items():
        blocks += [
            {"type": "TextBlock", "text": name.title(), "weight": "Bolder"},
            {"type": "TextBlock", "text": value},
        ]
    reads(json.dumps({"type": "AdaptiveCard", "body": blocks}))


def test_a_streams_chunks_are_never_paragraphs() -> None:
    """Chunks cut inside sentences meet inside words: joined as they are, never with breaks between them."""
    chunks = [{"delta": {"content": piece}} for piece in _pieces(BOLD, [5, 11, 3])]
    reads(json.dumps(chunks))


def test_a_chat_platforms_links_entities_and_shortcodes_read_as_shown() -> None:
    """Slack's mrkdwn: ``<url|label>`` shows its label, ``&amp;`` an ampersand, ``:arrow_right:`` an emoji."""
    reinforce = CONTENT["reinforce"].replace("in staging", "in <https://grafana.example/d/42|staging> &amp; prod")
    raw = labelled("*{T}*\n{v}", sep="\n\n", content={**CONTENT, "reinforce": reinforce})
    raw = raw.replace("*Loop*", ":arrow_right: *Loop*")
    reads(raw, {**CONTENT, "reinforce": CONTENT["reinforce"].replace("in staging", "in staging & prod")})


@pytest.mark.parametrize("form", ["【{T}】\n{v}\n", "「{T}」{v}", "{c}、{T}｜{v}", "［{T}］：{v}"])
def test_cjk_brackets_numerals_and_bars_decorate_labels(form: str) -> None:
    """CJK headings: lenticular and corner brackets, a numeral and an enumeration comma, a full-width bar."""
    numerals = "一二三四五"
    raw = "\n".join(
        form.format(T=name.title(), v=value, c=numerals[index]) for index, (name, value) in enumerate(CONTENT.items())
    )
    reads(raw)


def test_a_character_data_section_is_its_text() -> None:
    """A WeChat reply's XML: the answer inside ``<![CDATA[...]]>`` of its Content element."""
    raw = (
        f"<xml>\n  <MsgType><![CDATA[text]]></MsgType>\n  <Content><![CDATA[{labelled('{T}: {v}')}]]></Content>\n</xml>"
    )
    reads(raw)


def test_a_line_counting_a_replys_parts_is_no_content() -> None:
    """A reply split in two messages, each counting its part ("(2/2)"): the counter is the platform's."""
    messages = [
        {"type": "text", "text": "Findings (1/2)\n\n" + labelled("{T}:\n{v}", sep="\n\n").split("\n\nReinforce")[0]},
        {"type": "text", "text": "(2/2)\n\nReinforce" + labelled("{T}:\n{v}", sep="\n\n").split("\n\nReinforce")[1]},
    ]
    reads(json.dumps({"replyToken": "r1", "messages": messages}))


@pytest.mark.parametrize(
    "wrap",
    [
        lambda text: {"S": text},
        lambda text: {"stringValue": text},
        lambda text: {"sensitive": False, "type": "string", "value": text},
    ],
)
def test_a_typed_value_is_the_text_it_wraps(wrap: Any) -> None:
    """DynamoDB's, Firestore's and Terraform's typed values around each field, read from text."""
    reads(json.dumps({"Item": {name: wrap(value) for name, value in CONTENT.items()}}))


@pytest.mark.parametrize(
    "wrap",
    [
        lambda text: {"type": "string", "description": text},
        lambda text: {"S": text, "note": "Another text of several words."},
        lambda text: {"value": text, "sources": [1, 2]},
    ],
)
def test_a_described_property_or_a_value_among_others_is_no_text(wrap: Any) -> None:
    """A schema's property describes a field; a value beside another text, or beside other data, is data."""
    assert validate_output(json.dumps({name: wrap(value) for name, value in CONTENT.items()})).status != "valid"


def _adf(paragraphs: list[list[dict[str, Any]]]) -> dict[str, Any]:
    return {"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": p} for p in paragraphs]}


def test_a_rich_text_documents_nodes_are_read_as_their_text() -> None:
    """Jira's ADF (and ProseMirror's, Slate's, Notion's shapes): marked text nodes inline, paragraphs as blocks."""
    paragraphs = [[{"type": "text", "text": "Summary for the on-call:", "marks": [{"type": "em"}]}]]
    for name, value in CONTENT.items():
        first, rest = value.split(" ", 1)
        paragraphs.append(
            [
                {"type": "text", "text": f"{name.title()}:", "marks": [{"type": "strong"}]},
                {"type": "text", "text": f" {first} "},
                {"type": "text", "text": rest, "marks": [{"type": "code"}]},
            ]
        )
    reads(json.dumps({"id": "1", "body": _adf(paragraphs)}))


def test_a_node_shown_as_no_text_keeps_the_document_from_being_read() -> None:
    """A link card in a field (``please follow them: <card>``): what the field says is not in its text."""
    paragraphs = [[{"type": "text", "text": f"{n.title()}: {v}"}] for n, v in CONTENT.items()]
    paragraphs[2] = [
        {"type": "text", "text": "Payoff: the steps are in the runbook linked here, please follow them: "},
        {"type": "inlineCard", "attrs": {"url": "https://wiki.example/runbook"}},
    ]
    assert validate_output(json.dumps({"body": _adf(paragraphs)})).status != "valid"
    paragraphs[2] = [{"type": "text", "text": f"Payoff: {CONTENT['payoff']}"}, {"type": "hardBreak"}]
    reads(json.dumps({"body": _adf(paragraphs)}))


# -- forms met first in the ninth corpus ------------------------------------------------------------------------


def test_a_message_by_the_prompts_side_is_never_the_answer_whatever_names_its_author() -> None:
    """AutoGen's ``source='user'``, a transcript's ``"type": "user"``: the fields in the user's message are a draft
    to review, not the model's answer."""
    task = "Please polish this draft:\n" + labelled("{T}: {v}")
    messages = f"TextMessage(source='user', content={task!r}), TextMessage(source='critic', content='APPROVE')"
    printed = f"TaskResult(messages=[{messages}])"
    assert validate_output(printed).status != "valid"
    lines = [{"type": "user", "message": {"content": task}}, {"type": "assistant", "message": {"content": "Done."}}]
    assert validate_output("\n".join(json.dumps(line) for line in lines)).status != "valid"


@pytest.mark.parametrize("key", ["expectedOutput", "expected_output", "ground_truth", "reference", "ideal"])
def test_an_evaluation_records_reference_answer_is_never_the_answer(key: str) -> None:
    record = {
        "input": "Why is the cache cold?",
        "actualOutput": "I'm sorry, I can't help with that.",
        key: labelled("{T}: {v}"),
    }
    assert validate_output(json.dumps({"testCases": [record]})).status != "valid"


@pytest.mark.parametrize(
    "loop",
    ["'Next step: %s' % next", '"Next step: " + next_action', '"{}".format(step)', 'string & !=""', "#Question"],
)
def test_code_in_a_fields_place_among_literal_members_is_no_content(loop: str) -> None:
    """A literal combined with code (Jsonnet's ``%``, ``+``, a method), or an unquoted value among members written
    ``key: "..."`` on their own lines (CUE, HCL): its text is only known when the code runs."""
    members = [f"  {name}: {json.dumps(value)}" for name, value in CONTENT.items() if name != "loop"]
    raw = "answer: {\n" + "\n".join(members) + f"\n  loop: {loop}\n}}\n"
    result = validate_output(raw)
    assert result.status != "valid" and "loop" in {issue.field for issue in result.errors}, result.loop_output


def test_a_string_a_printer_cut_at_its_limit_is_truncated() -> None:
    """gdb prints a string past ``print elements`` as its first characters and ``...``."""
    members = [f"  {name} = {json.dumps(value)}," for name, value in CONTENT.items()]
    members[2] = f"  payoff = {json.dumps(CONTENT['payoff'][:40])}...,"
    result = validate_output("$1 = {\n" + "\n".join(members) + "\n}")
    assert result.status != "valid" and [issue.code for issue in result.errors] == ["truncated"]


def test_a_stream_whose_final_event_is_incomplete_was_cut() -> None:
    """The Realtime API's response.done with ``status: incomplete``: the text stopped at the token limit."""
    events = [{"type": "response.text.delta", "delta": piece} for piece in _pieces(BOLD, [9, 4])]
    done = {
        "type": "response.done",
        "response": {"status": "incomplete", "status_details": {"reason": "max_output_tokens"}},
    }
    result = validate_output("\n".join(json.dumps(event) for event in [*events, done]))
    assert result.status != "valid"


def test_a_quoted_bodys_escapes_are_its_text() -> None:
    """A body written as one double-quoted literal (a Debug print's ``hook: "..."``): ``\\n`` is a line break."""
    reinforce = CONTENT["reinforce"].replace(" in staging", "\\nin staging")
    raw = "\n".join(
        f"{n}: {json.dumps(v) if n != 'reinforce' else chr(34) + reinforce + chr(34)}," for n, v in CONTENT.items()
    )
    result = validate_output(raw)
    assert result.ok and " ".join(str(result.loop_output["reinforce"]).split()) == CONTENT["reinforce"]


def test_a_bracketed_console_line_after_one_line_sections_is_not_the_last_one() -> None:
    reads(labelled("{T}: {v}") + "\n[Prompt tokens: 418, Completion tokens: 236]\n")


def test_a_member_after_indented_one_line_sections_is_not_the_last_one() -> None:
    """A Debug print's struct: the members are indented alike, so the member after the loop is a member."""
    members = "\n".join(f"        {name}: {json.dumps(value)}," for name, value in CONTENT.items())
    reads(f'Ok(\n    LoopOutput {{\n{members}\n        contract_version: "1.0.0",\n    }},\n)')


@pytest.mark.parametrize("vertical", ["┃", "│", "║"])
def test_a_terminal_uis_panel_frames_are_no_text(vertical: str) -> None:
    """Rich's panels (CrewAI's, Agno's consoles): each line between two verticals, borders with a title."""
    width = 60
    lines = ["┏━ Response (5.8s) " + "━" * (width - 18) + "┓", f"{vertical}{' ' * width}{vertical}"]
    for name, value in CONTENT.items():
        words, line = value.split(), f"{name.title()}:"
        for word in words:
            if len(line) + len(word) + 1 > width - 2:
                lines.append(f"{vertical} {line.ljust(width - 2)} {vertical}")
                line = ""
            line = f"{line} {word}".strip()
        lines += [f"{vertical} {line.ljust(width - 2)} {vertical}", f"{vertical}{' ' * width}{vertical}"]
    lines.append("┗" + "━" * width + "┛")
    result = validate_output("\n".join(lines))
    assert result.ok and {name: " ".join(str(value).split()) for name, value in result.loop_output.items()} == CONTENT


def test_a_note_set_in_emphasis_after_the_last_section_is_no_part_of_it() -> None:
    reads(BOLD + "\n\n_The figures are estimates based on the data you shared._")
    loop = "*Should we pre-warm the nodes right now?*\n\n*Or should we wait for the traffic dip tonight?*"
    result = validate_output(labelled("{T}: {v}", content={**GRIP_IN_TWO, "loop": loop}))
    assert result.ok and str(result.loop_output["loop"]).endswith("tonight?*")  # the section is emphasized itself


@pytest.mark.parametrize("box", [True, False])
def test_a_grid_tables_wrapped_cells_are_one_value(box: bool) -> None:
    """A long cell wrapped over rows whose label cell is empty (nushell's rounded tables, grid tables): one value."""
    bar = "│" if box else "|"
    rows = []
    for name, value in CONTENT.items():
        words = value.split()
        half = len(words) // 2
        rows += [
            f"{bar} {name:<9} {bar} {' '.join(words[:half])} {bar}",
            f"{bar} {'':<9} {bar} {' '.join(words[half:])} {bar}",
        ]
    top, bottom = ("╭" + "─" * 11 + "┬" + "─" * 40 + "╮", "╰" + "─" * 11 + "┴" + "─" * 40 + "╯") if box else ("", "")
    result = validate_output("\n".join([top, *rows, bottom]).strip())
    assert result.ok and {name: " ".join(str(value).split()) for name, value in result.loop_output.items()} == CONTENT


@pytest.mark.parametrize("after", ["1 row in set. Elapsed: 0.004 sec.", "(1 row)", "Query OK, the row was read."])
@pytest.mark.parametrize("separator", [":", " |"])
def test_a_record_printed_aligned_ends_at_its_blank_line(after: str, separator: str) -> None:
    """A database shell's vertical display pads every key to one column: a value goes on only on lines indented to
    that column, so the shell's own line after the blank line is not the loop's second paragraph."""
    width = max(map(len, ["ticket_id", *CONTENT])) + len(separator) + 1
    row = {"ticket_id": "4471", **CONTENT}
    lines = [f"{(name + separator).ljust(width)}{value}" for name, value in row.items()]
    reads("Row 1:\n──────\n" + "\n".join(lines) + f"\n\n{after}\n\nshell :) ")


def test_an_aligned_records_value_wrapped_to_its_column_is_one_value() -> None:
    width = len("reinforce:  ")
    first, rest = CONTENT["loop"].split(" ", 1)
    lines = [f"{(name + ':').ljust(width)}{value}" for name, value in CONTENT.items() if name != "loop"]
    result = validate_output(
        "\n".join([*lines, f"{'loop:'.ljust(width)}{first}", " " * width + rest, "", "Elapsed: 1 sec."])
    )
    assert result.ok and " ".join(str(result.loop_output["loop"]).split()) == CONTENT["loop"]


@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_answer_printed_in_quotes_without_escapes_ends_at_the_closing_quote(quote: str) -> None:
    """A toString that quotes without escaping (LangChain4j's AiMessage): the text's lines break the record, and the
    quote before the next member closes the answer."""
    raw = f"INFO -- Answer: AiMessage {{ text = {quote}" + labelled("{T}: {v}")
    reads(raw + f"{quote}, thinking = null, toolExecutionRequests = [] }}\nINFO -- Tokens: 598")


@pytest.mark.parametrize(
    "command", [">>> print(response)", "$ python run.py\nWARNING: max_context_token_num is not set"]
)
def test_an_object_printed_under_the_command_that_asked_for_it_is_read_through_its_structure(command: str) -> None:
    """No blank line between a console's command and the repr it printed: the value starts at its own line."""
    content = "\n\n".join(f"**{name.title()}**: {value}" for name, value in CONTENT.items())
    printed = f"Response(text={content!r}, token_ids=[151644, 8948], finish_reason='stop', index=0)"
    reads(f"{command}\n{printed}\n")


@pytest.mark.parametrize(
    "header", ["outputs/default/predictions/qwen/loop_contract_law.json", "$ cat hook_results.json"]
)
@pytest.mark.parametrize("echoed", [False, True])
def test_a_json_document_under_a_header_keeps_its_prompts_tokens_in_its_strings(header: str, echoed: bool) -> None:
    """An evaluation record under its file's name: the prompt string's special tokens end nothing (the structure
    reads them), and the file's name, though it holds a field's name, is no label."""
    prediction = "\n".join(f"{name.upper()}: {value}" for name, value in CONTENT.items())
    if echoed:
        prediction = prediction.replace(CONTENT["payoff"], "specific value, recommendation, or resolution.")
    asked = "\n".join(f"{n}. {name.upper()}: the {name} of the answer." for n, name in enumerate(CONTENT, 1))
    prompt = f"<|im_start|>user\nWhy?\n\nAnswer with five sections:\n{asked}<|im_end|>\n<|im_start|>assistant\n"
    record = {str(n): {"origin_prompt": prompt, "prediction": prediction, "gold": ""} for n in range(2)}
    result = validate_output(header + "\n" + json.dumps(record, indent=4))
    if echoed:
        assert not result.ok and result.loop_output["hook"] == CONTENT["hook"]
    else:
        reads(header + "\n" + json.dumps(record, indent=4))


def test_a_repl_started_from_the_shell_ends_the_answer_at_its_next_prompt() -> None:
    """The shell's prompt starts the capture and the REPL's own (">>> ") the user's turns: the REPL's next prompt
    after the loop (">>> /exit") is the user's, not the loop's."""
    answer = "\n\n".join(f"{name.upper()}: {value}" for name, value in CONTENT.items())
    reads(f"$ mlc_llm chat HF://model\n>>> why is checkout slow?\n{answer}\n>>> /exit\n")


def test_a_yaml_files_block_scalar_holding_the_answer_ends_at_the_next_key() -> None:
    """A saved chat session in YAML (aichat's): the answer is a block scalar in a message list, the prompt's side is
    no answer, and the key after the block scalar is the file's, not the loop's."""
    answer = "\n\n".join(f"**{name.title()}:** {value}" for name, value in CONTENT.items())
    asked = "\n".join(f"{name.upper()}: the {name} of the answer." for name in CONTENT)
    raw = (
        "model: ollama:llama3.2:3b\ntemperature: null\nmessages:\n- role: user\n  content: |-\n    Why?\n\n"
        + "".join(f"    {line}\n" for line in asked.split("\n"))
        + "- role: assistant\n  content: |-\n"
        + "".join(f"    {line}\n" if line else "\n" for line in answer.split("\n"))
        + "data_urls: {}\n"
    )
    reads(raw)


@pytest.mark.parametrize("copy_key", ["message", "text", "output"])
def test_an_answer_repeating_the_documents_prompt_side_is_no_answer(copy_key: str) -> None:
    """A flow wired its input straight to its output (Langflow's Chat Output on Chat Input): the user's message holds
    the five sections, and its copy under an envelope without an author repeats what the model was given."""
    draft = "Please review my draft:\n\n" + labelled("{T}: {v}")
    record = {
        "messages": [{"message": draft, "sender": "User"}],
        "outputs": {copy_key: {copy_key: draft, "type": "text"}},
    }
    result = validate_output(json.dumps(record, indent=2))
    assert not result.ok and {issue.code for issue in result.errors} == {"template_echo"}


def test_an_answer_matching_the_reference_answer_is_a_right_answer() -> None:
    """An evaluation record's reference side is no prompt: a prediction equal to it is valid."""
    answer = labelled("{T}: {v}")
    reads(json.dumps({"input": "Why?", "expected_output": answer, "actual_output": answer}))


@pytest.mark.parametrize("header", ["", "$ sgpt --chat runner 'and my back?'\nSee my previous answer.\n$ cat cache\n"])
def test_a_conversations_answer_is_the_models_last_turn(header: str) -> None:
    """A saved conversation: the model's last turn answers the last question; an earlier turn's five sections
    answered an earlier one, so a last turn that only points back is no answer."""
    earlier = "\n\n".join(f"**{name.upper()}:** {value}" for name, value in CONTENT.items())
    turns = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Why is checkout slow?"},
        {"role": "assistant", "content": earlier},
        {"role": "user", "content": "And the search page?"},
        {"role": "assistant", "content": "The same applies: see my previous answer above."},
    ]
    assert not validate_output(header + json.dumps(turns)).ok
    reads(header + json.dumps(turns[:3]))  # the model's last turn is the answer
