"""Contract validation benchmarks (issue: LoopOutput contract).

- clean JSON: validate_output vs LoopOutput.model_validate_json on the same payload (target <= 1.5x);
- forms needing no JSON repair vs pydantic on the clean JSON of the same content (target <= 6x);
- the forms real models write (reasoning blocks, leaked tokens, escapes, several candidates, encodings,
  YAML, tables, HTML...) vs pydantic on the clean JSON of the same content, one row per family (reported);
  a reasoning block or leaked tokens cost at most 2x the same answer without them (target <= 2x);
- forms needing JSON repair vs json_repair.loads alone on the same input (target <= 1.1x);
- a 10 MB input answers in under 1 s (baseline: decoding the same bytes), peak memory reported;
- cold start of ``marsrag validate`` and ``marsrag schema`` vs a bare interpreter start.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import json_repair

from bench._samples import CLEAN, CONTENT, labelled
from bench._timing import Report, compare, rate
from marsrag.contract import LoopOutput, validate_output
from marsrag.contract.rules import MAX_INPUT_CHARS

NO_REPAIR_FORMS = {
    "fenced json after prose": f"Here you go:\n```json\n{json.dumps(CONTENT, indent=2)}\n```",
    "prose around json": f"Sure! Here is the answer: {CLEAN}\nLet me know if you need more.",
    "crewai Final Answer": f"Thought: I now know the final answer\nFinal Answer: {CLEAN}",
    "template labels": labelled("{n}. {L}: {v}"),
    "bold labels": labelled("**{T}:** {v}", "\n\n"),
    "markdown headings": labelled("## {T}\n{v}", "\n\n"),
    "xml tags": labelled("<{T}>{v}</{T}>"),
    "inline labels": labelled("{T}: {v}", " "),
}
LABELS = labelled("{n}. {L}: {v}")
# Thinking as a reasoning model writes it: a paragraph, with a draft the parser must not read.
THINKING = (
    "<think>\nThe user asks why three regions breached their SLO. The restarts line up with the breaches, so "
    "the caches were cold. I should answer with the five sections. Draft: HOOK: regions breached. GRIP: cold "
    "caches. Let me write it properly as JSON now.\n</think>\n\n"
)
TOKEN = "<|eot_id|>"
SPANISH = ("GANCHO", "AGARRE", "RECOMPENSA", "REFUERZO", "BUCLE")
# One row per family of real-model output; each validates to CONTENT.
REAL_MODEL_FORMS = {
    "reasoning block + JSON": THINKING + CLEAN,
    "leaked token + JSON": CLEAN + TOKEN,
    "markdown escapes in JSON": CLEAN.replace("pre-warm", "pre\\-warm"),
    "placeholder example, then the answer": json.dumps(dict.fromkeys(CONTENT, "string")) + "\n\n" + CLEAN,
    "escaped quotes, no outer string": json.dumps(CLEAN)[1:-1],
    "tool call, JSON-encoded arguments": json.dumps({"name": "LoopOutput", "arguments": CLEAN}),
    "labels collapsed with their numbers": labelled("{n}. {L}: {v}", " "),
    "curly quotes as delimiters": "{" + ", ".join(f"“{k}”: “{v}”" for k, v in CONTENT.items()) + "}",
    "bare key-value pairs": ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in CONTENT.items()),
    "JSON Lines of one key each": "\n".join(json.dumps({k: v}) for k, v in CONTENT.items()),
    "YAML with block scalars": "\n".join(f"{k}: >\n  {v}" for k, v in CONTENT.items()),
    "table, labels as a column": "| Part | Text |\n|---|---|\n"
    + "\n".join(f"| {k} | {v} |" for k, v in CONTENT.items()),
    "labels in another language": "\n".join(
        f"{label}: {v}" for label, v in zip(SPANISH, CONTENT.values(), strict=True)
    ),
    "HTML list": "<ul>" + "".join(f"<li><b>{k.title()}:</b> {v}</li>" for k, v in CONTENT.items()) + "</ul>",
    "printed model (repr)": "LoopOutput(" + ", ".join(f"{k}={v!r}" for k, v in CONTENT.items()) + ")",
    # Tool calls written as text, keyed markup (issue 40's catalog: Qwen3-Coder, GLM-4.5, DSPy).
    "XML parameters call": "<tool_call>\n<function=final_answer>\n"
    + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in CONTENT.items())
    + "</function>\n</tool_call>",
    "arg_key/arg_value call": "<tool_call>final_answer\n"
    + "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in CONTENT.items())
    + "</tool_call>",
    "DSPy field markers": "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in CONTENT.items()) + "[[ ## completed ## ]]",
}
# Each input with a reasoning block or leaked tokens, and the same answer without them.
ADDED_COST = {
    "reasoning block + JSON": (THINKING + CLEAN, CLEAN),
    "reasoning block + labels": (THINKING + LABELS, LABELS),
    "leaked token + JSON": (CLEAN + TOKEN, CLEAN),
    # A turn's template prefix and end (a token after every line would end the answer at the first one).
    "leaked tokens + labels": ("<|start_header_id|>assistant<|end_header_id|>\n\n" + LABELS + TOKEN, LABELS),
}
REPAIR_FORMS = {
    "trailing comma": CLEAN[:-1] + ",}",
    "single quotes": "{" + ", ".join(f"'{k}': '{v}'" for k, v in CONTENT.items()) + "}",
    "missing closing brace": CLEAN[:-1],
    "comments": CLEAN.replace(', "grip"', ',  // the diagnosis\n "grip"'),
}


# The target covers these; comments are reported too, but an exact parse must run first for them
# (valid JSON may hold "//" in a URL), so they pay one failed parse the library does not.
TARGETED_REPAIR_FORMS = ("trailing comma", "single quotes", "missing closing brace")


def _check(text: str) -> None:
    result = validate_output(text)
    if result.status != "valid":
        raise SystemExit(f"benchmark input is not recovered as valid: {text[:80]!r} -> {result!r}")


def _catalog(report: Report) -> None:
    """Coverage of the format catalog's examples, and false-valid on each with its loop emptied (issue 40)."""
    from tests.contract.catalog_examples import EXAMPLES

    cases = [case for examples in EXAMPLES.values() for case in examples]
    correct = sum(
        (result := validate_output(raw)).status == "valid" and dict(result.loop_output) == values
        for raw, values in cases
    )
    emptied = [raw.replace(values["loop"], "") for raw, values in cases]
    false_valid = sum(validate_output(raw).status == "valid" for raw in emptied)
    report.add("catalog examples read to their values", f"{correct}", f"{len(cases)}", correct / len(cases),
               ">= 97%", correct / len(cases) >= 0.97)  # fmt: skip
    report.add("false-valid: catalog examples with the loop emptied", f"{false_valid}", f"{len(cases)}",
               false_valid / len(cases), "0", false_valid == 0)  # fmt: skip


