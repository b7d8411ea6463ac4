"""Every benchmark still runs: each script in ``benchmarks/`` runs in its own process at a
tiny size and must end with its machine-readable line. No figure is checked; this only keeps
the scripts from rotting (one once imported a test helper that had moved)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.state.testing import REDIS_SERVER, redis_available

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

needs_redis = [
    pytest.mark.redis,
    pytest.mark.skipif(not redis_available(), reason=f"needs redis-server ({REDIS_SERVER})"),
]
needs_browser = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="needs Debian's chromium and chromium-driver",
    ),
]

SMALL = {
    # --no-install: the vanna reference runs only if its virtualenv already exists
    "approval_turn.py": (["--turns", "3", "--warmup", "1", "--rounds", "1", "--no-redis"], []),
    "audit_trail.py": (["--turns", "5", "--warmup", "1", "--rounds", "1"], needs_redis),
    "forget.py": (["--records", "200"], needs_redis),
    "agent_turn.py": (["--turns", "5", "--warmup", "1", "--rounds", "1", "--no-install"], []),
    "burst.py": (["--mentions", "4", "--people", "2", "--window", "0.5"], needs_redis),
    "console_first_answer.py": (["--runs", "1", "--turns", "2"], needs_browser),
    "graph_overhead.py": (["--turns", "5", "--warmup", "1", "--rounds", "1"], []),
    "import_time.py": (["--rounds", "1", "--no-install"], []),
    "llm_stream.py": (["--rounds", "1"], []),
    "mcp_call.py": (["--calls", "5", "--rounds", "1"], []),
    "prompt_cache.py": (["--turns", "2"], []),
    "query_overhead.py": (
        ["--runs", "5", "--role-questions", "5", "--role-kinds", "1"],
        [pytest.mark.postgres],
    ),
    "redis_round_trips.py": (["--turns", "1", "--rounds", "1"], needs_redis),
    "schedules.py": (["--schedules", "40"], needs_redis),
    "schema_retrieval.py": (["--tables-per-branch", "2", "--questions", "10"], []),
    "scale.py": (["--seconds", "0.5", "--rounds", "1"], needs_redis),
    "shared_files.py": (
        [
            *("--rows", "100", "--xlsx-rows", "10", "--rounds", "1", "--queries", "2"),
            *("--bomb-cells", "2000", "--max-cells", "1000"),
        ],
        [],
    ),
    "slack_plan_calls.py": (["--turns", "1", "--steps", "2"], []),
    "slack_rss.py": (["--turns", "40", "--step", "20"], []),
    "slack_ingress.py": (
        ["--dispatches", "20", "--requests", "50", "--seconds", "1", "--paced-seconds", "0.2"],
        needs_redis,
    ),
    "slack_token_rotation.py": (["--dispatches", "20", "--turns", "10", "--rounds", "1"], []),
    "slack_thread_calls.py": (
        ["--mentions", "2", "--threads", "2", "--dispatches", "5"],
        needs_redis,
    ),
    "teams_ingress.py": (["--activities", "10", "--warmup", "2", "--http", "20"], []),
}


def test_every_benchmark_has_a_small_size() -> None:
    scripts = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
    assert scripts == sorted(SMALL), "give the new benchmark a small size in SMALL"


@pytest.mark.parametrize(
    "script", [pytest.param(name, marks=marks) for name, (_, marks) in sorted(SMALL.items())]
)
def test_benchmark_runs_and_prints_its_result_line(script: str) -> None:
    arguments, _ = SMALL[script]
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert json.loads(last)["benchmark"] == Path(script).stem
