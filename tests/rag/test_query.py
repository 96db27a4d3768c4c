"""Query building: free text becomes quoted, OR-ed words; operators, punctuation and stopwords are dropped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from marsrag.rag._query import MAX_TERMS, terms
from marsrag.store._knowledge_sql import fts5_query, tsquery


def test_words_are_lowercased_deduplicated_and_stopwords_dropped() -> None:
    """Case folds, repeats go, stopwords go ('up' too), punctuation and underscores split words, digits stay."""
    assert terms("How do the Cache nodes and CACHE shards warm_up in 5 min?") == [
        "cache", "nodes", "shards", "warm", "5", "min",
    ]  # fmt: skip


def test_operators_and_syntax_are_just_words_or_nothing() -> None:
    """FTS5 and tsquery syntax has no effect: quotes, stars, parentheses, NEAR, AND, OR, NOT; lone letters go."""
    assert terms('"cache" AND NOT (warm*) OR NEAR(a b, 3) ^col: -x | y & !z') == ["cache", "warm", "near", "3", "col"]


def test_unicode_words_survive_and_queries_are_bounded() -> None:
    """Letters of any script are words; at most MAX_TERMS words, none absurdly long."""
    assert terms("Café 日本語 naïve") == ["café", "日本語", "naïve"]
    assert len(terms(" ".join(f"word{i}" for i in range(1000)))) == MAX_TERMS
    assert terms("x" * 41 + " ok") == ["ok"]


def test_empty_and_stopword_only_queries_have_no_terms() -> None:
    """Nothing to search for gives an empty list."""
    assert terms("") == terms("   ") == terms("the and of it") == terms("?!*\"'") == []


def test_each_word_is_quoted_and_ored() -> None:
    """FTS5 gets double-quoted strings, PostgreSQL single-quoted lexemes, OR-ed."""
    assert fts5_query(["cache", "warm"]) == '"cache" OR "warm"'
    assert tsquery(["cache", "warm"]) == "'cache' | 'warm'"


@given(st.text())
def test_any_text_gives_plain_words(text: str) -> None:
    """Whatever the input, terms are non-empty runs of letters and digits, never quotes or operators."""
    for word in terms(text):
        assert word and all(char.isalnum() for char in word)
