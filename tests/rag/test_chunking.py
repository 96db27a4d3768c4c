"""Chunking: sections by heading path, long ones cut on paragraph boundaries, short ones kept apart, deterministic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.rag.chunking import MAX_CHARS, Chunk, chunk_blocks
from marsrag.rag.readers import Block, parse


def chunks_of(markdown: str) -> list[Chunk]:
    """The chunks of a Markdown text, cited as doc.md."""
    return chunk_blocks("kb/doc.md", parse(markdown, ".md"))


def paragraph(word: str, length: int) -> str:
    """A sentence-free paragraph of about ``length`` characters."""
    return " ".join([word] * (length // (len(word) + 1)))


def test_each_section_gets_its_heading_path() -> None:
    """Headings nest by level; a shallower heading closes the deeper ones; empty sections give no chunk."""
    body = paragraph("alpha", 250)
    markdown = f"# Runbook: pre-warming caches\n\n## Steps\n\n{body}\n\n### Drain\n\n{body}\n\n## Verify\n\n{body}"
    assert [(c.position, c.heading) for c in chunks_of(markdown)] == [
        (0, "Runbook: pre-warming caches > Steps"),
        (1, "Runbook: pre-warming caches > Steps > Drain"),
        (2, "Runbook: pre-warming caches > Verify"),
    ]


def test_source_cites_path_and_heading_path() -> None:
    """A chunk cites ``path#heading path``; text before the first heading cites the path alone."""
    first, second = chunks_of(f"{paragraph('intro', 300)}\n\n# Title\n\n{paragraph('body', 300)}")
    assert (first.heading, first.source) == ("", "kb/doc.md")
    assert second.source == "kb/doc.md#Title"


def test_a_long_section_is_cut_on_paragraph_boundaries() -> None:
    """Six 500-character paragraphs make chunks of at most 1,200 characters, each a run of whole paragraphs."""
    paragraphs = [paragraph(f"word{i}", 500) for i in range(6)]
    chunks = chunks_of("# Long\n\n" + "\n\n".join(paragraphs))
    assert len(chunks) == 3
    assert all(len(c.text) <= MAX_CHARS and c.heading == "Long" for c in chunks)
    assert [p for c in chunks for p in c.text.split("\n\n")] == paragraphs


def test_cuts_are_balanced() -> None:
    """A section a little over the limit splits in two similar halves, not a full chunk and a scrap."""
    paragraphs = [paragraph(f"w{i}", 100) for i in range(13)]
    sizes = [len(c.text) for c in chunks_of("# S\n\n" + "\n\n".join(paragraphs))]
    assert len(sizes) == 2 and min(sizes) > 500


def test_a_long_paragraph_is_cut_at_sentences_then_words_then_anywhere() -> None:
    """Without paragraph breaks the cut falls between sentences; without spaces, at the limit."""
    sentences = [f"Sentence {i} says something about cache nodes and their warmth." for i in range(60)]
    chunks = chunks_of("# S\n\n" + " ".join(sentences))
    assert all(len(c.text) <= MAX_CHARS and c.text.endswith(".") for c in chunks)
    assert " ".join(c.text for c in chunks) == " ".join(sentences)
    blob = "x" * 3000
    assert [len(c.text) for c in chunks_of(f"# B\n\n{blob}")] == [1200, 1200, 600]


def test_a_short_subsection_is_cited_by_its_own_heading() -> None:
    """A two-line subsection is a chunk of its own: its citation names it, not its parent section."""
    markdown = (
        "# Tomato growing notes\n\nWater deeply twice a week.\n\n"
        "## Blossom end rot\n\nCalcium uptake fails when watering is uneven.\n\n## Staking\n\nStake early."
    )
    assert [(c.source, c.text) for c in chunks_of(markdown)] == [
        ("kb/doc.md#Tomato growing notes", "Water deeply twice a week."),
        ("kb/doc.md#Tomato growing notes > Blossom end rot", "Calcium uptake fails when watering is uneven."),
        ("kb/doc.md#Tomato growing notes > Staking", "Stake early."),
    ]


def test_a_chunk_never_spans_two_heading_paths() -> None:
    """Tiny siblings, a short intro and tiny top-level sections each stay their own chunk."""
    markdown = "Preface.\n\n# Doc\n\nIntro.\n\n## A\n\nshort a\n\n## B\n\nshort b\n\n# Two\n\ntiny too"
    assert [(c.heading, c.text) for c in chunks_of(markdown)] == [
        ("", "Preface."),
        ("Doc", "Intro."),
        ("Doc > A", "short a"),
        ("Doc > B", "short b"),
        ("Two", "tiny too"),
    ]


def test_max_chars_must_leave_room() -> None:
    """A limit below two characters is refused."""
    with pytest.raises(ValueError, match="max_chars"):
        chunk_blocks("x", [Block("text")], max_chars=1)


blocks = st.lists(
    st.one_of(
        st.builds(Block, st.text(min_size=1, max_size=30).filter(str.strip), st.integers(1, 6)),
        st.builds(Block, st.text(min_size=1, max_size=2500).filter(str.strip)),
    ),
    max_size=25,
)


@given(blocks, st.integers(40, 1500))
def test_chunks_are_bounded_numbered_deterministic_and_lose_no_word(items: list[Block], limit: int) -> None:
    """Any blocks: chunks fit the limit, count from 0, keep all the text, and the same input gives the same."""
    chunks = chunk_blocks("d.md", items, max_chars=limit)
    assert all(len(c.text) <= limit and c.text.strip() for c in chunks)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert chunk_blocks("d.md", items, max_chars=limit) == chunks
    # Every non-space character of the paragraphs is kept, in order.
    kept = iter("".join("".join(c.text.split()) for c in chunks))
    assert all(char in kept for b in items if not b.level for char in "".join(b.text.split()))
