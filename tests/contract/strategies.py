"""Hypothesis strategies for Loop Contract answers shared by the property tests of the answer forms."""

from __future__ import annotations

import re

from hypothesis import strategies as st

from marsrag.contract import FIELDS
from marsrag.contract.rules import fold

FIELD_WORD = re.compile("|".join(FIELDS), re.IGNORECASE)

words = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd")), min_size=1, max_size=12)
sentences = st.lists(words, min_size=2, max_size=12).map(lambda ws: " ".join(ws) + ".")
#: Field content: one to three sentences of letters and digits that name no field.
contents = (
    st.lists(sentences, min_size=1, max_size=3)
    .map(" ".join)
    .filter(lambda text: not FIELD_WORD.search(text) and len(text) <= 800)
)
#: A valid answer: the five fields with content, each its own (a field repeating another fails, since 1.4.0).
answers = st.fixed_dictionaries(dict.fromkeys(FIELDS, contents)).filter(
    lambda answer: len({fold(value) for value in answer.values()}) == len(FIELDS)
)
