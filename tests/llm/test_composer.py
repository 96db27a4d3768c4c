"""The offline composer: deterministic, grounded in the passages it is given, always a valid LoopOutput."""

from __future__ import annotations

import re

import pytest

from marsrag.chain.briefing import briefing
from marsrag.chain.citations import MARKER, resolve
from marsrag.contract import validate_output
from marsrag.state import Support

pytestmark = pytest.mark.crewai

RESULTS = [
    {
        "chunk_id": 11,
        "source": "kb/runbooks/prewarm.md#Runbook: Pre-warm a cache node > Steps",
        "heading": "Runbook: Pre-warm a cache node > Steps",
        "text": "Snapshots are written every 15 minutes.\n\n"
        "- **Pre-warm** each cache node from the latest snapshot before it rejoins the pool.\n"
        "- A pre-warmed node reaches a 95% hit rate in about two minutes.",
        "score": 3.0,
    },
    {
        "chunk_id": 12,
        "source": "kb/incidents/cold-cache.md#INC-41: Cold cache restarts > Root cause",
        "heading": "INC-41: Cold cache restarts > Root cause",
        "text": "Every breach started within ten minutes of a cache node restart.\n"
        "Cold caches sent all reads to the database, which slowed checkout for an hour.",
        "score": 2.0,
    },
    {
        "chunk_id": 13,
        "source": "kb/practices/slo.md#SLOs > Error budgets",
        "heading": "SLOs > Error budgets",
        "text": "The checkout SLO is 99.9% of requests under 300 ms at p95 in each region.",
        "score": 1.0,
    },
    {
        "chunk_id": 14,
        "source": "kb/runbooks/drain.md#Runbook: Drain a node > Procedure",
        "heading": "Runbook: Drain a node > Procedure",
        "text": "Drain the node before any restart, so that its keys move to the others first.",
        "score": 0.5,
    },
]
GOAL = "Checkout latency breached the SLO after cache restarts"
HOOK = "Which cache tier should we pre-warm first?"
PROMPT = f"Current Task: Recommend the fix.\n{briefing(GOAL, HOOK, RESULTS)}\n"


def compose(prompt: str, task: str = "recommend") -> dict[str, str]:
    from marsrag.llm.composition import compose as compose_answer

    return compose_answer(prompt, task)


def _sentences(text: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.!?])\s+", text) if part]


def assert_grounded(answer: dict[str, str], results: list[dict[str, object]]) -> None:
    """Every quoted sentence carries the marker of the passage it came from; every marker resolves."""
    from marsrag.llm.composition import plain

    citations, warnings = resolve(answer, results)
    assert warnings == []
    for name in ("grip", "payoff", "reinforce"):
        for sentence in _sentences(answer[name]):
            markers = [int(ref) for match in MARKER.finditer(sentence) for ref in match.group(1).split(",")]
            bare = MARKER.sub("", sentence).replace(" .", ".").strip()
            # The quoted part of a sentence follows any lead-in of the composer's own ("Recommended next step: ").
            quoted = bare.split(": ", 1)[-1] if bare.startswith(("Recommended", "No source")) else bare
            holders = [n for n, item in enumerate(results, start=1) if quoted.rstrip(".") in plain(str(item["text"]))]
            if holders:
                assert markers, f"{name}: {sentence!r} is quoted from passage {holders} without a marker"
                assert set(markers) <= set(holders), f"{name}: {sentence!r} is credited to the wrong passage"
    assert {citation.ref for citation in citations} == {
        ref
        for name in ("grip", "payoff", "reinforce", "loop")
        for match in MARKER.finditer(answer[name])
        for ref in match.group(1).split(",")
    }


def test_answer_is_a_valid_loop_output_grounded_in_the_passages() -> None:
    """All five sections are valid; every sentence quoted from a passage is cited with that passage's number."""
    answer = compose(PROMPT)
    assert validate_output(answer).status == "valid"
    assert_grounded(answer, RESULTS)
    assert MARKER.search(answer["reinforce"])


