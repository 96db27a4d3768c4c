"""Issue 40, fifth held-out corpus: outputs of kinds none of the earlier corpora held, from sources none used.

``data/heldout-formats-fifth.json`` holds 51 raw answers (29 valid, 22 invalid) written before the reader ran on
any of them: answers in Arabic, German, French, Korean, Japanese and Chinese under their prompt formats (Jais,
em_german, Vigogne, KULLM, Saiga), Org-mode and Telegram MarkdownV2, k8sgpt, GraphQL and Terraform outputs,
Kubernetes ConfigMaps, protobuf's text format, TOML and INI, git commit trailers and templates, Whisper's SRT and
TSV transcripts, OpenTelemetry GenAI span attributes, ONNX Runtime GenAI consoles, TinyLlama run-ons, CSV, email
replies with quoted history, Slack payloads, SSML. ``source`` names where each format was taken from.

Measured on the reader of ce9a3e6 (after the fourth corpus's rules), before any change for it: 27 of 51 read
right, 16 falsely valid. The general causes fixed since (a prompt's side is never the answer, Alpaca input
headings with text, a field key given twice in YAML or as a labelled section again, Markdown escapes, adjacent
string literals) brought it to 33 of 51 with 10 falsely valid; then Org headline tags, a signature delimiter,
quoted history and comment blocks as text that is not the answer, a label word after one-line sections, captions
and delimited tables read as the text they carry, contract 1.5.0's stubs among sentences, and a prompt awaiting
its completion (its last line a cue such as "### 응답:") holding no answer, to 44 of 51 with none; then printed
Python values (a console's pprint), TOML and INI by the standard library's parsers, empty elements after a
section (SSML's breaks) and a plain transcript read under its last heading, to 49 of 51; field names written in
another script by their sound (:mod:`marsrag.contract._aliases`), to 50; a typed value read as the text it wraps
(Terraform's value objects), to 51. The false-valid set may only shrink and the read-right count may only grow.

What counts as read right and as falsely valid: :mod:`tests.contract.heldout`.
"""

from __future__ import annotations

from tests.contract import heldout

CASES = heldout.load("heldout-formats-fifth.json")
#: Read right; the count may only grow.
READ_RIGHT = 51
#: Falsely valid now, with the cause of each; this set may only shrink.
FALSE_VALID: set[str] = set()
#: Refused though valid now (never falsely valid).
REFUSED: set[str] = set()
NOT_READ_RIGHT = FALSE_VALID | REFUSED


def test_the_corpus_is_the_measured_one() -> None:
    """51 cases, 29 valid, each with a source and, when valid, its five non-empty fields."""
    heldout.assert_shape(CASES, 51, 29)


def test_read_right_does_not_regress_nor_false_valid_grow() -> None:
    """At least READ_RIGHT read right; a new miss or a new false valid shows by name."""
    heldout.assert_no_regression(CASES, READ_RIGHT, FALSE_VALID, NOT_READ_RIGHT)
