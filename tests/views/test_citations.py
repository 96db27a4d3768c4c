"""Citation markers, the sources panel, attempts and outcomes in the view model (issue 18: answer-first pages)."""

from __future__ import annotations

import pytest

from marsrag.state import Retrieval, Validation
from marsrag.store.conformance.records import run
from marsrag.views.outcome import outcome_text
from marsrag.views.viewmodel import (
    SourceView,
    TextPart,
    cited_parts,
    run_view,
    section_cards,
    source_views,
    summary_lines,
    task_view,
)
from tests.contract.samples import CONTENT
from tests.views.cited import CITED, RESULTS, WARNING, cited_task

ANCHORS = {"1": "src-diagnose-1", "2": "src-diagnose-2"}


def test_a_known_marker_becomes_a_linked_part_and_the_text_around_it_stays_text() -> None:
    """``[1]`` splits the text; its part carries the ref and the anchor of source 1."""
    parts = cited_parts("Pre-warm each node [1]. Then rejoin.", ANCHORS)
    assert parts == (
        TextPart("Pre-warm each node "),
        TextPart("[1]", "1", "src-diagnose-1"),
        TextPart(". Then rejoin."),
    )


def test_adjacent_markers_are_two_links_and_an_unknown_one_stays_plain_text() -> None:
    """``[1][2]`` is two links; ``[9]`` names no citation, so it is text joined with its neighbours."""
    parts = cited_parts("Evidence [1][2] and [9] here.", ANCHORS)
    assert [(part.text, part.ref) for part in parts] == [
        ("Evidence ", None),
        ("[1]", "1"),
        ("[2]", "2"),
        (" and [9] here.", None),
    ]


@pytest.mark.parametrize("text", ["", "No markers at all.", "Only unknown [3] and [x] and [] markers."])
def test_a_text_without_known_markers_is_one_plain_part_or_none(text: str) -> None:
    """Without citations (every run stored before them) the text shows exactly as it is."""
    parts = cited_parts(text, ANCHORS)
    assert "".join(part.text for part in parts) == text
    assert all(part.anchor is None for part in parts) and len(parts) == (1 if text else 0)


def test_markup_in_the_text_is_kept_as_text_for_the_template_to_escape() -> None:
    """The parts hold the text as it is: links come only from markers, never from the text itself."""
    parts = cited_parts('<a href="javascript:x">[1]</a> [1]', ANCHORS)
    assert [part.text for part in parts] == ['<a href="javascript:x">', "[1]", "</a> ", "[1]"]


def test_the_cards_of_a_cited_task_link_only_markers_that_are_citations() -> None:
    """Each card's parts join to its text; grip links [2], payoff [1], reinforce [1][2] but not [9]."""
    cards = {card.field: card for card in section_cards(cited_task())}
    assert all("".join(p.text for p in card.parts) == CITED[card.field] for card in cards.values())
    linked = {name: [p.ref for p in card.parts if p.anchor] for name, card in cards.items()}
    assert linked == {"hook": [], "grip": ["2"], "payoff": ["1"], "reinforce": ["1", "2"], "loop": []}


def test_a_task_without_citations_has_plain_cards_and_numbered_sources() -> None:
    """A run stored before citations: markers stay text; its passages are still listed by number."""
    state = cited_task(citations=[], citation_warnings=[])
    view = task_view(state)
    assert all(part.anchor is None for card in view.cards for part in card.parts)
    assert [(s.ref, s.cited) for s in view.sources] == [("1", False), ("2", False)]
    assert view.citation_warnings == ()


def test_the_sources_panel_numbers_each_passage_with_its_path_heading_and_text() -> None:
    """Result i is [i+1]: title (document path), heading, passage, score, whether cited and its anchor."""
    first, second = source_views(cited_task())
    assert first == SourceView(
        source=RESULTS[0]["source"],
        text=RESULTS[0]["text"],
        ref="1",
        title="runbooks/cache-restarts.md",
        heading="Cache restarts > Pre-warming",
        score=0.91,
        cited=True,
        anchor="src-diagnose-1",
    )
    assert (second.ref, second.title, second.heading, second.anchor) == (
        "2",
        "incidents/2024-05-14-latency.md",
        "Root cause",
        "src-diagnose-2",
    )


def test_a_result_without_a_heading_takes_it_from_its_source_and_a_citation_without_a_result_is_listed() -> None:
    """Older results lack ``heading``: it is the source after ``#``. A citation past the results still has a target."""
    state = cited_task(retrieval=Retrieval(query="q", results=[{"source": "notes.md#Soil > pH", "text": "t"}]))
    sources = source_views(state)
    assert [(s.ref, s.title, s.heading, s.cited) for s in sources] == [
        ("1", "notes.md", "Soil > pH", True),
        ("2", RESULTS[1]["source"].split("#")[0], "Root cause", True),
    ]
    assert sources[1].text == "" and sources[1].score is None