def test_handed_over_hook_is_used_verbatim() -> None:
    """The hook the previous step handed over opens the answer (next.hook = prior.loop)."""
    assert compose(PROMPT)["hook"] == HOOK


def test_hook_states_the_goal_once() -> None:
    """Without a handed-over hook, the hook states the goal's tension once."""
    hook = compose(briefing(GOAL, None, RESULTS))["hook"]
    assert hook.count("cache restarts") == 1 and hook.endswith("?")


def test_payoff_is_the_action_sentence_and_says_so() -> None:
    """The payoff is the most relevant instruction, said to be the recommendation, with its passage's marker."""
    payoff = compose(PROMPT)["payoff"]
    assert payoff.startswith("Recommended next step: Pre-warm each cache node")
    assert "[1]" in payoff


def test_whole_passages_are_read() -> None:
    """A passage's later lines count: the instruction on its second line is found (not only the first line)."""
    answer = compose(PROMPT)
    assert "Snapshots are written" not in answer["payoff"]
    assert "before it rejoins the pool" in answer["payoff"]


def test_no_markdown_reaches_the_answer() -> None:
    """Bullets, bold and code ticks in a passage never reach the text."""
    answer = compose(PROMPT)
    for text in answer.values():
        assert "**" not in text and "`" not in text and not re.search(r"(^|\n)\s*[-*] ", text)


def test_loop_points_at_an_unused_passage_and_is_no_asked_question() -> None:
    """The loop asks about a passage the answer did not quote; one the session asked is not offered again."""
    answer = compose(PROMPT)
    cited = {citation.ref for citation in resolve(answer, RESULTS)[0]}
    assert "4" not in cited and "Drain a node" in answer["loop"]
    asked = briefing(GOAL, HOOK, RESULTS, asked=[answer["loop"]])
    assert compose(asked)["loop"] != answer["loop"]


def test_nothing_new_says_so_and_offers_the_fallback_question() -> None:
    """With every passage used or asked about, the loop says the knowledge base has nothing new."""
    from marsrag.state import FALLBACK_HOOK

    one = RESULTS[:1]
    loop = compose(briefing(GOAL, None, one))["loop"]
    assert "nothing new" in loop and FALLBACK_HOOK in loop


def test_deterministic_and_different_per_task() -> None:
    """The same prompt gives the same answer; a different hook gives another answer."""
    assert compose(PROMPT) == compose(PROMPT)
    other = briefing(GOAL, "How do error budgets bound the risk?", list(reversed(RESULTS)))
    assert compose(other) != compose(PROMPT)


def test_without_evidence_it_still_answers_validly_and_says_so() -> None:
    """No passages: a valid answer that says no sources were found, with a loop per task."""
    prompt = 'The user\'s goal: "Checkout is slow"'
    first, second = compose(prompt, "diagnose"), compose(prompt, "plan")
    assert validate_output(first).status == "valid"
    assert "No sources" in first["grip"] and "No sources" in first["reinforce"]
    assert first["loop"] != second["loop"]


def test_composer_is_a_crewai_llm_answering_json() -> None:
    """As a crewai.BaseLLM it answers JSON that validates, without any network."""
    from marsrag.llm.composer import OfflineComposer

    llm = OfflineComposer(model="offline-composer")
    assert validate_output(llm.call([{"role": "user", "content": PROMPT}])).status == "valid"
    assert llm.supports_function_calling() is False


def test_plain_removes_markdown_and_keeps_list_items_as_sentences() -> None:
    """Headings, bullets, emphasis, links and table rules go; each item becomes its own sentence."""
    from marsrag.llm.composition import plain

    text = "## Steps\n- **Drain** the node with `drainctl`\n- See [the guide](http://x/y)\n|a|b|\n|---|---|\n|1|2|"
    assert plain(text) == "Steps\nDrain the node with drainctl.\nSee the guide.\na, b.\n1, 2."


