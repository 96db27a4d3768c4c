"""Issue 40, fourth held-out corpus: formats from sources none of the three earlier corpora nor the catalog used.

``data/heldout-formats-fourth.json`` holds 50 raw answers (28 valid, 22 invalid) written before the reader ran on
any of them, from public threads and files of projects no earlier corpus drew on: API responses and streams as
users pasted them (Gemini chunks and parts, the Responses API, Bedrock Converse, TGI's events, a PHP dump, LM
Studio's log), agents' tool calls written as text (Goose, Roo Code, Kilo Code, Hermes Agent, OpenCrabs, OpenClaw,
ds2api), chat UIs' leaks (ChatterUI), TensorRT-LLM's run.py, transformers.js' streamer, Fabric, Perplexity answers.
``source`` names where each format was taken from.

Measured on the reader of 3f2be7d (after the third corpus's rules), before any change for it: 35 of 50 read
right, 7 falsely valid. Their general causes became rules (see the commits that follow it, and contract 1.4.0);
50 of 50 read right since. The false-valid set may only shrink and the read-right count may only grow.

What counts as read right and as falsely valid: :mod:`tests.contract.heldout`.
"""

from __future__ import annotations

from tests.contract import heldout

CASES = heldout.load("heldout-formats-fourth.json")
#: Read right; the count may only grow.
READ_RIGHT = 50


def test_the_corpus_is_the_measured_one() -> None:
    """50 cases, 28 valid, each with a source and, when valid, its five non-empty fields."""
    heldout.assert_shape(CASES, 50, 28)


def test_read_right_does_not_regress_nor_false_valid_grow() -> None:
    """At least READ_RIGHT read right; a new miss or a new false valid shows by name."""
    heldout.assert_no_regression(CASES, READ_RIGHT, set(), set())
