"""Import time in a fresh process: ``import agent_core`` against ``import vanna`` (2.0.2, the
reference, in its own virtualenv), and what an agent actually needs: ``from agent_core import
Agent`` against ``from vanna import Agent``.

Each figure is the wall time of the import statement alone, measured inside a new Python
process (interpreter start-up excluded); rounds alternate ours and the reference, and we
quote the median [min..max] over ``--rounds`` and the ratio of medians. For information, the
floor every ``agent_core`` agent stands on: ``pydantic`` (a model class) and ``asyncio``.

    .venv/bin/python benchmarks/import_time.py [--rounds 9] [--no-install]

``--no-install`` never creates the reference's virtualenv (without one, only our side runs).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _reference import reference_python
from _stats import result_line

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 0.10
TIMED = "import time; t = time.perf_counter(); {}; print(time.perf_counter() - t)"
STATEMENTS = {
    "ours": "import agent_core",
    "ours_agent": "from agent_core import Agent",
    "floor": "import asyncio; from pydantic import BaseModel",
    "reference": "import vanna",
    "reference_agent": "from vanna import Agent",
}


def seconds(python: str, statement: str) -> float:
    out = subprocess.run(
        [python, "-c", TIMED.format(statement)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="skip the reference unless its virtualenv already exists",
    )
    args = parser.parse_args()
    reference = reference_python(install=not args.no_install)
    runs: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(args.rounds):
        for name, statement in STATEMENTS.items():
            if name.startswith("reference"):
                if reference is not None:
                    runs[name].append(seconds(str(reference), statement))
            else:
                runs[name].append(seconds(sys.executable, statement))
    figures: dict[str, object] = {"rounds": args.rounds, "goal_s": GOAL_S}
    for name, values in runs.items():
        if values:
            figures[name] = {
                "median_s": round(statistics.median(values), 4),
                "min_s": round(min(values), 4),
                "max_s": round(max(values), 4),
            }
            print(
                f"{STATEMENTS[name]:48} median {statistics.median(values):.3f} s "
                f"[{min(values):.3f}..{max(values):.3f}]"
            )
    for ours, theirs in (("ours", "reference"), ("ours_agent", "reference_agent")):
        if runs[theirs]:
            ratio = statistics.median(runs[ours]) / statistics.median(runs[theirs])
            figures[f"{ours}_ratio"] = round(ratio, 3)
            print(f"{STATEMENTS[ours]} / {STATEMENTS[theirs]}: {ratio:.3f}")
    print(f"goal: import agent_core <= {GOAL_S} s")
    print(result_line("import_time", **figures))


if __name__ == "__main__":
    main()
