"""The README's example is real code: it runs and prints what it promises."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


EXAMPLE = README.parent / "examples" / "weather.py"


def test_readme_agent_is_the_example_that_runs() -> None:
    """The README shows ``examples/weather.py`` as it is (tests/e2e/test_your_agent.py serves
    it with every command); run on its own, it answers."""
    section = re.search(
        r"### Your own agent.*?```python\n(.*?)```", README.read_text(), flags=re.DOTALL
    )
    assert section is not None
    assert section.group(1).strip() in EXAMPLE.read_text()
    out = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == "Today in Lisbon it is 21°C, sunny."


def test_readme_has_exactly_two_commands() -> None:
    commands = re.search(r"## Two commands.*?```bash\n(.*?)```", README.read_text(), re.DOTALL)
    assert commands is not None
    lines = [ln for ln in commands.group(1).splitlines() if ln and not ln.startswith("#")]
    assert lines == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/threadline dev",
        "./scripts/test",
    ]


def test_readme_testing_example_runs_against_the_shipped_fakes() -> None:
    section = re.search(
        r"## Testing your own agent.*?```python\n(.*?)```", README.read_text(), flags=re.DOTALL
    )
    assert section is not None
    out = subprocess.run(
        [sys.executable, "-c", section.group(1)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.splitlines() == [
        "[{'type': 'text', 'text': 'Hi!', 'cache_control': {'type': 'ephemeral'}}]",
        "Hello from Claude. | Hello from Claude.",
    ]


MCP_EXAMPLE = README.parent / "examples" / "mcp_agent.py"
MCP_SERVER = README.parent / "examples" / "mcp_tickets.py"


def test_readme_mcp_example_is_the_example_that_runs() -> None:
    """ "Your tools over MCP" shows ``examples/mcp_agent.py`` and its server as they are; run,
    the agent starts the server over stdio, asks it, and answers."""
    text = README.read_text()
    section = re.search(r"## Your tools over MCP(.*?)\n## ", text, flags=re.DOTALL)
    assert section is not None
    server, agent = re.findall(r"```python\n(.*?)```", section.group(1), flags=re.DOTALL)
    assert textwrap.indent(server.strip(), "    ") in MCP_SERVER.read_text()  # in build_server
    assert agent.strip() in MCP_EXAMPLE.read_text()
    out = subprocess.run(
        [sys.executable, str(MCP_EXAMPLE)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == "Ticket 2: Invoice PDF has the wrong VAT (open)."
