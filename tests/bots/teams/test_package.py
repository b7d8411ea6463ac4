"""``threadline teams-package``: a manifest valid against the 1.29 schema, icons, the zip."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from bots.cli import main
from bots.teams.package import build_manifest
from tests.adapters.teams.schemas import assert_valid_manifest

APP_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
URLS = [
    "--website",
    "https://acme.io",
    "--privacy-url",
    "https://acme.io/privacy",
    "--terms-url",
    "https://acme.io/terms",
]


def test_manifest_is_valid_against_the_schema() -> None:
    manifest = build_manifest(app_id=APP_ID, domains=["bot.contoso.com"], targeted_messages=True)
    assert_valid_manifest(manifest)
    (bot,) = manifest["bots"]
    assert bot["botId"] == APP_ID
    assert bot["scopes"] == ["personal", "groupChat", "team"]
    assert bot["supportsTargetedMessages"] is True


def test_long_names_are_cut_to_the_schema_limits() -> None:
    assert_valid_manifest(build_manifest(app_id=APP_ID, name="N" * 60, developer="D" * 50))


@pytest.mark.parametrize(("app_id", "color"), [("not-a-guid", "#112233"), (APP_ID, "blue")])
def test_bad_values_are_refused(app_id: str, color: str) -> None:
    with pytest.raises(ValueError):
        build_manifest(app_id=app_id, accent_color=color)


def test_command_writes_manifest_icons_and_zip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["teams-package", "--app-id", APP_ID, "--out", str(tmp_path), *URLS]) == 0
    assert "threadline-teams.zip" in capsys.readouterr().out
    with zipfile.ZipFile(tmp_path / "threadline-teams.zip") as archive:
        assert sorted(archive.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(archive.read("manifest.json"))
        color = Image.open(io.BytesIO(archive.read("color.png")))
        outline = Image.open(io.BytesIO(archive.read("outline.png")))
    assert_valid_manifest(manifest)
    assert manifest["developer"]["privacyUrl"] == "https://acme.io/privacy"
    assert (tmp_path / "manifest.json").exists()
    assert color.size == (192, 192) and color.mode == "RGB"
    assert outline.size == (32, 32) and outline.mode == "RGBA"
    pixels = [outline.getpixel((x, y)) for x in range(32) for y in range(32)]
    assert {p[:3] for p in pixels if p[3]} == {(255, 255, 255)}, "outline: white only"
    assert any(p[3] == 0 for p in pixels), "outline: transparent background"


def test_command_without_an_app_id_explains(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MicrosoftAppId", raising=False)
    assert main(["teams-package", "--out", str(tmp_path)]) == 2
    assert "MicrosoftAppId" in capsys.readouterr().err


@pytest.mark.parametrize(
    "urls",
    [
        [],
        [
            "--website",
            "https://acme.io",
            "--privacy-url",
            "https://example.com/privacy",
            "--terms-url",
            "https://acme.io/terms",
        ],
        [
            "--website",
            "http://acme.io",
            "--privacy-url",
            "https://acme.io/p",
            "--terms-url",
            "https://acme.io/t",
        ],
    ],
)
def test_placeholder_urls_are_refused_unless_allowed(
    urls: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The package once defaulted its website, privacy and terms links to a placeholder
    without a word; now it refuses, naming the options, unless --allow-placeholders."""
    assert main(["teams-package", "--app-id", APP_ID, "--out", str(tmp_path), *urls]) == 2
    error = capsys.readouterr().err
    assert "--allow-placeholders" in error
    assert not (tmp_path / "threadline-teams.zip").exists()
    allowed = [
        "teams-package",
        "--app-id",
        APP_ID,
        "--out",
        str(tmp_path),
        *urls,
        "--allow-placeholders",
    ]
    assert main(allowed) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert_valid_manifest(manifest)


async def test_every_command_teams_suggests_is_one_the_agent_answers() -> None:
    """The manifest once advertised /reset, which answered "Unknown command"."""
    from agent_core import Agent, InMemoryAgentMemory, ScriptedLlmService, ToolRegistry
    from agent_core.conversations import Conversation
    from agent_core.users import User
    from agent_core.workflow import DefaultWorkflowHandler

    agent = Agent(
        llm_service=ScriptedLlmService(["hi"]),
        tool_registry=ToolRegistry(),
        agent_memory=InMemoryAgentMemory(),
    )
    ana = User(id="ana", group_memberships=["user"])
    (bot,) = build_manifest(app_id=APP_ID)["bots"]
    titles = [c["title"] for c in bot["commandLists"][0]["commands"]]
    assert titles == ["/help", "/memories", "/delete"]
    for title in titles:
        result = await DefaultWorkflowHandler().try_handle(
            agent, ana, Conversation(id="c1", user=ana), title
        )
        assert result.should_skip_llm
        shown = json.dumps([c.rich_component.model_dump(mode="json") for c in result.components])
        assert "Unknown command" not in shown and "Access Denied" not in shown


SSO_APP = "7a0f5b8e-1c2d-4e3f-9a8b-0c1d2e3f4a5b"


def test_single_sign_on_is_declared_only_when_configured_and_validates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``webApplicationInfo`` (what Teams asks Entra a token for) comes with an SSO app id
    alone; by default its resource is ``api://<domain>/<client id>``."""
    monkeypatch.delenv("TEAMS_SSO_APP_ID", raising=False)
    monkeypatch.delenv("TEAMS_SSO_RESOURCE", raising=False)
    plain = build_manifest(app_id=APP_ID, domains=["bot.contoso.com"])
    assert "webApplicationInfo" not in plain
    signed_on = build_manifest(app_id=APP_ID, domains=["bot.contoso.com"], sso_app_id=SSO_APP)
    assert_valid_manifest(signed_on)
    assert signed_on["webApplicationInfo"] == {
        "id": SSO_APP,
        "resource": f"api://bot.contoso.com/{SSO_APP}",
    }
    assert signed_on["validDomains"] == ["bot.contoso.com", "token.botframework.com"]
    assert signed_on["bots"][0]["supportsTargetedMessages"] is True  # the channel's card
    monkeypatch.setenv("TEAMS_SSO_APP_ID", SSO_APP)
    monkeypatch.setenv("TEAMS_SSO_RESOURCE", f"api://sso.contoso.com/{SSO_APP}")
    argv = ["teams-package", "--app-id", APP_ID, "--out", str(tmp_path), *URLS]
    assert main([*argv, "--domain", "bot.contoso.com"]) == 0
    written = json.loads((tmp_path / "manifest.json").read_text())
    assert_valid_manifest(written)
    assert written["webApplicationInfo"]["resource"] == f"api://sso.contoso.com/{SSO_APP}"
    with pytest.raises(ValueError, match="--domain"):
        build_manifest(app_id=APP_ID, sso_app_id=SSO_APP)  # no domain, no resource
