"""Issue 40, tenth held-out corpus: outputs from 50 sources none of the earlier corpora used.

``data/heldout-formats-tenth.json`` holds 50 raw answers (30 valid, 20 invalid) written by a helper that never saw
the reader, before it ran on any of them, with an emphasis on what real small models and real local deployments
write: small models' chat templates decoded with their tokens (SmolLM2 and 3, Qwen2.5 0.5B and 1.5B, LFM2, Zamba2,
MiniCPM, CroissantLLM, Bielik, Salamandra, Typhoon2, Dolly, RWKV-7), local runtimes (candle, MLC LLM, LMDeploy,
llamafile, mlx-lm, Llama Stack, mods, TabbyAPI, Aphrodite, Xinference, DeepSpeed-MII, OpenVINO GenAI), apps and
APIs (Jan, Poe, AnythingLLM, Flowise, FastGPT, aichat, Viber, Lark, Google Chat, LangChain4j, Langflow, LobeChat,
Chatbox, NeMo Guardrails, OpenCompass, AlpacaEval, Label Studio), in 25 languages. ``source`` names where each
format was taken from.

Measured on first contact, on the reader of 0aa9808: 28 of 50 read right, 14 falsely valid. The general causes fixed
since: the last section is one paragraph when every other one is (a courtesy line, a console's status line after it
is not the loop's), llama.cpp's printed ``[end of text]`` ends the answer, an object printed under the command that
asked for it is read through its structure, an answer printed in quotes without escapes ends at the quote before
the record's next member, a JSON document under a header line keeps the special tokens in its strings (none ends
the text), and a file's name is no label: 35 of 50 with 8 falsely valid; a REPL's own prompt ending the answer,
and a labelled loop stopping mid-sentence among sections that end as sentences read as cut: 37 with 6; a YAML
file's block scalar read by the parser, and an answer repeating the document's prompt side read as an echo: 39 with
4; a conversation read at the model's last turn, also under the command that printed it: 40 with 3; a console
transcript read at the model's turn after the prompt that asked for the sections: 41 with 3; a transcript printed
whole after a runtime's log lines read at the model's turn: 42 with 3. The ones left are named below with their
cause. The false-valid set may only shrink and the read-right count may
only grow.

What counts as read right and as falsely valid: :mod:`tests.contract.heldout`.
"""

from __future__ import annotations

from tests.contract import heldout

CASES = heldout.load("heldout-formats-tenth.json")
#: Read right; the count may only grow.
READ_RIGHT = 42
#: Falsely valid now, with the cause of each; this set may only shrink.
FALSE_VALID = {
    # Poe's stream: a replace_response event discards what was streamed before it, and suggested replies are no part
    # of the answer; both are read as text events.
    "poe_server_bot_sse_replace_response_discards_draft",
    # A guardrail blocked the generation: the five sections are the blocked draft in the explanation's log.
    "nemo_guardrails_explain_output_rail_blocked_generation",
    # The sections are a few-shot example in the prompt the pipeline echoed back in its full text.
    "deepspeed_mii_pipeline_full_text_fields_only_in_fewshot_example",
}
#: Refused though valid now (never falsely valid), each with what it holds.
REFUSED = {
    # A runaway second user turn after the answer, written without the template's tokens.
    "smollm2_chatml_decode_runaway_second_user_turn",
    # Dolly's "### End" key, then a new invented instruction.
    "dolly_v2_3b_end_key_then_runaway_instruction",
    # FastGPT's detail response: the answer among the flow's node details.
    "fastgpt_openapi_detail_true_responsedata_chinese",
    # A Lark post whose content is a JSON string inside the JSON message.
    "lark_feishu_im_post_message_content_as_json_string_japanese",
    # A Google Chat card: decorated text widgets, one per field.
    "google_chat_message_cardsv2_decoratedtext_hindi",
}
NOT_READ_RIGHT = FALSE_VALID | REFUSED


def test_the_corpus_is_the_measured_one() -> None:
    """50 cases, 30 valid, each with a source and, when valid, its five non-empty fields."""
    heldout.assert_shape(CASES, 50, 30)


def test_read_right_does_not_regress_nor_false_valid_grow() -> None:
    """At least READ_RIGHT read right; a new miss or a new false valid shows by name."""
    heldout.assert_no_regression(CASES, READ_RIGHT, FALSE_VALID, NOT_READ_RIGHT)
