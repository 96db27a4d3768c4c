"""Answers carried by captions (SRT, WebVTT) and delimited tables (TSV, CSV): read back as the text they carry."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given

from marsrag.contract import FIELDS, validate_output
from marsrag.contract._transcribed import transcribed_text
from tests.contract.samples import CONTENT, labelled
from tests.contract.strategies import answers


def reads(raw: str, expected: dict[str, str] = CONTENT) -> None:
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert {name: " ".join(value.split()) for name, value in result.loop_output.items()} == expected, raw


def _stamp(milliseconds: int, comma: bool) -> str:
    hours, rest = divmod(milliseconds, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02}:{minutes:02}:{seconds:02}{',' if comma else '.'}{millis:03}"


def captions(lines: list[str], kind: str) -> str:
    """``lines`` as SRT (numbered cues, comma timings) or WebVTT (a header, dot timings, no numbers)."""
    cues = []
    for index, line in enumerate(lines):
        timing = f"{_stamp(index * 2300, kind == 'srt')} --> {_stamp(index * 2300 + 2200, kind == 'srt')}"
        cues.append((f"{index + 1}\n" if kind == "srt" else "") + f"{timing}\n{line}\n")
    return ("WEBVTT\n\n" if kind == "vtt" else "") + "\n".join(cues)


def _split(text: str) -> list[str]:
    """A spoken answer's cues: each label line cut in two halves, as a recognizer cuts segments."""
    pieces = []
    for line in text.split("\n"):
        words = line.split()
        half = max(1, len(words) // 2)
        pieces += [" ".join(words[:half]), " ".join(words[half:])]
    return [piece for piece in pieces if piece]


@pytest.mark.parametrize("kind", ["srt", "vtt"])
@pytest.mark.parametrize("form", ["{T}: {v}", "{L}: {v}"])
def test_an_answer_spoken_across_caption_cues_reads(kind: str, form: str) -> None:
    reads(captions(_split(labelled(form)), kind))


def test_a_caption_file_cut_in_its_last_section_is_not_valid() -> None:
    cut = _split(labelled("{T}: {v}"))[:-1]
    cut[-1] = cut[-1] + " and"
    assert validate_output(captions(cut, "srt"), cut=True).status != "valid"


def tsv(rows: list[list[str]]) -> str:
    return "\n".join("\t".join(row) for row in rows) + "\n"


def test_a_transcript_table_s_text_column_is_the_answer() -> None:
    rows = [["start", "end", "text"]]
    rows += [
        [str(index * 2300), str(index * 2300 + 2200), piece] for index, piece in enumerate(_split(labelled("{T}: {v}")))
    ]
    reads(tsv(rows))


@pytest.mark.parametrize("quoting", [csv.QUOTE_ALL, csv.QUOTE_MINIMAL])
def test_a_csv_whose_header_names_the_fields_reads_its_row(quoting: int) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=quoting, lineterminator="\n")
    content = {**CONTENT, "grip": 'The endpoint answers "service unavailable", and we treat it as a decline.'}
    writer.writerows([list(FIELDS), [content[name] for name in FIELDS]])
    reads(buffer.getvalue(), content)


@given(answers)
def test_any_answer_in_a_tab_separated_row_reads_back(answer: dict[str, str]) -> None:
    cells = {name: " ".join(value.replace('"', "'").split()) for name, value in answer.items()}
    raw = tsv([list(FIELDS), [cells[name] for name in FIELDS]])
    result = validate_output(raw)
    assert result.ok, (raw, result.errors)
    assert dict(result.loop_output) == cells


@pytest.mark.parametrize(
    "text",
    [
        labelled("{T}:\t{v}"),  # a tab after each label: no header row
        "\tindented:\n\tlines:\n",
        "Hook: one, two\nGrip: three, four\n",
        "<!-- a comment --> and prose",
        "a\tb\nc\n",  # rows of different widths
    ],
)
def test_text_that_is_neither_captions_nor_a_table_is_left_alone(text: str) -> None:
    assert transcribed_text(text) is None
