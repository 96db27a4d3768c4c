"""Settings resolve once: a flag, else the environment, else the settings file, else the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from marsrag.errors import InputError
from marsrag.settings import COMPOSER, LlmCallSettings, Settings, default_store_url, resolve_settings, settings_file

#: Each setting the flag, the environment and the file can all give: its environment variable and three values.
CASES = {
    "llm": ("MARSRAG_LLM", "flag/model", "env/model", "file/model"),
    "base_url": ("MARSRAG_BASE_URL", "http://flag:1/v1", "http://env:2/v1", "http://file:3/v1"),
    "db": ("MARSRAG_DB", "sqlite:////flag.db", "sqlite:////env.db", "sqlite:////file.db"),
    "broker": ("MARSRAG_BROKER", "redis://flag:6379/0", "redis://env:6379/0", "redis://file:6379/0"),
}


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No setting in the environment; MARSRAG_CONFIG names an empty settings file in tmp_path."""
    for name in ("MARSRAG_LLM", "MARSRAG_BASE_URL", "MARSRAG_DB", "MARSRAG_BROKER", "MARSRAG_TOKEN", "MARSRAG_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "settings.toml"
    path.write_text("", encoding="utf-8")
    monkeypatch.setenv("MARSRAG_CONFIG", str(path))
    return path


def write_file(path: Path) -> None:
    path.write_text("".join(f'{key} = "{values[3]}"\n' for key, values in CASES.items()), encoding="utf-8")


@pytest.mark.parametrize("key", list(CASES))
def test_flag_beats_environment_beats_file_beats_default(
    key: str, clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each layer wins over the ones below it, for every setting the three can give."""
    env, flag, from_env, from_file = CASES[key]
    defaults = {"llm": COMPOSER, "base_url": None, "db": default_store_url(), "broker": None}
    assert getattr(resolve_settings(), key) == defaults[key]
    write_file(clean)
    assert getattr(resolve_settings(), key) == from_file
    monkeypatch.setenv(env, from_env)
    assert getattr(resolve_settings(), key) == from_env
    assert getattr(resolve_settings(**{key: flag}), key) == flag


def test_blank_values_are_unset(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blank flag or variable falls through to the next layer (as a blank MARSRAG_BROKER always did)."""
    write_file(clean)
    monkeypatch.setenv("MARSRAG_BROKER", "  ")
    chosen = resolve_settings(llm="", db=" ")
    assert (chosen.llm, chosen.db, chosen.broker) == ("file/model", "sqlite:////file.db", "redis://file:6379/0")


def test_settings_file_defaults_to_the_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without MARSRAG_CONFIG the settings file is config.toml in the data directory; the store defaults there too."""
    monkeypatch.delenv("MARSRAG_CONFIG", raising=False)
    monkeypatch.delenv("MARSRAG_DB", raising=False)
    monkeypatch.setenv("MARSRAG_HOME", str(tmp_path))
    assert settings_file() == tmp_path / "config.toml"
    (tmp_path / "config.toml").write_text('llm = "from/home"\n', encoding="utf-8")
    chosen = resolve_settings()
    assert chosen.settings_file == tmp_path / "config.toml" and chosen.llm == "from/home"
    assert chosen.data_dir == tmp_path and chosen.db == f"sqlite:///{tmp_path}/marsrag.db"


def test_config_folder_token_and_hosts(clean: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--config names the config folder (not the settings file); the token and extra hosts come from the environment."""
    monkeypatch.setenv("MARSRAG_TOKEN", " s3cret ")
    monkeypatch.setenv("MARSRAG_ALLOWED_HOSTS", "a.example, ,b.example")
    chosen = resolve_settings(config=str(tmp_path / "config"))
    assert chosen.config == tmp_path / "config" and chosen.settings_file == clean
    assert chosen.token == "s3cret" and chosen.allowed_hosts == ("a.example", "b.example")
    assert resolve_settings().config is None


def test_queue_settings_are_read_only_with_a_broker(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a broker the queue's variables are not consulted; with one they are read and checked."""
    monkeypatch.setenv("MARSRAG_QUEUE", "mine")
    monkeypatch.setenv("MARSRAG_REDELIVER_AFTER", "soon")
    assert resolve_settings().queue == "marsrag"
    with pytest.raises(InputError, match="MARSRAG_REDELIVER_AFTER='soon': not a number of seconds"):
        resolve_settings(broker="redis://127.0.0.1:6379/0")
    monkeypatch.setenv("MARSRAG_REDELIVER_AFTER", "7")
    chosen = resolve_settings(broker="redis://127.0.0.1:6379/0")
    assert (chosen.queue, chosen.redeliver_after, chosen.action_timeout) == ("mine", 7.0, 300.0)


def test_the_file_is_read_only_when_needed(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken settings file is an error naming it, unless flags and environment leave nothing for it to give."""
    clean.write_text("llm = [unclosed\n", encoding="utf-8")
    with pytest.raises(InputError, match="settings.toml: not a readable TOML settings file"):
        resolve_settings()
    monkeypatch.setenv("MARSRAG_BROKER", "redis://127.0.0.1:6379/0")
    chosen = resolve_settings(
        llm="composer",
        base_url="http://x:1/v1",
        db="sqlite:////x.db",
        structured_output="prompt",
        embedder="wordllama",
        embedder_url="http://x:2/v1",
        similarity_scale="0.4,0.6",
    )
    assert isinstance(chosen, Settings) and chosen.db == "sqlite:////x.db"


def test_structured_output_comes_from_flag_env_or_file_and_is_checked(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``structured_output``: flag, else MARSRAG_STRUCTURED_OUTPUT, else the file, else auto; a bad value names them."""
    assert resolve_settings().structured_output == "auto"
    clean.write_text('structured_output = "json_object"\n', encoding="utf-8")
    assert resolve_settings().structured_output == "json_object"
    monkeypatch.setenv("MARSRAG_STRUCTURED_OUTPUT", "grammar")
    assert resolve_settings().structured_output == "grammar"
    assert resolve_settings(structured_output="prompt").structured_output == "prompt"
    with pytest.raises(
        InputError, match=r"structured_output must be one of auto, json_schema, json_object, grammar, prompt"
    ):
        resolve_settings(structured_output="strict")


def test_a_non_string_value_is_an_error_naming_the_key(clean: Path) -> None:
    """``db = 5`` in the settings file is reported with the file and the key."""
    clean.write_text("db = 5\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"settings.toml: db must be a string, not int"):
        resolve_settings()


def test_the_llm_call_policy_is_resolved_with_the_rest(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MARSRAG_LLM_* become ``llm_calls`` (0 s: no time limit); the policy every LLM gets is built from them."""
    from marsrag.llm.resilient import CallPolicy

    for name in ("MARSRAG_LLM_TIMEOUT", "MARSRAG_LLM_RETRIES", "MARSRAG_LLM_BACKOFF"):
        monkeypatch.delenv(name, raising=False)
    defaults = resolve_settings().llm_calls
    assert (defaults.timeout, defaults.retries, defaults.backoff) == (120.0, 2, 1.0)
    monkeypatch.setenv("MARSRAG_LLM_TIMEOUT", "0")
    monkeypatch.setenv("MARSRAG_LLM_RETRIES", "5")
    monkeypatch.setenv("MARSRAG_LLM_BACKOFF", "0.5")
    calls = resolve_settings().llm_calls
    assert CallPolicy.from_settings(calls) == CallPolicy(timeout=None, retries=5, backoff=0.5)
    monkeypatch.setenv("MARSRAG_LLM_RETRIES", "1.5")
    with pytest.raises(InputError, match="MARSRAG_LLM_RETRIES must be a whole number >= 0, got '1.5'"):
        resolve_settings()


def test_max_tokens_caps_answers_when_set() -> None:
    """MARSRAG_LLM_MAX_TOKENS: unset or 0 is the provider's limit; a whole number caps; anything else is an error."""
    assert LlmCallSettings.from_env({}).max_tokens is None
    assert LlmCallSettings.from_env({"MARSRAG_LLM_MAX_TOKENS": "0"}).max_tokens is None
    assert LlmCallSettings.from_env({"MARSRAG_LLM_MAX_TOKENS": "1200"}).max_tokens == 1200
    with pytest.raises(InputError, match="MARSRAG_LLM_MAX_TOKENS must be a whole number"):
        LlmCallSettings.from_env({"MARSRAG_LLM_MAX_TOKENS": "12.5"})


@pytest.mark.crewai
def test_max_tokens_reaches_the_crewai_model() -> None:
    """The cap is the CrewAI model's own max_tokens (sent with every request)."""
    from marsrag.llm.select import resolve_llm

    assert resolve_llm("openai/x", base_url="http://127.0.0.1:9/v1", max_tokens=64).max_tokens == 64
    assert resolve_llm("openai/x", base_url="http://127.0.0.1:9/v1").max_tokens is None


def test_a_missing_settings_file_named_by_marsrag_config_is_an_error(clean: Path) -> None:
    """MARSRAG_CONFIG naming no file is refused (the default <data dir>/config.toml may be missing)."""
    clean.unlink()
    with pytest.raises(InputError, match=r"settings.toml: the settings file MARSRAG_CONFIG names does not exist"):
        resolve_settings()


def test_default_settings_file_may_be_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without MARSRAG_CONFIG, a data directory with no config.toml means defaults."""
    monkeypatch.delenv("MARSRAG_CONFIG", raising=False)
    monkeypatch.setenv("MARSRAG_HOME", str(tmp_path))
    assert resolve_settings().llm == COMPOSER


@pytest.mark.parametrize(
    ("key", "suggested"), [("lm", "llm"), ("base-url", "base_url"), ("databse", None), ("brokers", "broker")]
)
def test_an_unknown_key_is_an_error_with_the_closest_known_key(clean: Path, key: str, suggested: str | None) -> None:
    """An unknown key names the file and the key, suggests the closest known key, and lists them all."""
    clean.write_text(f'{key} = "x"\n', encoding="utf-8")
    with pytest.raises(InputError) as raised:
        resolve_settings()
    message = str(raised.value)
    assert message.startswith(f"{clean}: unknown key {key!r}: ") and message.endswith(
        "the settings file may set llm, base_url, db, broker, structured_output, embedder, embedder_url, "
        "similarity_scale"
    )
    assert (f"did you mean {suggested!r}?" in message) if suggested else ("did you mean" not in message)


def test_similarity_scale_comes_from_env_or_file_and_is_checked(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``similarity_scale``: MARSRAG_SIMILARITY_SCALE, else the file, else None; two cosines, weak below strong."""
    assert resolve_settings().similarity_scale is None
    clean.write_text('similarity_scale = "0.52, 0.7"\n', encoding="utf-8")
    assert resolve_settings().similarity_scale == (0.52, 0.7)
    monkeypatch.setenv("MARSRAG_SIMILARITY_SCALE", "-0.1,0.3")
    assert resolve_settings().similarity_scale == (-0.1, 0.3)
    for bad in ("0.7,0.5", "0.5", "0.5,0.6,0.7", "a,b", "0.5,1.5", "nan,0.5", "0.5,0.5"):
        monkeypatch.setenv("MARSRAG_SIMILARITY_SCALE", bad)
        with pytest.raises(InputError, match=r"^similarity_scale must be two cosines WEAK,STRONG"):
            resolve_settings()
    monkeypatch.delenv("MARSRAG_SIMILARITY_SCALE")
    clean.write_text('similarity_scale = "0.8,0.2"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"similarity_scale = '0.8,0.2': not two cosines WEAK,STRONG"):
        resolve_settings()
