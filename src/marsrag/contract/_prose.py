"""Whether a stretch of text is prose: a line a person wrote, not a record, a marker or an expression.

Prose has words of letters between spaces (a sentence's punctuation and quotes around them); a log's record
(``END RequestId: 7c1e...``), a section marker (``section_end:1719:answer``) or an expression (``string & !=""``)
has few or none. Three words make prose: a label's value is a sentence, and a sentence has that many.
"""

from __future__ import annotations

import re
from typing import Final

_WORD: Final = re.compile(r"(?:^|(?<=\s))[(\"'“«¿¡]?[^\W\d_]+[.,;:!?)\"'”»]*(?=\s|$)")
_PROSE_WORDS: Final = 3


def is_prose(text: str) -> bool:
    """Whether ``text`` holds three words of prose or more."""
    return len(_WORD.findall(text)) >= _PROSE_WORDS
