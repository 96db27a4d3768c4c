"""Issue 40, second held-out corpus: formats from sources neither the catalog nor the first corpus used.

``data/heldout-formats-second.json`` holds 49 raw answers (28 valid, 21 invalid) whose markup is taken from
real model outputs pasted in public GitHub threads of projects the catalog (``docs/formats.md``, "Sources
read") and the first held-out corpus never drew on: gpt-oss channel markup as it leaks into Sidekick,
text-generation-webui and vLLM users' reports; Magistral ``[THINK]`` (llama.cpp, koboldcpp); Cline's XML tool
use; MemGPT/Letta function JSON; MetaGPT ``[CONTENT]`` blocks; AgentScope, TaskWeaver, SWE-agent, SWE-smith,
LocalAI, OpenChat, Aider and FM-Agent replies; MLX (mlx-lm, mlx-vlm) special-token leaks; lenient JSON and
YAML from agent frameworks' parser fixes. Each was reworded into a short SRE answer in the five fields and
committed before the reader was run on any of them; ``source`` names where each format was taken from.

Measured on the reader it was written against: 42 of 49 read right, 3 falsely valid. The general causes of the
misses became rules (``MEASURED_MISSES``); all 49 read right since. The false-valid cases may only shrink and the
read-right count may only grow.

What counts as read right and as falsely valid: :mod:`tests.contract.heldout`.
"""

from __future__ import annotations

from tests.contract import heldout

CASES = heldout.load("heldout-formats-second.json")
#: Read right; the count may only grow. Measured 42 before the rules it led to (the misses named in
#: ``MEASURED_MISSES``), 49 after.
READ_RIGHT = 49
#: The misses first measured, and their general causes, each now a rule with tests of its own.
MEASURED_MISSES = {
    # The last section ran to the end of the text: it ends where the element around the labels closes.
    "cline_attempt_completion_result": "false valid",
    # ... and where a paragraph after a list item starts unindented (CommonMark).
    "ollama_think_then_bold_numbered_unicode": "false valid",
    # Two complete JSON answers with different fields ("Corrected:"): now refused, as two labelled ones are.
    "aider_corrected_second_answer": "false valid",
    # ``{"response": [{"type": "hook", "content": ...}, ...]}``: lists of name/value objects are read.
    "taskweaver_typed_response_list": "refused",
    # ``Assistant: HOOK - ...``: the answering role's name before the answer is a header, not a label.
    "smolvlm_end_of_utterance_leak": "refused",
    # ``<|message|>Hook: ...``: each harmony message starts its own line.
    "gpt_oss_analysis_then_final_labels": "refused",
    # ``[HOOK] ... [/HOOK]``: the square-bracket element is a key syntax.
    "fm_agent_bracket_markers": "refused",
}
#: Falsely valid now; this set may only shrink.
FALSE_VALID: set[str] = set()
NOT_READ_RIGHT: set[str] = set()


def test_the_corpus_is_the_measured_one() -> None:
    """49 cases, 28 valid, each with a source and, when valid, its five non-empty fields."""
    heldout.assert_shape(CASES, 49, 28)


def test_read_right_does_not_regress_nor_false_valid_grow() -> None:
    """At least READ_RIGHT read right; a new miss or a new false valid shows by name."""
    heldout.assert_no_regression(CASES, READ_RIGHT, FALSE_VALID, NOT_READ_RIGHT)
