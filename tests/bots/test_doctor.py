"""``threadline doctor`` against the fake Slack Web API, the fake Bot Connector and the fake
Messages API, and ``threadline config``: every check one line, secrets never shown."""

from __future__ import annotations

import argparse
import os
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import msal
import pytest
from botframework.connector.auth import ManagedIdentityAppCredentials

from adapters.slack.testing import FakeSlackApi
from adapters.teams.testing import FakeBotConnector
from agent_core.llm.testing import FakeAnthropic
from bots.cli import main
from bots.doctor import diagnose
from bots.slack.settings import BOT_SCOPES
from tests.support.postgres_shop import OWNER_PASSWORD, Shop

KEY = "sk-ant-doctor-test-key"


EXAMPLE = f"{Path(__file__).resolve().parents[2] / 'examples' / 'weather.py'}:agent"


def args(app: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(command="doctor", config=None, app=app)


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A clean working folder and an environment with nothing of Threadline's in it."""
    prefixes = ("SLACK_", "THREADLINE_", "ANTHROPIC_", "Microsoft", "TEAMS_", "TO_", "REDIS")
    for name in [n for n in os.environ if n.startswith(prefixes)]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("THREADLINE_DATA_DIR", str(tmp_path / "data"))
    yield tmp_path


@asynccontextmanager
async def platforms(
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[FakeAnthropic, FakeSlackApi, FakeBotConnector]]:
    """The three fakes, and the environment of a deployment configured for all of them."""
    async with FakeAnthropic() as claude, FakeSlackApi() as slack, FakeBotConnector() as teams:
        claude.api_keys = {KEY}
        slack.scopes = list(BOT_SCOPES)
        environment = {
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": claude.base_url,
            "SLACK_BOT_TOKEN": "xoxb-doctor",
            "SLACK_SIGNING_SECRET": "s",
            "SLACK_API_URL": slack.base_url,
            "MicrosoftAppType": "UserAssignedMSI",
            "MicrosoftAppId": teams.app_id,
            "MicrosoftAppTenantId": "tenant-1",
            "TO_BOT_FROM_CHANNEL_OPENID_METADATA_URL": teams.openid_metadata_url,
            "TO_BOT_FROM_CHANNEL_TOKEN_ISSUER": teams.issuer,
            "TO_CHANNEL_FROM_BOT_OAUTH_SCOPE": "https://api.botframework.com",
            "IDENTITY_ENDPOINT": teams.managed_identity_endpoint,
            "IDENTITY_HEADER": teams.identity_header,
        }
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(ManagedIdentityAppCredentials, "global_token_cache", msal.TokenCache())
        yield claude, slack, teams


def sqlite_database(folder: Path) -> str:
    path = folder / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
    return f"sqlite:///{path}"


async def test_a_ready_deployment_passes_every_check_and_spends_no_tokens(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("THREADLINE_DATABASE_URL", sqlite_database(folder))
    async with platforms(monkeypatch) as (claude, slack, teams):
        found = [str(check) for check in await diagnose(args(app=EXAMPLE))]
        assert all(line.startswith("✓") for line in found), found
        assert len(found) == 10, found
        edges = [line for line in found if line.startswith("✓ Organisation's edge")]
        assert len(edges) == 2 and all("shared places: private" in line for line in edges)
        assert any("members: people of workspace T1" in line for line in edges), edges
        assert any(
            line.startswith("✓ database: sqlite:///") and "read-only" in line for line in found
        ), found
        assert claude.requests == [] and len(claude.model_lookups) == 1  # no tokens spent
        assert [c.method for c in slack.calls] == ["auth.test"]
        assert teams.token_requests, "the bot's identity fetched a Bot Connector token"


async def test_each_broken_part_is_one_failed_line_with_its_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with platforms(monkeypatch) as (claude, slack, _):
        claude.api_keys = {"another-key"}
        slack.scopes = [s for s in BOT_SCOPES if s != "usergroups:read"]
        monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens there
        found = {check.what: check for check in await diagnose(args())}
    assert found["model"].status == "fail" and "ANTHROPIC_API_KEY" in found["model"].detail
    assert found["Slack scopes"].status == "fail"
    assert "add usergroups:read" in found["Slack scopes"].detail
    assert found["state"].status == "fail" and "redis" in found["state"].detail
    assert found["Teams credentials"].status == "ok"
    assert KEY not in repr(found)


async def test_every_problem_is_reported_in_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (issue 23): a missing signing secret stopped the Slack checks, so the bot
    token it was given (here: one Slack refuses) went unchecked until the next run."""
    async with platforms(monkeypatch) as (_, slack, _):
        monkeypatch.delenv("SLACK_SIGNING_SECRET")
        slack.tokens = {"xoxb-another"}
        found = [str(check) for check in await diagnose(args())]
    assert "✗ Slack settings: HTTP mode needs SLACK_SIGNING_SECRET" in found
    assert any(line.startswith("✗ Slack bot token: auth.test says invalid_auth") for line in found)


def test_a_database_user_that_may_write_is_a_loud_warning_not_a_failure(
    pg_shop: Shop, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 14: "if the configured database user can write, the start-up log and
    threadline doctor say so loudly"; a database that cannot be reached is a failure."""
    monkeypatch.setenv("THREADLINE_DATABASE_URL", pg_shop.owner_url)
    assert main(["doctor"]) == 0
    captured = capsys.readouterr()
    line = next(x for x in captured.out.splitlines() if x.startswith("! database"))
    assert line.startswith("! database: WARNING: postgresql+psycopg://owner:***@")
    assert "the database user can write (INSERT/UPDATE/DELETE on" in line
    assert OWNER_PASSWORD not in captured.out and "ready, 1 warning(s)" in captured.out

    monkeypatch.setenv("THREADLINE_DATABASE_URL", pg_shop.reader_url)
    assert main(["doctor"]) == 0
    assert "✓ database: postgresql+psycopg://reader:***@" in capsys.readouterr().out

    monkeypatch.setenv("THREADLINE_DATABASE_URL", "postgresql://nobody:x@127.0.0.1:1/shop")
    assert main(["doctor"]) == 1
    assert "✗ database: postgresql+psycopg://nobody:***@127.0.0.1:1/shop: unreachable" in (
        capsys.readouterr().out
    )


def test_the_command_exits_non_zero_and_names_the_config_line(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "threadline.toml").write_text('[llm]\nmodle = "x"\n', encoding="utf-8")
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "✗ configuration: threadline.toml:2 [llm] modle: unknown setting" in out
    assert "did you mean 'model'?" in out


def test_config_shows_where_each_value_came_from_and_masks_secrets(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "threadline.toml").write_text(
        f'app = "{EXAMPLE}"\n[database]\nurl = "postgresql://bo:hunter2@db/shop"\n'
        '[slack]\nadmin_users = ["U1"]\n',
        encoding="utf-8",
    )
    (folder / ".env").write_text("SLACK_BOT_TOKEN=xoxb-from-dotenv\nSLACK_SIGNING_SECRET=s\n")
    monkeypatch.setenv("SLACK_ADMIN_USERS", "U2,U3")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "hunter2" not in out and "xoxb-from-dotenv" not in out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "threadline.toml:1 app" in lines["app"]
    assert "postgresql://bo:***@db/shop" in lines["database.url"]
    assert (
        "********" in lines["slack.bot_token"]
        and ".env SLACK_BOT_TOKEN" in lines["slack.bot_token"]
    )
    assert "U2, U3" in lines["slack.admin_users"] and "environment" in lines["slack.admin_users"]
    assert "(not configured)" in lines["teams"]


def test_config_and_doctor_mask_every_url_password(
    pg_shop: Shop, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression for issue 22 item 9: ``threadline config`` printed ``REDIS_URL``'s password
    (``redis://:pw@host``, no user), and a malformed ``THREADLINE_DATABASE_URL`` was echoed
    whole, password included."""
    monkeypatch.setenv("REDIS_URL", "redis://:Redis-S3cret@127.0.0.1:1/0")
    monkeypatch.setenv("THREADLINE_DATABASE_URL", "postgresql://bo:Db-S3cret@db:notaport/x")
    assert main(["config"]) == 0
    assert main(["doctor"]) == 1
    shown = capsys.readouterr()
    assert "redis://:***@127.0.0.1:1/0" in shown.out
    for secret in ("Redis-S3cret", "Db-S3cret"):
        assert secret not in shown.out and secret not in shown.err
    assert "✗ database: not a database URL" in shown.out


def test_doctor_fails_a_superuser_database(
    pg_shop: Shop, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 item 2: a superuser (or a member of pg_read_server_files...) escapes the
    read-only transaction, so doctor fails it unless the sandbox opt-out is set."""
    monkeypatch.setenv("THREADLINE_DATABASE_URL", pg_shop.server.url(database="shop"))
    assert main(["doctor"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if "database" in x)
    assert line.startswith("✗ database:") and "is a superuser" in line
    monkeypatch.setenv("THREADLINE_DATABASE_ALLOW_PRIVILEGED_USER", "true")
    assert main(["doctor"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "database" in x)
    assert line.startswith("! database: WARNING:") and "allow_privileged_user" in line
