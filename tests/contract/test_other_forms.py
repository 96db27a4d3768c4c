"""Forms beside JSON and labels that real models write: YAML, Markdown tables, HTML, printed Python models."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, LoopOutput, validate_output
from tests.contract.samples import CONTENT
from tests.contract.strategies import answers


def collapse(text: str | None) -> str:
    return " ".join((text or "").split())


YAML_FORMS = {
    "plain yaml in a fence": "```yaml\n" + yaml.safe_dump(CONTENT, sort_keys=False, width=200) + "```",
    "block scalars": (
        f'hook: "{CONTENT["hook"]}"\ngrip: >\n  {CONTENT["grip"][:40]}\n  {CONTENT["grip"][40:]}\n'
        f"payoff: |\n  {CONTENT['payoff']}\n# the evidence\nreinforce: {CONTENT['reinforce']}\n"
        f"loop: '{CONTENT['loop']}'"
    ),
    "nested under a wrapper key": "answer:\n" + "\n".join(f'  {k}: "{v}"' for k, v in CONTENT.items()),
    "after prose, with a document mark": "Here it is:\n---\n" + "\n".join(f"{k}: '{v}'" for k, v in CONTENT.items()),
    "yml fence with a comment": "```yml\n# LoopOutput\n" + "\n".join(f"{k}: {v}" for k, v in CONTENT.items()) + "\n```",
}


@pytest.mark.parametrize("raw", YAML_FORMS.values(), ids=YAML_FORMS.keys())
def test_yaml_answers(raw: str) -> None:
    """YAML answers read exactly: block scalars, quoting, comments and a wrapper key are YAML's, not content."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert {name: collapse(value) for name, value in result.loop_output.items()} == CONTENT


def test_yaml_that_does_not_parse_still_reads_as_labels() -> None:
    """A colon in a plain value breaks YAML; the label grammar still reads the same lines."""
    raw = "\n".join(f"{k}: {v}" for k, v in CONTENT.items()).replace("cold caches", "caches: cold") + '\nnote: "x'
    result = validate_output(raw)
    assert result.status == "valid" and "caches: cold" in (result.loop_output["grip"] or "")


TABLES = {
    "labels as a column": "| Section | Content |\n| --- | --- |\n"
    + "\n".join(f"| {k.title()} | {v} |" for k, v in CONTENT.items()),
    "bold, numbered labels": "| # | Part | Text |\n|:-:|---|---|\n"
    + "\n".join(f"| {n} | **{k.upper()}** | {v} |" for n, (k, v) in enumerate(CONTENT.items(), 1)),
    "labels as the header": "| "
    + " | ".join(k.title() for k in CONTENT)
    + " |\n|"
    + "---|" * 5
    + "\n| "
    + " | ".join(CONTENT.values())
    + " |",
    "after prose, with a break and a bar": "Summary:\n\n"
    + "\n".join(f"| {k} | {v} |" for k, v in CONTENT.items())
    .replace("versus", "<br>versus")
    .replace("sample?", "sample \\| now?"),
    "translated labels": "| Sección | Texto |\n|---|---|\n"
    + "\n".join(
        f"| {label} | {v} |"
        for label, v in zip(("Gancho", "Agarre", "Recompensa", "Refuerzo", "Bucle"), CONTENT.values(), strict=True)
    ),
}


@pytest.mark.parametrize("raw", TABLES.values(), ids=TABLES.keys())
def test_table_answers(raw: str) -> None:
    """A table whose first column (or header row) holds the labels gives one section per label."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    expected = {**CONTENT}
    if "<br>" in raw:
        expected["reinforce"] = expected["reinforce"].replace("versus", "\nversus")
        expected["loop"] = expected["loop"].replace("sample?", "sample | now?")
    assert dict(result.loop_output) == expected


def test_a_table_without_labels_is_no_answer() -> None:
    """A table of other data is refused, not split into fields."""
    raw = "| Region | p99 |\n|---|---|\n| eu | 320 ms |\n| us | 410 ms |"
    assert validate_output(raw).status == "failed"


HTML_FORMS = {
    "list with strong labels": "<ul>\n"
    + "\n".join(f"  <li><strong>{k.title()}:</strong> {v}</li>" for k, v in CONTENT.items())
    + "\n</ul>",
    "ordered list with b labels": "<ol>"
    + "".join(f"<li><b>{k.upper()}</b>: {v}</li>" for k, v in CONTENT.items())
    + "</ol>",
    "headings and paragraphs": "".join(f"<h3>{k.title()}</h3>\n<p>{v}</p>\n" for k, v in CONTENT.items()),
    "definition list": "<dl>" + "".join(f"<dt>{k.title()}</dt><dd>{v}</dd>" for k, v in CONTENT.items()) + "</dl>",
    "table": "<table><tr><th>Section</th><th>Text</th></tr>"
    + "".join(f"<tr><td>{k.title()}</td><td>{v}</td></tr>" for k, v in CONTENT.items())
    + "</table>",
    "entities and a wrapper": '<div class="answer"><p><strong>Hook:</strong> '
    + CONTENT["hook"]
    + "</p>"
    + "".join(f"<p><strong>{k.title()}:</strong> {v}</p>" for k, v in list(CONTENT.items())[1:]).replace(
        "95%", "95&#37;"
    )
    + "</div>",
}


@pytest.mark.parametrize("raw", HTML_FORMS.values(), ids=HTML_FORMS.keys())
def test_html_answers(raw: str) -> None:
    """HTML reads as the Markdown it stands for: items, headings, bold labels, cells; entities decoded."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert {name: collapse(value) for name, value in result.loop_output.items()} == CONTENT