# A runbook's numbered procedure and an incident note, in a domain of the tests' own (signing keys).
PROCEDURE = {
    "chunk_id": 21,
    "source": "kb/runbooks/keys.md#Runbook: Replace a signing key > Planned replacement",
    "heading": "Runbook: Replace a signing key > Planned replacement",
    "text": "Plan the replacement a week before the old key expires.\n\n"
    "1. Create a new signing key in the vault.\n"
    "2. Publish the new public key next to the old one, so that verifiers trust both.\n"
    "3. Switch the signer to the new key during a quiet hour.\n"
    "4. Retire the old key thirty days later.\n",
    "score": 2.0,
}
INCIDENT = {
    "chunk_id": 22,
    "source": "kb/incidents/key-expiry.md#INC-7: Expired signing key > Summary",
    "heading": "INC-7: Expired signing key > Summary",
    "text": "The signing key expired on a Sunday and logins failed for two hours. "
    "Ensure that expiry alerts reach a person, not a chat channel.",
    "score": 3.0,
}
KEY_RESULTS = [INCIDENT, PROCEDURE]
KEY_GOAL = "How do we replace the signing key?"


def _support(goal: str, results: list[dict[str, object]], hook: str | None = None) -> Support:
    from marsrag.rag.support import assess

    return assess(goal, hook, results, None)


@pytest.mark.parametrize(
    "sentence",
    [
        "Generate a new private key in the secret store.",
        "Ensure that expiry alerts reach a person.",
        "Never retry a payment authorization on a timeout.",
        "If the pool is still full after a minute, recycle the workers one at a time.",
        "Fix: tighten the axle nut to the torque on the frame.",
        "Cut retries first; scaling rarely catches up.",
        "Water deeply twice a week.",
        "Operators must page the owner before a restart.",
    ],
)
def test_an_instruction_is_told_by_its_grammar(sentence: str) -> None:
    """A base-form verb opening the sentence (after adverbs, a condition or a label) or a "must" instructs."""
    from marsrag.llm._passages import is_instruction

    assert is_instruction(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Stages are 1% then 10% then 100%.",
        "Black rotten patches at the bottom of the fruit are blossom end rot.",
        "Slow provider plus retries: a slow provider multiplied the traffic.",
        "Snapshots are written every fifteen minutes.",
        "Latency rises first, then errors.",
        "Record retention is two years.",
        "Both keys stay valid until the old one expires.",
    ],
)
def test_a_statement_is_no_instruction(sentence: str) -> None:
    """A noun or adjective opening a statement, even one that can be a verb, does not instruct."""
    from marsrag.llm._passages import is_instruction

    assert not is_instruction(sentence)


def test_payoff_is_the_first_step_of_the_matching_procedure_and_the_loop_its_next_step() -> None:
    """A "how do we" goal gets the procedure's first step, though another passage ranks first; then step 2."""
    answer = compose(briefing(KEY_GOAL, None, KEY_RESULTS, support=_support(KEY_GOAL, KEY_RESULTS)))
    assert validate_output(answer).status == "valid"
    assert answer["payoff"].startswith("Recommended next step: Create a new signing key in the vault [2].")
    assert answer["loop"].startswith("Next, step 2 of Planned replacement: Publish the new public key")
    assert_grounded(answer, KEY_RESULTS)
    # Chained: the next task, handed that loop, recommends step 2 and points at step 3.
    hook = answer["loop"]
    second = compose(briefing(KEY_GOAL, hook, KEY_RESULTS, support=_support(KEY_GOAL, KEY_RESULTS, hook)))
    assert "Publish the new public key" in second["payoff"]
    assert second["loop"].startswith("Next, step 3 of Planned replacement: Switch the signer")


def test_the_loop_names_a_passage_with_its_document_and_the_goals_words() -> None:
    """A loop about another passage never names a bare heading ("Summary"): its document comes with it."""
    results = [PROCEDURE, INCIDENT]
    goal = "Logins failed after the signing key expired"
    loop = compose(briefing(goal, None, results, support=_support(goal, results)))["loop"]
    assert "Summary" not in loop or "INC-7: Expired signing key" in loop
    assert not loop.startswith("Should we look at")


