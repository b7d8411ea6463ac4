"""deploy/compose.yaml: valid against the Compose Specification's JSON schema (as vendored by
check-jsonschema: no network), and the deployment it describes: the image built from this
repository for Slack and Teams, Redis with persistence and a password, the demo PostgreSQL
behind a profile, ``threadline.toml`` and ``.env`` mounted read-only, locked-down services.
Names shared with the code (the port, the files, the drain) are read from it."""

from __future__ import annotations

import inspect
import json
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from agent_core.settings import CONFIG_FILE, DOTENV_FILE, load_sections
from agent_core.state_factory import StateSettings
from bots.cli import COMMANDS
from bots.serving import SHARED, channel_sections
from bots.slack.bot import SlackBot
from bots.slack.settings import SlackSettings
from bots.teams.bot import TeamsBot
from bots.teams.settings import TeamsSettings
from tests.deploy.files import DEPLOY, ROOT, compose, setting_variables, stages

BOTS = {"slack": SlackBot.close, "teams": TeamsBot.close}
COMPOSE_ONLY = {
    "COMPOSE_PROFILES",
    "REDIS_PASSWORD",
    "POSTGRES_PASSWORD",
    "DEMO_DB_READER_PASSWORD",
}
"""Variables of deploy/.env that compose reads, not Threadline."""


def schema() -> dict[str, Any]:
    vendored = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    loaded: dict[str, Any] = json.loads(vendored.read_text())
    return loaded


def problems(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema())
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


def seconds(duration: str) -> float:
    found = re.fullmatch(r"(\d+)s", duration)
    assert found, duration
    return float(found.group(1))


def example_env() -> dict[str, str]:
    """deploy/example.env's variables, commented-out ones too (``# NAME=value``)."""
    names = {}
    for line in (DEPLOY / "example.env").read_text().splitlines():
        if found := re.match(r"^#?\s*([A-Za-z_][A-Za-z0-9_]*)=(\S*)", line):
            names[found.group(1)] = found.group(2)
    return names


def test_the_compose_file_follows_the_compose_specification() -> None:
    assert schema()["title"] == "Compose Specification"
    assert problems(compose()) == []


def test_a_mistake_in_the_compose_file_is_caught() -> None:
    broken = yaml.safe_load(yaml.safe_dump(compose()))
    broken["services"]["slack"]["enviroment"] = broken["services"]["slack"].pop("environment")
    assert problems(broken)
    broken = yaml.safe_load(yaml.safe_dump(compose()))
    broken["services"]["slack"]["depends_on"]["redis"]["condition"] = "service_ready"
    assert problems(broken)
    broken = yaml.safe_load(yaml.safe_dump(compose()))
    broken["services"]["redis"]["volumes"] = "redis-data:/data"
    assert problems(broken)


def test_redis_keeps_what_it_accepted_and_asks_for_a_password() -> None:
    redis = compose()["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert "--requirepass" in command and "${REDIS_PASSWORD:?" in command[-1]
    assert "redis-data:/data" in redis["volumes"]
    assert "ports" not in redis and redis["networks"] == ["backend"]
    assert compose()["networks"]["backend"]["internal"] is True


@pytest.mark.parametrize("service", sorted(BOTS))
def test_each_bot_runs_the_image_of_this_repository(service: str) -> None:
    bot = compose()["services"][service]
    assert bot["profiles"] == [service] and bot["command"] == [service] and service in COMMANDS
    assert (DEPLOY / bot["build"]["context"]).resolve() == ROOT
    extras = bot["build"]["args"]["THREADLINE_EXTRAS"].split(",")
    assert {service, "postgres"} <= set(extras)
    assert bot["init"] is True and bot["restart"] == "unless-stopped"
    drain = inspect.signature(BOTS[service]).parameters["timeout"].default
    assert seconds(bot["stop_grace_period"]) >= drain + 5
    port = stages()[-1].env()["PORT"]
    assert all(p.startswith("127.0.0.1:") and p.endswith(f":{port}") for p in bot["ports"])
    assert bot["depends_on"]["redis"]["condition"] == "service_healthy"
    assert re.fullmatch(
        r"redis://:\$\{REDIS_PASSWORD:\?[^}]+\}@redis:6379/0", bot["environment"]["REDIS_URL"]
    )
    assert set(bot["environment"]) <= setting_variables()


@pytest.mark.parametrize("service", sorted(BOTS))
def test_the_configuration_is_mounted_read_only_where_threadline_reads_it(service: str) -> None:
    bot = compose()["services"][service]
    workdir = stages()[-1].one("WORKDIR").value[0]
    mounts = {m["target"]: m for m in bot["volumes"] if isinstance(m, dict)}
    for name, source in ((CONFIG_FILE, "./threadline.toml"), (DOTENV_FILE, "./.env")):
        mount = mounts[f"{workdir}/{name}"]
        assert mount["source"] == source and mount["read_only"] is True
        assert mount["bind"]["create_host_path"] is False  # a missing file stops compose
    assert (DEPLOY / "threadline.toml").is_file()
    assert "/deploy/.env" in (ROOT / ".gitignore").read_text().splitlines()
    data = stages()[-1].one("VOLUME").value[0]
    assert f"{service}-data:{data}" in bot["volumes"]


@pytest.mark.parametrize("service", ["slack", "teams", "demo-db-seed"])
def test_the_containers_are_locked_down(service: str) -> None:
    bot = compose()["services"][service]
    assert bot["read_only"] is True and bot["tmpfs"] == ["/tmp"]
    if service in BOTS:
        assert bot["cap_drop"] == ["ALL"] and bot["security_opt"] == ["no-new-privileges:true"]


def test_the_demo_database_is_a_profile() -> None:
    services = compose()["services"]
    assert services["postgres"]["profiles"] == services["demo-db-seed"]["profiles"] == ["demo-db"]
    assert "ports" not in services["postgres"]
    seed = services["demo-db-seed"]
    assert (DEPLOY / seed["volumes"][0]["source"]).is_file()
    for service in BOTS:
        waits = services[service]["depends_on"]["demo-db-seed"]
        assert waits == {"condition": "service_completed_successfully", "required": False}


def test_the_example_env_names_what_is_read() -> None:
    names = example_env()
    assert set(names) - COMPOSE_ONLY <= setting_variables()
    profiles = {p for s in compose()["services"].values() for p in s.get("profiles", [])}
    assert set(names["COMPOSE_PROFILES"].split(",")) <= profiles
    interpolated = set(re.findall(r"\$\{(\w+)", (DEPLOY / "compose.yaml").read_text()))
    assert interpolated <= set(names)


@pytest.mark.parametrize("kind", [SlackSettings, TeamsSettings])
def test_the_shipped_threadline_toml_is_accepted(
    kind: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in setting_variables():
        monkeypatch.delenv(name, raising=False)
    environment = {"REDIS_URL": "redis://:pw@redis:6379/0", "SLACK_BOT_TOKEN": "xoxb-1"}
    for name, value in {**environment, "SLACK_SIGNING_SECRET": "s"}.items():
        monkeypatch.setenv(name, value)
    loaded = load_sections(
        [*SHARED, kind], file=DEPLOY / "threadline.toml", known=channel_sections()
    )
    assert loaded.section(StateSettings).backend == "redis"
