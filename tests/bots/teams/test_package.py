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


def test_manifest_is_valid_against_the_schema() -> None:
    manifest = build_manifest(app_id=APP_ID, domains=["bot.contoso.com"],
                              targeted_messages=True)
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


def test_command_writes_manifest_icons_and_zip(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["teams-package", "--app-id", APP_ID, "--out", str(tmp_path)]) == 0
    assert "threadline-teams.zip" in capsys.readouterr().out
    with zipfile.ZipFile(tmp_path / "threadline-teams.zip") as archive:
        assert sorted(archive.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(archive.read("manifest.json"))
        color = Image.open(io.BytesIO(archive.read("color.png")))
        outline = Image.open(io.BytesIO(archive.read("outline.png")))
    assert_valid_manifest(manifest)
    assert (tmp_path / "manifest.json").exists()
    assert color.size == (192, 192) and color.mode == "RGB"
    assert outline.size == (32, 32) and outline.mode == "RGBA"
    pixels = [outline.getpixel((x, y)) for x in range(32) for y in range(32)]
    assert {p[:3] for p in pixels if p[3]} == {(255, 255, 255)}, "outline: white only"
    assert any(p[3] == 0 for p in pixels), "outline: transparent background"


def test_command_without_an_app_id_explains(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MicrosoftAppId", raising=False)
    assert main(["teams-package", "--out", str(tmp_path)]) == 2
    assert "MicrosoftAppId" in capsys.readouterr().err
