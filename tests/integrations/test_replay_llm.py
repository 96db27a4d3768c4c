"""The replay LLM shipped for users' tests: scripted outputs from code or JSON Lines, recorded calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from marsrag.errors import MarsRAGError

pytestmark = pytest.mark.crewai


def test_outputs_are_returned_in_order_and_calls_recorded() -> None:
    """Each call returns the next output; messages are deep-copied when recorded."""
    from marsrag.llm.replay import ReplayExhaustedError, ReplayLLM

    llm = ReplayLLM.from_outputs(["one", "two"])
    messages = [{"role": "user", "content": "hi"}]
    assert llm.call(messages) == "one"
    messages[0]["content"] = "changed"
    assert llm.call("plain prompt") == "two"
    assert [call.messages for call in llm.calls] == [
        [{"role": "user", "content": "hi"}],
        [{"role": "user", "content": "plain prompt"}],
    ]
    assert llm.remaining == 0 and llm.supports_function_calling() is False
    with pytest.raises(ReplayExhaustedError, match="after 2 call"):
        llm.call("again")


def test_json_lines_file(tmp_path: Path) -> None:
    """A JSON Lines script gives one output per {"output": ...} line; blank lines are skipped."""
    from marsrag.llm.replay import ReplayLLM

    path = tmp_path / "script.jsonl"
    path.write_text('{"output": "first"}\n\n{"output": "second"}\n')
    assert ReplayLLM.from_file(path).outputs == ["first", "second"]


@pytest.mark.parametrize("text", ['{"output": 1}\n', "not json\n", '["output"]\n'])
def test_bad_json_lines_name_the_line(tmp_path: Path, text: str) -> None:
    """A malformed line is a MarsRAGError naming the file and line."""
    from marsrag.llm.replay import ReplayLLM

    path = tmp_path / "script.jsonl"
    path.write_text('{"output": "ok"}\n' + text)
    with pytest.raises(MarsRAGError, match=r"script.jsonl:2: expected a JSON object"):
        ReplayLLM.from_file(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    """A missing script file is named."""
    from marsrag.llm.replay import ReplayLLM

    with pytest.raises(MarsRAGError, match="cannot read replay file"):
        ReplayLLM.from_file(tmp_path / "nope.jsonl")


def test_script_errors_name_the_file(tmp_path: Path) -> None:
    """Bytes that are not UTF-8, and running out of outputs, are errors naming the script file."""
    from marsrag.llm.replay import ReplayExhaustedError, ReplayLLM

    broken = tmp_path / "latin1.jsonl"
    broken.write_bytes(b'{"output": "caf\xe9"}\n')
    with pytest.raises(MarsRAGError, match=r"replay file '.*latin1\.jsonl': not UTF-8 text \(byte 15\)"):
        ReplayLLM.from_file(broken)
    short = tmp_path / "short.jsonl"
    short.write_text('{"output": "only one"}\n')
    llm = ReplayLLM.from_file(short)
    assert llm.call("first") == "only one"
    with pytest.raises(ReplayExhaustedError, match=r"replay file '.*short\.jsonl' ran out of outputs after 1 call"):
        llm.call("second")