def run() -> None:
    """Run the contract benchmarks and print their table."""
    report = Report("contract validation (one core; best of 7 alternating rounds)")
    _check(CLEAN)
    pair = compare(lambda: validate_output(CLEAN), lambda: LoopOutput.model_validate_json(CLEAN))
    report.add(
        "clean JSON vs model_validate_json",
        rate(pair.ours),
        rate(pair.base),
        pair.ratio,
        "<= 1.5x",
        pair.ratio <= 1.5,
    )
    for name, text in NO_REPAIR_FORMS.items():
        _check(text)
        pair = compare(lambda t=text: validate_output(t), lambda: LoopOutput.model_validate_json(CLEAN))
        report.add(
            f"{name} vs pydantic on clean JSON",
            rate(pair.ours),
            rate(pair.base),
            pair.ratio,
            "<= 6x",
            pair.ratio <= 6,
        )
    _real_model_forms(report)
    _catalog(report)
    for name, text in REPAIR_FORMS.items():
        _check(text)
        pair = compare(lambda t=text: validate_output(t), lambda t=text: json_repair.loads(t))
        targeted = name in TARGETED_REPAIR_FORMS
        report.add(
            f"{name} vs json_repair.loads",
            rate(pair.ours),
            rate(pair.base),
            pair.ratio,
            "<= 1.1x" if targeted else "(info)",
            pair.ratio <= 1.1 or not targeted,
        )
    _huge(report)
    _adversarial(report)
    _cold_start(report)
    report.print()


