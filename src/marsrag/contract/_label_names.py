"""The section names a label may use: the five fields, and their translations when a model answers in the
user's language and translates the template's labels too (``GANCHO:``, ``Accroche :``, ``钩子：``).

The names fill one slot of the label grammar (:mod:`._sections`): a translated label must still look like a
label (at a line start with a separator, decorated, or a table's first column), so the same words in prose
are prose.
"""

from __future__ import annotations

import re
from typing import Final

from marsrag.contract._trie import trie_pattern
from marsrag.contract.fields import FIELDS

#: Translated labels (casefolded) and the field each names: Spanish, Portuguese, French, Italian, German,
#: Dutch, Russian, Chinese and Japanese renderings of hook, grip, payoff, reinforce and loop.
TRANSLATED: Final[dict[str, str]] = {
    **dict.fromkeys(
        ("gancho", "accroche", "amorce", "gancio", "aufhänger", "haken", "крючок", "钩子", "フック"), "hook"
    ),
    **dict.fromkeys(("agarre", "pegada", "prise", "presa", "griff", "захват", "抓手", "グリップ"), "grip"),
    **dict.fromkeys(("recompensa", "récompense", "ricompensa", "belohnung", "beloning"), "payoff"),
    **dict.fromkeys(("выгода", "награда", "回报", "ペイオフ"), "payoff"),
    **dict.fromkeys(("refuerzo", "reforço", "renforcement", "rinforzo", "verstärkung", "versterking"), "reinforce"),
    **dict.fromkeys(("подкрепление", "强化", "強化"), "reinforce"),
    **dict.fromkeys(("bucle", "ciclo", "boucle", "schleife", "lus", "цикл", "循环", "ループ"), "loop"),
}

#: Every label name (casefolded) and the field it names.
LABEL_FIELDS: Final[dict[str, str]] = {**{name: name for name in FIELDS}, **TRANSLATED}


#: A label's gloss: a short parenthetical after its name (``Hook (the tension):``, ``Hook（钩子）：``).
GLOSS: Final = r"(?:[ \t]*+(?:\([^()\n]{1,40}\)|（[^（）\n]{1,40}）))?"

#: A text worth reading as labelled text (a string inside a JSON document): a label name used as a label (with a
#: gloss in parentheses or not, then a colon or a line end), a field name an element closes (a heading's
#: ``<h2>Hook</h2>``), or a field's tag. A hint, not a reading: the label grammar (:mod:`._sections`) decides.
LABEL_HINT: Final = re.compile(
    rf"(?:{trie_pattern(LABEL_FIELDS)}){GLOSS}(?:\W{{0,4}}[:：\n]|\s*</\w)"
    r"|<(?:hook|grip|payoff|reinforce|loop)>",
    re.IGNORECASE,
)


def capitalized_names() -> list[str]:
    """Every label name in Title and UPPER case (a name in a script without case, as it is)."""
    variants = {variant for name in LABEL_FIELDS for variant in (name.title(), name.upper())}
    return sorted(variants)
