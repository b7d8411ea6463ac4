"""`threadline --help` reads like a product: what each command does, the environment it
reads (from the settings it loads, so the list cannot drift), examples; `--version`."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from pydantic import AliasChoices

from bots.cli import COMMANDS, main
from bots.slack.settings import SlackSettings
from bots.teams.settings import TeamsSettings


def output(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    assert exit_.value.code == 0
    return capsys.readouterr().out


def variables(kind: type[SlackSettings] | type[TeamsSettings]) -> list[str]:
    names = []
    for info in kind.model_fields.values():
        if isinstance(info.validation_alias, AliasChoices):
            names += [str(c) for c in info.validation_alias.choices[1:]]
    return names


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert output(capsys, "--version").strip() == f"threadline {version('threadline')}"


def test_the_top_help_is_a_product_manual(capsys: pytest.CaptureFixture[str]) -> None:
    """It printed an internal docstring with reST markup."""
    text = output(capsys, "--help")
    assert "``" not in text and "Threadline puts an LLM agent into Slack" in text
    for name, command in COMMANDS.items():
        assert name in text and command.summary[:30] in " ".join(text.split())
    assert "threadline dev" in text and "threadline doctor" in text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_says_what_it_does_with_examples(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = output(capsys, name, "--help")
    assert COMMANDS[name].description.split()[0] in text
    assert "examples:\n  " in text and "``" not in text


@pytest.mark.parametrize(("name", "kind"), [("slack", SlackSettings), ("teams", TeamsSettings)])
def test_the_channels_list_every_variable_they_read(
    name: str, kind: type[SlackSettings] | type[TeamsSettings], capsys: pytest.CaptureFixture[str]
) -> None:
    text = output(capsys, name, "--help")
    assert f"pip install 'threadline[{name}]'" in text
    for variable in [*variables(kind), "ANTHROPIC_API_KEY", "REDIS_URL", "THREADLINE_APP"]:
        assert variable in text, variable


def test_the_local_tools_list_what_they_read(capsys: pytest.CaptureFixture[str]) -> None:
    text = output(capsys, "dev", "--help")
    assert "--open" in text and "ANTHROPIC_API_KEY" in text and "THREADLINE_DATA_DIR" in text
    assert "REDIS_URL" not in text  # the console keeps its state in memory


def test_every_log_line_of_a_command_masks_url_passwords(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression for issue 22 item 9: passwords inside URLs reached logs and errors."""
    import logging

    from bots.cli import main

    main(["config"])
    caplog.set_level(logging.INFO)
    logger = logging.getLogger("some.library")
    logger.info("connecting to %s", "redis://:L0g-S3cret@cache:6379/0")
    try:
        raise RuntimeError("failed for postgresql://bo:L0g-S3cret@db/x")
    except RuntimeError:
        logger.exception("could not connect")
    assert "L0g-S3cret" not in caplog.text
    assert "redis://:***@cache" in caplog.text and "postgresql://bo:***@db" in caplog.text


@pytest.mark.parametrize(
    "url",
    ["bo:C0nf-S3cret@db/x", "postgresql//bo:C0nf-S3cret@db/x", "mysql://bo:C0nf-S3cret@db:port/x"],
)
def test_config_never_prints_a_malformed_database_url_whole(
    url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Issue 35: `threadline config` printed a malformed THREADLINE_DATABASE_URL whole, its
    password too, while the errors about the same URL masked it."""
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv("THREADLINE_DATABASE_URL", url)
    main(["config"])
    text = capsys.readouterr().out
    assert "C0nf-S3cret" not in text
    assert "(not a database URL" in text