def _real_model_forms(report: Report) -> None:
    for name, text in REAL_MODEL_FORMS.items():
        _check(text)
        pair = compare(lambda t=text: validate_output(t), lambda: LoopOutput.model_validate_json(CLEAN))
        # Figures the issue asks for, with no target of their own (the 2x rows below are targeted).
        report.add(f"{name} vs pydantic on clean JSON", rate(pair.ours), rate(pair.base), pair.ratio, "(info)", True)
    for name, (text, clean) in ADDED_COST.items():
        _check(text)
        pair = compare(lambda t=text: validate_output(t), lambda c=clean: validate_output(c))
        report.add(
            f"{name} vs the same answer without it",
            rate(pair.ours),
            rate(pair.base),
            pair.ratio,
            "<= 2x",
            pair.ratio <= 2,
        )


def _huge(report: Report) -> None:
    for label, data in (
        ("10 MB text", ("x" * 10_000_000)),
        ("10 MB JSON-looking bytes", (b'{"hook": "' + b"a" * 10_000_000 + b'"}')),
    ):
        raw_bytes = data.encode() if isinstance(data, str) else data
        start = time.perf_counter()
        raw_bytes.decode("utf-8")
        base = time.perf_counter() - start
        tracemalloc.start()
        start = time.perf_counter()
        result = validate_output(data)
        ours = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        report.add(
            f"{label} -> {result.status} ({result.errors[0].code}), peak +{peak / 1e6:.1f} MB vs decoding it",
            f"{ours * 1e3:.2f} ms",
            f"{base * 1e3:.2f} ms",
            ours / base,
            "< 1 s",
            ours < 1.0,
        )


def _adversarial(report: Report) -> None:
    """Inputs just under the size guard, built to make each parser work hardest."""
    size = MAX_INPUT_CHARS - 1
    shapes = {
        "unclosed brackets": "[",
        "json-ish broken keys": '{"hook": "a", ',
        "thousands of labels": "HOOK: x\n",
        "inline labels": "Hook: a. ",
        "unclosed xml tags": "<hook>a</hook",
        "many fences": '```json\n{"hook": 1}\n',
        "unclosed think tags": "<think>\nHOOK: x\n",
        "leaked tokens": "<|eot_id|>",
        "tokens glued in a value": '{"hook": "a<|im_end|>',
        "keyed parameters": "<parameter=hook>a",
        "field markers": "[[ ## hook ## ]] a ",
        "escaped quotes": '{\\"hook\\": \\"a\\", ',
        "table rows": "| Hook | x |\n",
        "printed pairs": "hook='x' ",
    }
    for name, unit in shapes.items():
        text = (unit * (size // len(unit) + 1))[:size]
        ours = min(_once(lambda t=text: validate_output(t)) for _ in range(3))
        base = min(_once(lambda t=text: t.lower()) for _ in range(3))
        report.add(
            f"100 KB adversarial: {name} vs one str.lower() pass",
            f"{ours * 1e3:.1f} ms",
            f"{base * 1e3:.2f} ms",
            ours / base,
            "< 1 s",
            ours < 1.0,
        )


def _once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _cold(argv: list[str], stdin: bytes | None = None) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, capture_output=True, check=False)
        best = min(best, time.perf_counter() - start)
    return best


def _cold_start(report: Report) -> None:
    base = _cold([sys.executable, "-c", "pass"])
    with tempfile.TemporaryDirectory() as tmp:
        answer = Path(tmp, "answer.txt")
        answer.write_text(NO_REPAIR_FORMS["template labels"], encoding="utf-8")
        env_python = [sys.executable, "-m", "marsrag"]
        for name, argv in (
            ("marsrag validate FILE", [*env_python, "validate", str(answer)]),
            ("marsrag schema", [*env_python, "schema"]),
        ):
            ours = _cold(argv)
            report.add(
                f"cold start: {name} vs `python -c pass`",
                f"{ours * 1e3:.0f} ms",
                f"{base * 1e3:.0f} ms",
                ours / base,
                "no CrewAI/SQLAlchemy import",
                True,
            )
