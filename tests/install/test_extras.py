"""The base install runs the console and the chat; each channel and the PNG charts are
extras, and a command whose extra is missing says which (as pip would be told)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bots.cli import COMMANDS
from bots.extras import EXTRAS, MissingExtra, missing, require

ROOT = Path(__file__).resolve().parents[2]
EXTRA_MODULES = (
    "slack_bolt,botbuilder,botframework,msal,matplotlib,PIL,prometheus_client,langgraph,duckdb,"
    "openpyxl,mcp,mcp_types"
)
"""What the extras bring: blocked, these make the interpreter a base install."""


def base_install(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``threadline ARGV`` as a base install runs it."""
    clean = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "tests.install.blocked", EXTRA_MODULES, "--", *argv],
        cwd=ROOT,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["slack"], "slack"),
        (["teams"], "teams"),
        (["teams-package", "--app-id", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"], "teams"),
    ],
)
def test_a_missing_extra_is_named_with_the_line_that_installs_it(
    argv: list[str], extra: str
) -> None:
    result = base_install(*argv)
    assert result.returncode == 2, result.stderr
    assert f"needs the '{extra}' extra" in result.stderr
    assert f"pip install 'threadline[{extra}]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_every_command_still_has_its_help_in_a_base_install() -> None:
    for name in COMMANDS:
        result = base_install(name, "--help")
        assert result.returncode == 0, (name, result.stderr)
        assert "usage: threadline" in result.stdout


def test_doctor_names_the_extra_a_configured_channel_needs() -> None:
    result = base_install(
        "doctor",
        env={
            "MicrosoftAppId": "x",
            "MicrosoftAppPassword": "y",
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_APP_TOKEN": "xapp-1",
            "SLACK_API_URL": "http://127.0.0.1:9/api/",
        },
    )
    assert "pip install 'threadline[teams]'" in result.stdout
    assert "pip install 'threadline[slack]'" in result.stdout
    assert "Traceback" not in result.stderr


def test_the_console_answers_with_native_charts_in_a_base_install(tmp_path: Path) -> None:
    """Command 1 (`pip install -e .` then `threadline dev`) needs no extra: without
    matplotlib both channels draw the chart natively."""
    script = f"""
import asyncio, json, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.install.blocked import Uninstalled
sys.meta_path.insert(0, Uninstalled(set({EXTRA_MODULES!r}.split(","))))
from aiohttp.test_utils import TestClient, TestServer
from bots.demo.agent import DemoSettings, build_demo_agent
from bots.dev.app import create_app
from bots.dev.identity import ConsoleUserResolver
from bots.dev.turns import ConsoleOptions

async def main():
    agent = build_demo_agent(DemoSettings(data_dir={str(tmp_path)!r}, use_scripted_model=True,
                                          user_resolver=ConsoleUserResolver()))
    app = create_app(agent, options=ConsoleOptions(pace=0.0))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        question = {{"text": "Who are our top customers by revenue?", "thread_id": "1.0"}}
        response = await client.post("/api/turns", json=question)
        print(await response.text())
        print("MODULES", json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in
              {EXTRA_MODULES!r}.split(","))))
asyncio.run(main())
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert '"state":"done"' in result.stdout
    assert '"type":"data_visualization"' in result.stdout  # Slack's own chart
    assert '"type":"Chart.VerticalBar"' in result.stdout  # Teams' own chart
    assert '"fallback":{"type":"FactSet"' in result.stdout  # the numbers, for old clients
    assert "files.completeUploadExternal" not in result.stdout  # no PNG anywhere
    assert result.stdout.rstrip().endswith("MODULES []")


def test_require_names_what_is_missing() -> None:
    assert set(EXTRAS) == {
        *("slack", "teams", "charts", "graph", "files"),
        *("bedrock", "vertex", "foundry", "mcp"),
    }
    assert missing("slack") == []  # the test environment installs every extra
    require("teams")
    with pytest.raises(MissingExtra, match=r"pip install 'threadline\[charts\]'"):
        raise MissingExtra("charts", "PNG charts", ["matplotlib"])


def test_the_wheel_ships_the_renderer_and_its_licence(tmp_path: Path) -> None:
    """After a plain `pip install` the console has Microsoft's renderer: no npm, no network."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("threadline-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    vendor = "bots/dev/vendor/adaptivecards/"
    assert {
        f"{vendor}adaptivecards.min.js",
        f"{vendor}LICENSE",
        f"{vendor}adaptivecards.min.js.LICENSE.txt",
    } <= names
    assert {"bots/dev/index.html", "bots/dev/app.js", "bots/dev/teamscharts.js"} <= names
    metadata = (
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    )
    for extra in ("slack", "teams", "charts"):
        assert f"Provides-Extra: {extra}" in metadata
    assert "matplotlib" not in [
        line.split(" ")[1].split(">")[0]
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert json.loads((ROOT / "bots/dev/package.json").read_text())["dependencies"] == {
        "adaptivecards": "3.0.6"
    }


@pytest.mark.parametrize(
    ("provider", "blocked", "extra"),
    [("bedrock", "boto3,botocore", "bedrock"), ("vertex", "google", "vertex")],
)
def test_a_provider_without_its_extra_is_named_with_its_install_line(
    provider: str, blocked: str, extra: str, tmp_path: Path
) -> None:
    """``[llm] provider`` set, its packages absent: ``threadline doctor``'s model line names
    the extra and the line that installs it (the same problem stops a server at start)."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "AWS_", "THREADLINE_", "GOOGLE_", "CLOUD_ML"))
    }
    env = {
        **clean,
        "THREADLINE_LLM_PROVIDER": provider,
        "AWS_REGION": "us-east-1",
        "CLOUD_ML_REGION": "us-east5",
        "THREADLINE_DATA_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-m", "tests.install.blocked", blocked, "--", "doctor"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("✗ model"))
    assert f"needs the '{extra}' extra" in line, line
    assert f"pip install 'threadline[{extra}]'" in line
    assert "Traceback" not in result.stderr


def test_mcp_servers_without_the_extra_name_it() -> None:
    """``agent_core.mcp`` imports in a base install (configuration, errors); a hub of
    servers refuses at once, naming the extra and its install line."""
    code = (
        "import sys\n"
        "from tests.install.blocked import Uninstalled\n"
        "sys.meta_path.insert(0, Uninstalled({'mcp', 'mcp_types'}))\n"
        "from agent_core.mcp import McpHub, McpNotInstalled, McpServerConfig\n"
        "try:\n"
        "    McpHub([McpServerConfig(name='tickets', command='tickets-mcp')])\n"
        "except McpNotInstalled as missing:\n"
        "    print(missing)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == (
        "MCP servers need the 'mcp' extra (missing: mcp): pip install 'threadline[mcp]'"
    ), result.stderr


def test_doctor_names_the_mcp_extra_configured_servers_need(tmp_path: Path) -> None:
    config = tmp_path / "threadline.toml"
    config.write_text('[[mcp]]\nname = "tickets"\ncommand = "tickets-mcp"\n')
    result = base_install("doctor", "--config", str(config))
    assert "MCP servers need the 'mcp' extra (missing: mcp)" in result.stdout, result.stdout
    assert "pip install 'threadline[mcp]'" in result.stdout
    assert "Traceback" not in result.stderr