def test_not_covered_says_so_names_what_it_looked_for_and_recommends_nothing() -> None:
    """Support none: a valid answer saying the knowledge base lacks it; no passage cited; the loop asks for it."""
    goal = "What is the capital of Australia?"
    support = _support(goal, RESULTS)
    assert support.level == "none"
    answer = compose(briefing(goal, None, RESULTS, support=support))
    assert validate_output(answer).status == "valid"
    assert "does not cover" in answer["grip"]
    assert "capital" in answer["grip"] and "australia" in answer["grip"]
    assert not MARKER.search(answer["payoff"]) and answer["payoff"].startswith("No recommendation")
    assert resolve(answer, RESULTS)[0] == []  # nothing cited anywhere
    assert "ingest" in answer["loop"] and "capital" in answer["loop"]


def test_weak_support_hedges_and_quotes_what_the_closest_source_says() -> None:
    """Support weak: the answer says the sources only touch the goal and offers their instruction as a lead."""
    goal = "Checkout latency after cache restarts on the new ARM fleet"
    support = _support(goal, RESULTS).model_copy(update={"level": "weak"})
    answer = compose(briefing(goal, None, RESULTS, support=support))
    assert validate_output(answer).status == "valid"
    assert answer["grip"].startswith("The sources only touch on this") and MARKER.search(answer["grip"])
    assert "arm" in answer["grip"].casefold()  # names what they lack
    assert answer["payoff"].startswith("Not a settled answer") and MARKER.search(answer["payoff"])
    assert_grounded(answer, RESULTS)


def test_strong_support_recommends_plainly() -> None:
    """Support strong: the recommendation is stated as one, with no hedge."""
    support = _support(GOAL, RESULTS, HOOK).model_copy(update={"level": "strong"})
    answer = compose(briefing(GOAL, HOOK, RESULTS, support=support))
    assert answer["payoff"].startswith("Recommended next step: Pre-warm each cache node")


def test_the_loop_never_follows_a_passage_sharing_only_a_word_the_answer_left_open() -> None:
    """The goal's "empty" is in a cache passage too ("rejoined the ring empty"): that passage is about something
    else, so the loop stays on what the answer covered (search, config, push) instead of drifting to it."""
    results = [
        {
            "source": "kb/incidents/search-config.md#INC-27: Search errors after a config push > Summary",
            "text": "A malformed ranking config push made every search request fail for 40 minutes. "
            "Roll back the config push from the config service to recover.",
        },
        {
            "source": "kb/incidents/cold-cache.md#INC-41: Cold cache restarts > Root cause",
            "text": "Restarted cache nodes rejoined the hash ring empty, so misses went to the database.",
        },
        {
            "source": "kb/architecture/search.md#Search service > Failure modes",
            "text": "A bad config push is the most common cause of search outages; the config service keeps "
            "the last ten versions.",
        },
    ]
    goal = "Search returns empty results after a config push. How do we recover?"
    loop = compose(briefing(goal, None, results), "diagnose")["loop"]
    assert "INC-41" not in loop and "cache" not in loop.casefold(), loop


def test_a_procedures_next_step_without_a_full_stop_is_a_sentence_in_the_loop() -> None:
    """A list's step often has no full stop; the loop ends as a sentence, so it never reads as one that was cut."""
    results = [
        {**item, "text": item["text"].replace("verifiers trust both.", "verifiers trust both")} for item in KEY_RESULTS
    ]
    assert results != KEY_RESULTS
    answer = compose(briefing(KEY_GOAL, None, results, support=_support(KEY_GOAL, results)))
    assert answer["loop"].startswith("Next, step 2 of Planned replacement: Publish the new public key")
    assert answer["loop"].endswith("verifiers trust both.")
    # Written as labelled sections, as a model following the composer would, it is no cut answer.
    assert validate_output("\n".join(f"{name.upper()}: {value}" for name, value in answer.items())).ok
