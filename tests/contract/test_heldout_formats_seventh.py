"""Issue 40, seventh held-out corpus: outputs from 40 sources none of the earlier corpora used.

``data/heldout-formats-seventh.json`` holds 50 raw answers (30 valid, 20 invalid) written by a helper that never
saw the reader, before it ran on any of them: serving APIs and their streams (the AI SDK's data stream, Replicate,
KServe v2 and Triton, Azure's content filters, Vertex text-bison, Cloudflare Workers AI, iFlytek Spark, CLOVA
Studio, Qianfan, Aleph Alpha, Anthropic's refusals), messaging (LINE, WeChat, Kakao, Teams, irssi logs), documents
and tickets (Jira's ADF, Confluence's storage format, Notion blocks, quoted-printable email, iCalendar, gettext,
troff, Typst, LaTeX), captures (HTTP chunked bodies, asciinema casts, GitHub Actions logs, psql's expanded display,
pg_dump's COPY), language dumps (Perl's Data::Dumper, PHP's var_dump, Ruby's inspect, GHCi's Show, Erlang's ~p),
DSPy's history, smolagents' console, OpenInference spans, Alertmanager webhooks, in thirteen languages. ``source``
names where each format was taken from.

Measured on first contact, on the reader of a6ab415: 23 of 50 read right, 7 falsely valid. Keys in the shape the
text gives them (:mod:`marsrag.contract._inferred`) bring it to 27 of 50 with 6 falsely valid; a terminal's control
sequences and a wire's or a mailbox's transfer encoding undone, a transcript's last answering heading, an envelope's
early stop reason (a refusal, a filter, a token limit), a letter's sign-off, a platform's placeholder elements and
namespaced markup, string literals of other languages, and a field name closing an element as a hint to 34 of 50
with none falsely valid; a line-framed stream's text frames, a text given as its tokens, and glossed labels inside an
envelope to 37; field names written in another script by their sound to 38; CJK heading brackets, numerals and
bars, XML character data read as its text, and a line counting a reply's parts as no content to 40; typed values
read as the text they wrap to 41; a rich-text document's nodes read as their text to 42. The ones left
are named below with their cause. The false-valid set may only shrink and the read-right count may only grow.

What counts as read right and as falsely valid: :mod:`tests.contract.heldout`.
"""

from __future__ import annotations

from tests.contract import heldout

CASES = heldout.load("heldout-formats-seventh.json")
#: Read right; the count may only grow.
READ_RIGHT = 42
#: Falsely valid now; this set may only shrink.
FALSE_VALID: set[str] = set()
#: Refused though valid now (never falsely valid), each with its cause.
REFUSED = {
    # A recorded session's events ([time, "o", text]) whose text is the screen: not read as one text.
    "asciinema_cast_v2_ansi_colored_padded_labels_spinner_overwrites",
    # Erlang's ~p wraps a binary across lines as several adjacent <<"...">> pieces.
    "erlang_io_format_p_map_binary_keys_sorted_swahili",
    # gettext keys a field by its msgid ("answer.hook") and gives its text in msgstr's concatenated lines.
    "gettext_po_keyword_msgids_multiline_msgstr_concatenation_french",
    # A CI log's stamped lines with the answer written as a heredoc to $GITHUB_OUTPUT.
    "github_actions_raw_log_timestamped_github_output_heredoc_delimiters",
    # iCalendar's folded lines (75 octets) and escaped commas in a DESCRIPTION property.
    "icalendar_vevent_description_folded_75_octets_escaped_commas_czech",
    # psql's expanded display wraps a value with "+" at each line's end and "|" at the next one's start.
    "psql_expanded_display_record_plus_continuation_lines",
    # troff's escapes (\-, \(aq, \fB) and .PP paragraphs under .SH headings.
    "troff_man_page_section_headings_groff_escapes",
    # Typst's term list (/ Hook: ...) with indented continuation lines.
    "typst_term_list_wrapped_continuations_polish",
}
NOT_READ_RIGHT = FALSE_VALID | REFUSED


def test_the_corpus_is_the_measured_one() -> None:
    """50 cases, 30 valid, each with a source and, when valid, its five non-empty fields."""
    heldout.assert_shape(CASES, 50, 30)


def test_read_right_does_not_regress_nor_false_valid_grow() -> None:
    """At least READ_RIGHT read right; a new miss or a new false valid shows by name."""
    heldout.assert_no_regression(CASES, READ_RIGHT, FALSE_VALID, NOT_READ_RIGHT)
