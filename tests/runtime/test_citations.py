"""Citation markers resolved against a task's retrieval results (a pure function)."""

from __future__ import annotations

from marsrag.chain.citations import refs, resolve

RESULTS = [{"chunk_id": 7, "source": "a.md#A"}, {"chunk_id": 8, "source": "b.md#B"}, {"chunk_id": 9, "source": "c.md"}]


def test_markers_resolve_to_their_results_in_number_order_with_the_fields_citing_them() -> None:
    """``[2]``, ``[1, 3]`` and ``[1][2]`` all count; each citation carries its result's source and chunk id."""
    fields = {"grip": "Cold caches [2].", "payoff": "Pre-warm [1, 3].", "reinforce": "Both [1][2].", "loop": "Next?"}
    citations, warnings = resolve(fields, RESULTS)
    assert warnings == []
    assert [(c.ref, c.source, c.chunk_id, c.fields) for c in citations] == [
        ("1", "a.md#A", 7, ["payoff", "reinforce"]),
        ("2", "b.md#B", 8, ["grip", "reinforce"]),
        ("3", "c.md", 9, ["payoff"]),
    ]


def test_a_marker_naming_no_passage_is_a_warning_never_a_citation() -> None:
    """Out of range, or a task given no passages: a warning naming the marker, the field and the count."""
    citations, warnings = resolve({"reinforce": "See [4] and [0]."}, RESULTS)
    assert citations == []
    assert warnings == [
        "marker [4] in reinforce names no passage (it was given 3)",
        "marker [0] in reinforce names no passage (it was given 3)",
    ]
    assert resolve({"grip": "As [1] says."}, [])[1] == ["marker [1] in grip names no passage (it was given none)"]


def test_the_hook_links_and_words_are_not_markers() -> None:
    """The hook's markers number the previous task's sources; a Markdown link, a word or a year is no marker."""
    fields = {"hook": "From [1]?", "grip": "See [docs](http://x) or [1](http://y), item[2], [2024-01] and [v2]."}
    assert resolve(fields, RESULTS) == ([], [])
    assert refs("[2] then [1, 2] and [3][2]") == ["2", "1", "3"]
