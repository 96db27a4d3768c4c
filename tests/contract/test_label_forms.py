"""Labelled answers as real models write them: labels collapsed into one paragraph with their numbers, labels
in another language, emoji decoration, values in quotes. All by the one label grammar."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, validate_output
from tests.contract.samples import CONTENT, labelled
from tests.contract.strategies import answers

COLLAPSED = {
    "numbers and capitals": labelled("{n}. {L}: {v}", " "),
    "numbers and bold": labelled("**{n}. {T}:** {v}", " "),
    "numbers with parenthesis": labelled("{n}) {L}: {v}", " "),
    "numbers then bold label": labelled("{n}. **{T}**: {v}", " "),
}


@pytest.mark.parametrize("raw", COLLAPSED.values(), ids=COLLAPSED.keys())
def test_an_item_number_belongs_to_the_next_label(raw: str) -> None:
    """``... stalls. 2. GRIP: ...`` ends the hook at "stalls."; the "2." never trails the previous field."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


def test_numbers_inside_prose_stay_in_their_field() -> None:
    """A number that is not followed by a label is content ("... in 2. Regions ..." stays)."""
    grip = "Restarts happened at 2. Then caches were cold for 40 minutes."
    raw = labelled("{n}. {L}: {v}", " ", {**CONTENT, "grip": grip})
    assert validate_output(raw).loop_output["grip"] == grip


TRANSLATED = {
    "spanish": ("GANCHO:", "AGARRE:", "RECOMPENSA:", "REFUERZO:", "BUCLE:"),
    "french bold": ("**Accroche :**", "**Prise :**", "**Récompense :**", "**Renforcement :**", "**Boucle :**"),
    "german headings": ("## Aufhänger\n", "## Griff\n", "## Belohnung\n", "## Verstärkung\n", "## Schleife\n"),
    "portuguese": ("Gancho:", "Pegada:", "Recompensa:", "Reforço:", "Ciclo:"),
    "italian numbered": ("1. GANCIO:", "2. PRESA:", "3. RICOMPENSA:", "4. RINFORZO:", "5. CICLO:"),
    "chinese": ("钩子：", "抓手：", "回报：", "强化：", "循环："),
    "japanese": ("フック：", "グリップ：", "ペイオフ：", "強化：", "ループ："),
    "russian": ("Крючок:", "Захват:", "Выгода:", "Подкрепление:", "Цикл:"),
    "english with translation": ("Hook (Gancho):", "Grip (Agarre):", "Payoff (Recompensa):", "Reinforce:", "Loop:"),
}


@pytest.mark.parametrize("labels", TRANSLATED.values(), ids=TRANSLATED.keys())
def test_labels_in_another_language(labels: tuple[str, ...]) -> None:
    """Translated labels are labels: each names its field by the same grammar as the English ones."""
    raw = "\n".join(
        label + CONTENT[name] if label.endswith("\n") else f"{label} {CONTENT[name]}"
        for label, name in zip(labels, FIELDS, strict=True)
    )
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == CONTENT


def test_translated_words_in_prose_are_not_labels() -> None:
    """A translated label word inside a sentence is content, as an English one is."""
    raw = "El gancho: la prisa. Hay un bucle en el servicio que no se detiene."
    assert validate_output(raw).status == "failed"


EMOJI = dict(zip(FIELDS, ("🪝", "🧲", "💰", "🛡️", "🔁"), strict=True))
DECORATED = {
    "emoji headings": "\n\n".join(f"### {EMOJI[name]} {name.title()}\n{value}" for name, value in CONTENT.items()),
    "emoji bullets": "\n".join(f"{EMOJI[name]} **{name.title()}:** {value}" for name, value in CONTENT.items()),
    "arrow bullets": labelled("➡️ {L}: {v}"),
    "triangle bullets": labelled("▶ {T} — {v}"),
    "sparkles then number": labelled("✨ {n}. {T}: {v}"),
}


@pytest.mark.parametrize("raw", DECORATED.values(), ids=DECORATED.keys())
def test_emoji_and_symbols_decorate_labels(raw: str) -> None:
    """Emoji and arrows before a label are decoration, like bullets and hashes."""
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == CONTENT


def test_a_value_written_as_one_quoted_string_loses_its_quotes() -> None:
    """``hook: "..."`` (key-value style): the quotes are not content; quotes inside the prose are."""
    raw = labelled('{l}: "{v}"') + '\nnote: "x"'
    result = validate_output(raw.replace(CONTENT["grip"], 'The "cold" cache is the cause.'))
    assert result.loop_output["hook"] == CONTENT["hook"]
    assert result.loop_output["grip"] == 'The "cold" cache is the cause.'


@given(answers, st.sampled_from(["{n}. {L}: {v}", "**{n}. {T}:** {v}", "{n}) {T}: {v}"]), st.permutations(FIELDS))
def test_any_answer_collapsed_into_one_paragraph_round_trips(
    answer: dict[str, str], style: str, order: list[str]
) -> None:
    """Any content, numbered labels collapsed into one paragraph in any order, is recovered exactly."""
    raw = " ".join(style.format(n=i, L=name.upper(), T=name.title(), v=answer[name]) for i, name in enumerate(order, 1))
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


def test_markdown_escapes_a_chat_platform_left_visible_are_undone() -> None:
    """Telegram's MarkdownV2 escapes every "." "-" "(" ")": in a body without code spans they read as the characters
    (CommonMark's backslash escapes); in a code span they are literal and stay."""
    escaped = {name: value.replace(".", "\\.").replace("-", "\\-") for name, value in CONTENT.items()}
    result = validate_output("\n".join(f"*{name.title()}:* {value}" for name, value in escaped.items()))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT
    loop = "Should we run `grep -E '\\d+\\.\\d+'` on the logs?"
    assert validate_output(labelled("{L}: {v}", content={**CONTENT, "loop": loop})).loop_output["loop"] == loop


def test_adjacent_string_literals_are_one_string() -> None:
    """Protobuf's text format, C, Python and Go join adjacent string literals: "a " "b" is "a b"."""
    lines = []
    for name, value in CONTENT.items():
        half = value.index(" ", len(value) // 2)
        lines.append(f'{name}: "{value[:half]} "\n      "{value[half + 1 :]}"')
    result = validate_output("# proto-message: LoopAnswer\n" + "\n".join(lines))
    assert result.status == "valid" and dict(result.loop_output) == CONTENT
