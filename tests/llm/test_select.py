"""Choosing the LLM: --llm, else MARSRAG_LLM, else the settings file, else the offline composer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.errors import InputError

pytestmark = pytest.mark.crewai


def test_default_is_the_offline_composer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing configured: the composer."""
    from marsrag.llm.composer import OfflineComposer
    from marsrag.llm.select import resolve_llm
    from marsrag.settings import resolve_settings

    monkeypatch.delenv("MARSRAG_LLM", raising=False)
    (tmp_path / "empty.toml").touch()  # a settings file that sets nothing
    monkeypatch.setenv("MARSRAG_CONFIG", str(tmp_path / "empty.toml"))
    assert isinstance(resolve_llm(resolve_settings().llm), OfflineComposer)
    assert isinstance(resolve_llm(None), OfflineComposer)


def test_settings_file_then_environment_then_flag(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The settings file is read when neither the flag nor the environment says otherwise."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.llm.select import resolve_llm
    from marsrag.settings import resolve_settings

    script = tmp_path / "s.jsonl"
    script.write_text('{"output": "from file"}\n')
    settings = tmp_path / "config.toml"
    settings.write_text(f'llm = "replay:{script}"\n')
    monkeypatch.setenv("MARSRAG_CONFIG", str(settings))
    monkeypatch.delenv("MARSRAG_LLM", raising=False)
    chosen = resolve_llm(resolve_settings().llm)
    assert isinstance(chosen, ReplayLLM) and chosen.outputs == ["from file"]
    monkeypatch.setenv("MARSRAG_LLM", "composer")
    assert not isinstance(resolve_llm(resolve_settings().llm), ReplayLLM)
    assert isinstance(resolve_llm(resolve_settings(llm=f"replay:{script}").llm), ReplayLLM)


def test_crewai_model_with_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model string with a base URL becomes a CrewAI LLM pointed at that server."""
    from marsrag.llm.select import resolve_llm

    llm = resolve_llm("openai/test-model", base_url="http://127.0.0.1:9/v1")
    assert llm.model == "test-model" and "127.0.0.1:9" in str(llm.base_url)


def test_broken_settings_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A settings file that is not TOML is named in the error."""
    from marsrag.llm.select import resolve_llm
    from marsrag.settings import resolve_settings

    bad = tmp_path / "config.toml"
    bad.write_text("llm = [unclosed\n")
    monkeypatch.setenv("MARSRAG_CONFIG", str(bad))
    monkeypatch.delenv("MARSRAG_LLM", raising=False)
    with pytest.raises(InputError, match="config.toml: not a readable TOML"):
        resolve_llm(resolve_settings().llm)


@pytest.mark.parametrize(
    ("spec", "suggestion"),
    [
        ("compser", "'composer'"),
        ("Composer", "'composer'"),
        ("replya:a.jsonl", "'replay:a.jsonl'"),
        ("replay", "'replay:FILE'"),
    ],
)
def test_a_misspelt_built_in_is_one_line_suggesting_it_and_exit_2(spec: str, suggestion: str, tmp_path: Path) -> None:
    """`--llm compser` names the built-in it is near instead of asking for an API key."""
    env = {**os.environ, "MARSRAG_HOME": str(tmp_path), "OPENAI_API_KEY": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "run", "Checkout got slow", "--llm", spec],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"marsrag: error: unknown LLM {spec!r}: did you mean {suggestion}?")
    assert len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "spec",
    [
        "gpt-4o-mini",
        "openai/gpt-4o-mini",
        "o3-mini",
        "ollama/llama3",
        "anthropic/claude-3-5-haiku-latest",
        "claude-3-5-haiku-latest",
        "gemini-2.0-flash",
        "llama3",
        "hosted_vllm/composer",
    ],
)
def test_crewai_model_strings_are_left_to_crewai(spec: str) -> None:
    """A model CrewAI knows, one naming a provider, or one near no built-in name is not taken for a typo."""
    from marsrag.llm.select import check_spec

    check_spec(spec)


def test_a_bare_model_crewai_knows_is_built_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt-4o-mini (no provider) is still CrewAI's OpenAI model."""
    from marsrag.llm.select import resolve_llm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    assert resolve_llm("gpt-4o-mini").model == "gpt-4o-mini"
