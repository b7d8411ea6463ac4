"""The README's example is real code: it runs and prints what it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "the README has no python example"
    out = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "It's 21°C and sunny in Lisbon." in out


def test_readme_has_exactly_two_commands() -> None:
    commands = re.search(r"## Two commands.*?```bash\n(.*?)```", README.read_text(), re.DOTALL)
    assert commands is not None
    lines = [ln for ln in commands.group(1).splitlines() if ln and not ln.startswith("#")]
    assert lines == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/threadline dev",
        "./scripts/test",
    ]


def test_readme_testing_example_runs_against_the_shipped_fakes() -> None:
    section = re.search(r"## Testing your own agent.*?```python\n(.*?)```", README.read_text(),
                        flags=re.DOTALL)
    assert section is not None
    out = subprocess.run(
        [sys.executable, "-c", section.group(1)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert out.splitlines() == [
        "[{'type': 'text', 'text': 'Hi!'}]",
        "Hello from Claude. | Hello from Claude.",
    ]