def test_html_prose_is_no_answer() -> None:
    """An HTML page without labels is refused like any prose."""
    assert validate_output("<p>Caches restart <b>cold</b>; pre-warm them.</p>").status == "failed"


MODEL = LoopOutput.model_validate(CONTENT)
PRINTED = {
    "repr": repr(MODEL),
    "str": str(MODEL),
    "keyword call in a code fence": "```python\nLoopOutput(\n"
    + "".join(f"    {k}={v!r},\n" for k, v in CONTENT.items())
    + ")\n```",
    "double quotes": " ".join(f'{k}="{v}"' for k, v in CONTENT.items()),
}


@pytest.mark.parametrize("raw", PRINTED.values(), ids=PRINTED.keys())
def test_printed_python_models(raw: str) -> None:
    """A model's repr or str, as agents hand them on, reads field by field with Python's literal rules."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


def test_a_cut_printed_model_is_truncated() -> None:
    """A repr cut inside the last literal fails that field as truncated."""
    result = validate_output(repr(MODEL)[:-20])
    assert {issue.field: issue.code for issue in result.errors} == {"loop": "truncated"}


@given(answers)
def test_any_answer_dumped_as_yaml_validates_to_the_same_fields(answer: dict[str, str]) -> None:
    """Any answer written by a YAML dumper (any quoting and folding it picks) is the same answer."""
    raw = "```yaml\n" + yaml.safe_dump(answer, allow_unicode=True, width=40) + "```"
    result = validate_output(raw)
    assert result.status == "valid", (raw, result.errors)
    assert dict(result.loop_output) == answer


@given(answers, st.booleans())
def test_any_answer_as_a_table_validates_to_the_same_fields(answer: dict[str, str], header: bool) -> None:
    """Any answer in a two-column table (labels first) or a one-row table (labels as header) round-trips."""
    if header:
        raw = (
            "| "
            + " | ".join(FIELDS)
            + " |\n|"
            + "---|" * 5
            + "\n| "
            + " | ".join(answer[name] for name in FIELDS)
            + " |"
        )
    else:
        raw = "| Part | Text |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in answer.items())
    assert dict(validate_output(raw).loop_output) == answer


@given(answers)
def test_any_answer_as_an_html_list_or_a_repr_validates_to_the_same_fields(answer: dict[str, str]) -> None:
    """Any answer as an HTML list, or as a printed model, is the same answer."""
    html = "<ul>" + "".join(f"<li><b>{k.title()}:</b> {v}</li>" for k, v in answer.items()) + "</ul>"
    assert dict(validate_output(html).loop_output) == answer
    assert dict(validate_output(repr(LoopOutput.model_validate(answer))).loop_output) == answer
    assert json.loads(LoopOutput.model_validate(answer).model_dump_json()) == answer


# -- printed Python values: objects printed as calls, a console's pretty-printed dict -------------------------------

PRINTED_VALUES = {
    "a message object holding JSON": "{'agent': {'messages': [AIMessage(content="
    + repr(json.dumps(CONTENT))
    + ", additional_kwargs={'refusal': None}, id='run-1', usage_metadata={'input_tokens': 412})]}}",
    "keyword arguments beside a positional one": "Response(Stop, message=Message(role='assistant', content="
    + repr("\n".join(f"{k}: {v}" for k, v in CONTENT.items()))
    + "))",
    "pprint after the console line": "In [13]: pprint(answer)\n{"
    + ",\n ".join(f"{k!r}: {v[:30]!r}\n    {v[30:]!r}" for k, v in sorted(CONTENT.items()))
    + "}\n\nIn [14]: ",
}


@pytest.mark.parametrize("raw", PRINTED_VALUES.values(), ids=PRINTED_VALUES.keys())
def test_printed_python_values_are_walked_as_json_is(raw: str) -> None:
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT


def test_a_name_printed_in_a_fields_place_is_no_string() -> None:
    """``loop=NEXT_STEP`` in a printed object: a name, not content."""
    fields = ", ".join(f"{k}={v!r}" for k, v in CONTENT.items() if k != "loop")
    assert validate_output(f"Answer(message=Fields({fields}, loop=NEXT_STEP))").status != "valid"


# -- configuration files: TOML and INI, by the standard library's parsers ---------------------------------------


def _halves(value: str) -> tuple[str, str]:
    """A value cut in two at a space, as a line is wrapped."""
    cut = value.index(" ", 25)
    return value[:cut], value[cut + 1 :]


CONFIG_FILES = {
    "toml multi-line strings": "[answer]\n"
    + "\n".join('{} = """\\\n  {} \\\n  {}"""'.format(k, *_halves(v)) for k, v in CONTENT.items()),
    "toml literal strings": "\n".join(f"{k} = '{v}'" for k, v in CONTENT.items()),
    "ini continuation lines": "[answer]\n"
    + "\n".join("{} = {}\n    {}".format(k, *_halves(v)) for k, v in CONTENT.items()),
}


@pytest.mark.parametrize("raw", CONFIG_FILES.values(), ids=CONFIG_FILES.keys())
def test_configuration_files(raw: str) -> None:
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert {name: collapse(value) for name, value in result.loop_output.items()} == CONTENT


def test_an_ini_file_giving_a_key_twice_is_no_answer() -> None:
    raw = "[answer]\n" + "\n".join(f"{k} = {v}" for k, v in CONTENT.items()) + "\nloop = Or shall we wait a day?\n"
    assert validate_output(raw).status != "valid"
