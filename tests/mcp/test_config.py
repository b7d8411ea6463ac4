"""``[[mcp]]``: what a server may be configured as, what is refused and why, and that no
secret ever shows in ``threadline config``."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError

from agent_core.mcp import McpServerConfig, McpSettings, check_mcp
from agent_core.settings import ConfigError, load_sections


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"command": "x", "url": "https://x.example/mcp"}, "either command"),
        ({}, "either command"),
        ({"url": "http://tickets.example.com/mcp"}, "url must be https"),
        ({"url": "ftp://127.0.0.1/mcp"}, "url must be https"),
        ({"url": "https://bo:pw@t.example/mcp"}, "must not carry credentials"),
        ({"command": "x", "headers": {"A": "b"}}, "headers are for url servers"),
        ({"url": "https://t.example/mcp", "env": {"A": "b"}}, "env and env_from"),
        ({"command": "x", "auth": "user"}, "auth is for url servers"),
        ({"url": "https://t.example/mcp", "auth": "service"}, "needs token"),
        ({"url": "https://t.example/mcp", "token": "t"}, "are for auth = 'service'"),
        (
            {
                "url": "https://t.example/mcp",
                "auth": "service",
                "token": "t",
                "headers": {"Authorization": "x"},
            },
            "conflicts with auth",
        ),
        ({"command": "x", "tools": ["a"], "exclude": ["a"]}, "both name a"),
        (
            {"command": "x", "allowed_groups": ["support"], "tool_groups": {"a": ["finance"]}},
            "can only narrow",
        ),
        ({"command": "x", "tools": ["a"], "approval": {"b": "never"}}, "not offered"),
        ({"command": "x", "approval": {"a": "sometimes"}}, "approval.a"),
        ({"command": "x", "name": "Tickets!"}, "string_pattern_mismatch"),
    ],
)
def test_a_server_configured_wrong_is_refused_saying_why(
    settings: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        McpServerConfig(**{"name": "t", **settings})
    assert problem in str(refused.value) or problem in str(refused.value.errors())


def test_plain_http_is_for_this_machine_only() -> None:
    assert McpServerConfig(name="t", url="http://127.0.0.1:8765/mcp").transport == "http"


def test_a_tool_allowed_is_always_a_tool_of_a_server_allowed() -> None:
    server = McpServerConfig(
        name="t",
        command="x",
        allowed_groups=["support", "leads"],
        tool_groups={"close": ["leads"]},
        tools=["search", "close"],
    )
    assert server.groups_for("close") == ("leads",)
    assert server.groups_for("search") == ("support", "leads")
    assert server.offers("search") and not server.offers("delete")


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "threadline.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_mcp_tables_load_from_threadline_toml_and_show_no_secret(tmp_path: Path) -> None:
    from bots.serving import GeneralSettings

    file = _file(
        tmp_path,
        f"""
mcp_token_key = "{Fernet.generate_key().decode()}"
mcp_callback_url = "https://bot.example.com/oauth/mcp/callback"

[[mcp]]
name = "tickets"
url = "https://tickets.example.com/mcp"
auth = "service"
token = "svc-TOKEN-123456"
headers = {{ "X-Api-Key" = "HEADER-SECRET-9876" }}

[[mcp]]
name = "files"
command = "files-mcp"
env = {{ ROOT_PASSWORD = "ENV-SECRET-5555" }}
""",
    )
    loaded = load_sections([GeneralSettings, McpSettings], file=file)
    settings = loaded.section(McpSettings)
    assert [s.name for s in settings.mcp] == ["tickets", "files"]
    assert settings.mcp[0].bearer_token() == "svc-TOKEN-123456"
    shown = "\n".join(f"{k} = {v} ({o})" for k, v, o in loaded.rows())
    assert "mcp = tickets, files" in shown
    for secret in ("svc-TOKEN-123456", "HEADER-SECRET-9876", "ENV-SECRET-5555"):
        assert secret not in shown
        assert secret not in repr(settings)
    assert "mcp_token_key = ********" in shown


def test_an_unknown_key_in_an_mcp_table_is_named(tmp_path: Path) -> None:
    from bots.serving import GeneralSettings

    file = _file(tmp_path, '[[mcp]]\nname = "t"\ncommand = "x"\ncommnd = "y"\n')
    with pytest.raises(ConfigError) as refused:
        load_sections([GeneralSettings, McpSettings], file=file)
    assert "mcp: #1 commnd: Extra inputs are not permitted" in str(refused.value)


def test_people_signing_in_need_a_key_and_a_callback_or_the_bot_refuses_to_start() -> None:
    settings = McpSettings(mcp=[{"name": "t", "url": "https://t.example/mcp", "auth": "user"}])
    problems = [str(p) for p in check_mcp(settings.mcp, settings)]
    assert any("needs mcp_token_key" in p and "Fernet.generate_key" in p for p in problems)
    assert any("needs mcp_callback_url" in p for p in problems)
    bad_key = McpSettings(mcp=settings.mcp, mcp_token_key="hunter2", mcp_callback_url=None)
    assert any("not a Fernet key" in str(p) for p in check_mcp(settings.mcp, bad_key))
    assert all("hunter2" not in str(p) for p in check_mcp(settings.mcp, bad_key))
    good = McpSettings(
        mcp=settings.mcp,
        mcp_token_key=Fernet.generate_key().decode(),
        mcp_callback_url="https://bot.example.com/oauth/mcp/callback",
    )
    assert check_mcp(good.mcp, good) == []


def test_a_server_name_used_twice_is_refused() -> None:
    twice = [McpServerConfig(name="t", command="a"), McpServerConfig(name="t", command="b")]
    assert "used twice" in str(check_mcp(twice, McpSettings())[0])


def test_the_callback_url_must_be_https_and_the_callback_path() -> None:
    with pytest.raises(ValidationError, match="must be https"):
        McpSettings(mcp_callback_url="http://bot.example.com/oauth/mcp/callback")
    with pytest.raises(ValidationError, match="must end with"):
        McpSettings(mcp_callback_url="https://bot.example.com/callback")
