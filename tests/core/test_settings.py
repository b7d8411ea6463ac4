"""``bots.config``: threadline.toml + .env + environment, every problem listed at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field, SecretStr

from agent_core.settings import CommaList, ConfigError, Section, env, load_sections


class Top(Section):
    app: str | None = Field(None, validation_alias=env("app", "THREADLINE_APP"))


class Chat(Section):
    table = "chat"
    token: SecretStr | None = Field(None, validation_alias=env("token", "CHAT_TOKEN"))
    admins: CommaList = Field(default_factory=list, validation_alias=env("admins", "CHAT_ADMINS"))
    port: int = Field(3000, validation_alias=env("port", "CHAT_PORT"))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("THREADLINE_APP", "CHAT_TOKEN", "CHAT_ADMINS", "CHAT_PORT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_environment_wins_over_dotenv_which_wins_over_the_file(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = write(folder / "threadline.toml", 'app = "a:b"\n[chat]\nport = 1\nadmins = ["U1"]\n')
    dotenv = write(folder / ".env", "CHAT_PORT=2\nCHAT_ADMINS=U2, U3\n")
    monkeypatch.setenv("CHAT_PORT", "3")
    loaded = load_sections([Top, Chat], file=file, dotenv=dotenv)
    chat = loaded.section(Chat)
    assert (chat.port, chat.admins, loaded.section(Top).app) == (3, ["U2", "U3"], "a:b")
    assert loaded.origin(Chat, "port") == "environment CHAT_PORT"
    assert loaded.origin(Chat, "admins") == ".env CHAT_ADMINS"
    assert loaded.origin(Top, "app") == "threadline.toml:1 app"
    assert loaded.origin(Chat, "token") == "default"


def test_every_problem_at_once_with_file_and_line_never_the_value(folder: Path) -> None:
    file = write(
        folder / "threadline.toml",
        '[chat]\ntoken = 12345\nport = "s3cr3t-port"\ntokne = "x"\n[chta]\nport = 1\n',
    )
    with pytest.raises(ConfigError) as raised:
        load_sections([Top, Chat], file=file)
    text = str(raised.value)
    assert len(raised.value.problems) == 4, text
    assert "threadline.toml:4 [chat] tokne: unknown setting 'tokne' (did you mean 'token'?)" in text
    assert "threadline.toml:5 chta: unknown setting 'chta' (did you mean 'chat'?)" in text
    assert "threadline.toml:3 [chat] port" in text and "CHAT_PORT" in text
    assert "threadline.toml:2 [chat] token" in text
    assert "s3cr3t-port" not in text and "12345" not in text


def test_a_file_that_is_not_toml_says_so(folder: Path) -> None:
    file = write(folder / "threadline.toml", "[chat\nport = \n")
    with pytest.raises(ConfigError, match=r"threadline\.toml: not valid TOML"):
        load_sections([Chat], file=file)


def test_rows_mask_secrets_and_passwords(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("THREADLINE_APP", "postgresql://bo:hunter2@db/x")
    rows = load_sections([Top, Chat], file=None).rows()
    shown = repr(rows)
    assert "xoxb-very-secret" not in shown and "hunter2" not in shown
    assert ("chat.token", "********", "environment CHAT_TOKEN") in rows
