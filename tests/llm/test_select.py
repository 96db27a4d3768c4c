"""Choosing the LLM: --llm, else MARSRAG_LLM, else the settings file, else the offline composer."""

from __future__ import annotations

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
