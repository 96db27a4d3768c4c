"""Readers: Markdown, plain text and HTML become headings and paragraphs; binary and non-UTF-8 bytes are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.rag.readers import Block, NotTextError, decode, is_supported, parse, read_blocks

H = Block  # Block(text, level): level 0 is a paragraph


def test_markdown_headings_and_paragraphs() -> None:
    """ATX headings keep their level (closing hashes dropped); paragraphs split on blank lines, lines kept."""
    text = "# Runbook: pre-warming caches ##\n\nIntro line one\nline two\n\n## Steps\n\n- drain\n- restart\n"
    assert parse(text, ".md") == [
        H("Runbook: pre-warming caches", 1),
        H("Intro line one\nline two"),
        H("Steps", 2),
        H("- drain\n- restart"),
    ]


def test_markdown_setext_headings_front_matter_and_breaks() -> None:
    """Setext underlines make headings, front matter is dropped, thematic breaks only end paragraphs."""
    text = "---\ntitle: x\n---\nTitle\n=====\n\nSub\n---\n\nBody\n\n***\n\nMore"
    assert parse(text, ".markdown") == [H("Title", 1), H("Sub", 2), H("Body"), H("More")]


def test_markdown_list_item_before_dashes_is_not_a_heading() -> None:
    """A list item followed by dashes stays a paragraph (the dashes are a break)."""
    assert parse("- item\n---\n", ".md") == [H("- item")]


def test_markdown_fenced_code_is_one_paragraph_and_hides_its_hashes() -> None:
    """A '#' line inside a fence is code, not a heading; the fence, blank lines included, is one block."""
    text = "## Script\n\n```bash\n# not a heading\n\necho hi\n```\nAfter"
    assert parse(text, ".md") == [H("Script", 2), H("```bash\n# not a heading\n\necho hi\n```"), H("After")]


def test_markdown_hashtags_and_empty_headings_are_not_headings() -> None:
    """'#tag' has no space so it is text; a bare '#' heading has no title and is dropped."""
    assert parse("#tag line\n\n#\n\n# C#", ".md") == [H("#tag line"), H("C#", 1)]


def test_plain_text_has_paragraphs_and_no_headings() -> None:
    """A '#' line in a .txt file is text."""
    assert parse("# not a heading\nsame para\n\n\n  \nnext\n", ".txt") == [H("# not a heading\nsame para"), H("next")]


def test_html_headings_become_headings_and_scripts_vanish() -> None:
    """h1-h6 keep their level; script, style and title content is dropped; entities are decoded."""
    html = """<!doctype html><html><head><title>Ignored</title><style>p {color: red}</style></head>
    <body><h1>Cache  <em>tier</em></h1><p>Nodes &amp; shards
       are   warm.</p><script>var x = "<h2>no</h2>";</script>
    <h3>Steps<br>today</h3><ul><li>drain</li><li>restart <b>one</b></li></ul>
    <table><tr><td>a</td><td>b</td></tr></table><p>line<br/>break</p></body></html>"""
    assert parse(html, ".html") == [
        H("Cache tier", 1),
        H("Nodes & shards are warm."),
        H("Steps today", 3),
        H("- drain"),
        H("- restart one"),
        H("a b"),
        H("line\nbreak"),
    ]


def test_html_pre_keeps_its_whitespace() -> None:
    """Text in <pre> keeps its line breaks and indentation."""
    assert parse("<h2>Code</h2><pre>\nif x:\n    y()\n</pre>", ".htm") == [H("Code", 2), H("if x:\n    y()")]


def test_html_unclosed_tags_do_not_lose_text() -> None:
    """Sloppy HTML (unclosed paragraphs, stray end tags) still yields its text."""
    assert parse("<p>one<p>two</div></span><h4>Four", ".html") == [H("one"), H("two"), H("Four", 4)]


def test_decode_refuses_binary_and_non_utf8_saying_where() -> None:
    """A NUL byte means binary; invalid UTF-8 is refused with the offending byte and its offset."""
    with pytest.raises(NotTextError, match=r"binary file \(NUL byte at offset 3\)"):
        decode(b"abc\x00def")
    with pytest.raises(NotTextError, match=r"not UTF-8 text \(byte 0xe9 at offset 3\)"):
        decode("café".encode("latin-1"))


def test_decode_drops_a_bom_and_normalizes_line_ends() -> None:
    """A UTF-8 BOM is not text; CRLF and CR become LF."""
    assert decode(b"\xef\xbb\xbfa\r\nb\rc") == "a\nb\nc"


def test_supported_suffixes_ignore_case_and_others_are_refused(tmp_path: Path) -> None:
    """.md/.markdown/.txt/.text/.html/.htm in any case are read; parse refuses other suffixes."""
    assert all(is_supported(f"x{suffix}") for suffix in (".md", ".MD", ".markdown", ".txt", ".text", ".html", ".HTM"))
    assert not any(is_supported(name) for name in ("x.pdf", "x.png", "README", "x.md.bak"))
    with pytest.raises(ValueError, match="unsupported file type '.pdf'"):
        parse("x", ".pdf")
    path = tmp_path / "doc.MD"
    path.write_text("# T\n\nbody")
    assert read_blocks(path) == [H("T", 1), H("body")]


@given(st.text())
def test_every_reader_accepts_any_text(text: str) -> None:
    """No text makes a reader raise; every block has text, and headings a level from 1 to 6."""
    for suffix in (".md", ".txt", ".html"):
        for block in parse(text, suffix):
            assert block.text.strip() and 0 <= block.level <= 6


@given(st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=1, max_size=40))
def test_plain_text_keeps_every_word(words: list[str]) -> None:
    """Plain text loses no word."""
    text = "\n\n".join(" ".join(words[i : i + 3]) for i in range(0, len(words), 3))
    assert " ".join(block.text for block in parse(text, ".txt")).split() == words