def test_citation_warnings_are_on_the_task_view() -> None:
    """A marker naming no passage is a note on the task, never a validation error."""
    view = task_view(cited_task())
    assert view.citation_warnings == (WARNING,) and view.badge.status == "valid" and view.problems == ()


def test_attempts_carry_their_status_in_words_errors_call_line_and_raw_text() -> None:
    """Each attempt: its badge (the word and symbol the task badge uses), errors, model line, raw text as stored."""
    first, second = task_view(cited_task()).attempts
    assert (first.number, first.kind, first.status) == (1, "answer", "failed")
    assert first.badge is not None and (first.badge.label, first.badge.symbol) == ("Failed", "✗")
    assert first.problems == ("Grip: grip is missing",) and first.call == "offline-composer"
    assert first.raw == '{"hook": "..."}'
    assert second.kind == "repair (in the run)" and second.badge is not None and second.badge.label == "Valid"
    assert second.problems == () and second.call == ""


def test_summary_lines_link_each_payoffs_markers_to_the_sources_of_its_task() -> None:
    """A payoff line names its task; the evidence line is that task's reinforce; Next is plain text."""
    state = cited_task()
    summary = f"- {CITED['payoff']} (diagnose)\nEvidence: {CITED['reinforce']}\nNext: {CONTENT['loop']}"
    payoff, evidence, following = summary_lines(summary, [state])
    assert (payoff.kind, payoff.task_id) == ("payoff", "diagnose")
    assert "".join(p.text for p in payoff.parts) == f"{CITED['payoff']} (diagnose)"
    assert [p.anchor for p in payoff.parts if p.anchor] == ["src-diagnose-1"]
    assert (evidence.kind, evidence.task_id) == ("evidence", "diagnose")
    assert [p.ref for p in evidence.parts if p.anchor] == ["1", "2"]
    assert following.kind == "next" and following.parts == (TextPart(f"Next: {CONTENT['loop']}"),)


def test_summary_lines_naming_no_known_task_keep_their_markers_as_text() -> None:
    """A payoff from a task not in the run, or evidence no task's reinforce says, links nothing."""
    summary = "- Do it [1] (elsewhere)\nEvidence: something [1]\nNo task produced a payoff."
    lines = summary_lines(summary, [cited_task()])
    assert [line.kind for line in lines] == ["payoff", "evidence", "text"]
    assert all(part.anchor is None for line in lines for part in line.parts)
    assert lines[0].parts == (TextPart("Do it [1] (elsewhere)"),)


def test_the_run_view_carries_summary_lines_and_its_outcome_in_words() -> None:
    """The run page's answer-first head: outcome text and summary lines come with the run view."""
    record = run("cited", status="completed", summary=f"- {CITED['payoff']} (diagnose)")
    plan = cited_task(task_id="plan", position=1, validation=Validation(status="partial"))
    view = run_view(record, [cited_task(), plan], [])
    assert view.outcome_text == "1 valid, 1 partial"
    assert [line.task_id for line in view.summary_lines] == ["diagnose"]


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        ({"valid": 3, "partial": 0, "failed": 0, "skipped": 0}, "3 valid"),
        ({"valid": 2, "partial": 1, "failed": 0, "skipped": 0}, "2 valid, 1 partial"),
        ({"valid": 0, "partial": 1, "failed": 2, "skipped": 1}, "1 partial, 2 failed, 1 without contract"),
        ({"valid": 0, "partial": 0, "failed": 0, "skipped": 0}, "no tasks"),
        ({}, "no tasks"),
    ],
)
def test_the_outcome_column_names_every_outcome_with_a_task_in_order(outcome: dict[str, int], text: str) -> None:
    """The runs list's Tasks column: each non-zero outcome, valid first; no tasks yet says so."""
    assert outcome_text(outcome) == text


def test_each_source_says_which_retrievers_found_it_and_a_skipped_vector_search_is_a_note() -> None:
    """``retrievers`` (name -> rank) becomes ``keyword #2 · vector #1``; junk in it is left out, never shown."""
    results = [
        {**RESULTS[0], "retrievers": {"keyword": 2, "vector": 1}},
        {**RESULTS[1], "retrievers": {"keyword": True, "vector": "1", 3: 4}},
    ]
    skipped = "vector search skipped: cannot reach the embeddings endpoint http://127.0.0.1:9/v1/embeddings"
    retrieval = Retrieval(query="q", results=results, retrievers=["keyword"], skipped=skipped)
    view = task_view(cited_task(retrieval=retrieval))
    assert [source.found_by for source in view.sources] == ["keyword #2 · vector #1", ""]
    assert view.retrieval_skipped == skipped
    assert task_view(cited_task()).retrieval_skipped is None
    assert [source.found_by for source in task_view(cited_task()).sources] == ["", ""]  # stored before hybrid
