"""The inverse document frequency PostgreSQL's keyword search weighs each word by (:mod:`marsrag.store._ranking`)."""

from __future__ import annotations

import math

import pytest

from marsrag.store._ranking import idf, term_of, weighted_search, weights


def test_a_rarer_term_weighs_more_and_every_weight_is_positive() -> None:
    size = 1000
    found = [0, 1, 10, 100, 500, 1000]
    values = [idf(count, size) for count in found]
    assert values == sorted(values, reverse=True)
    assert all(value > 0 for value in values)
    assert idf(0, size) == pytest.approx(math.log(1 + (size + 0.5) / 0.5))


def test_counts_out_of_range_are_clamped_to_the_knowledge_base() -> None:
    assert idf(-3, 10) == idf(0, 10)
    assert idf(50, 10) == idf(10, 10)
    assert idf(0, 0) > 0


def test_each_word_is_weighed_by_its_terms_count_and_one_without_a_term_by_the_mean() -> None:
    counts = {term_of("resolvers"): 1, term_of("change"): 40}
    rare, common, short = weights(["resolvers", "change", "db"], 100, counts)  # type: ignore[arg-type]
    assert rare == idf(1, 100) and common == idf(40, 100)
    assert term_of("db") is None and short == pytest.approx((rare + common) / 2)
    assert weights(["db"], 100, {}) == [1.0]


def test_the_statement_binds_every_word_and_weight_and_is_kept_per_shape() -> None:
    statement = weighted_search(3, scoped=True)
    expected = {"query", "rest", "common", "limit", "collections", "t0", "t1", "t2", "w0", "w1", "w2"}
    assert expected <= set(statement.compile().params)
    assert weighted_search(3, scoped=True) is statement
    assert weighted_search(3, scoped=False) is not statement
