"""The console's first answer: process start -> first streamed token in the browser, and
the console's memory after 100 turns.

1. First token (goal < 2 s): headless Chromium is already open (a person's browser is);
   the clock starts when ``threadline dev --port 0`` is spawned, then the page is loaded, the
   first demo question is typed, and the clock stops when the page draws the first streamed
   token of the answer in the Slack view (and, for information, the Teams view). Scripted
   demo model at the console's default pacing. Baseline, same run: a cold Python process that
   builds the demo agent and iterates ``agent.send_message`` itself until the first text
   token (no web server, no adapters, no browser). Medians over ``--runs`` fresh processes.
2. Memory: one console process answers 100 turns through the page's API (10 threads of 10
   questions, scripted model without chunk delay); RSS after the first turn and after 100.

    .venv/bin/python benchmarks/console_first_answer.py [--runs 5] [--turns 100]

Needs Debian's chromium + chromium-driver. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from _stats import result_line  # noqa: E402

QUESTION = "Who are our top customers by revenue?"
QUESTIONS = [
    QUESTION,
    "Show the monthly revenue trend",
    "Sales by category",
    "How many orders did we get last month?",
    "What are our best-selling products?",
    "Revenue by country",
    "/help",
]
CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,900",
]
DIRECT = """
import asyncio, sys, time
t0 = float(sys.argv[1])
from agent_core.components import RichTextComponent
from bots.demo.agent import DemoSettings, build_demo_agent
from bots.dev.identity import ConsoleUserResolver, Persona
async def main():
    agent = build_demo_agent(DemoSettings(data_dir=sys.argv[2], use_scripted_model=True,
        stream_delay=0.03, user_resolver=ConsoleUserResolver()))
    persona = Persona()
    async for c in agent.send_message(persona.request_context("t1"), sys.argv[3],
                                      conversation_id="c1"):
        if isinstance(c.rich_component, RichTextComponent) and c.rich_component.content:
            print(time.time() - t0, flush=True)
            return
asyncio.run(main())
"""


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return {**clean, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}


def spawn_console(data_dir: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bots.cli",
            "dev",
            "--port",
            "0",
            "--scripted",
            "--data-dir",
            data_dir,
            *extra,
        ],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    match = re.search(r"(http://\S+)", process.stdout.readline())
    if not match:
        process.kill()
        raise SystemExit("threadline dev printed no URL")
    return process, match.group(1)


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in [*CHROME_FLAGS, f"--user-data-dir={tempfile.mkdtemp(prefix='tl-bench-')}"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def first_answer(driver: Any, data_dir: str) -> dict[str, float]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    t0 = time.time()
    process, url = spawn_console(data_dir)
    listening = time.time() - t0
    try:
        driver.get(url)
        wait = WebDriverWait(driver, 20, poll_frequency=0.005)
        wait.until(
            lambda d: d.execute_script(  # ready, and the welcome shown
                "return document.body.dataset.ready && !document.body.classList.contains('running')"
            )
        )
        page = time.time() - t0
        driver.find_element(By.ID, "input").send_keys(QUESTION + "\n")
        marks = wait.until(
            lambda d: d.execute_script(
                "const m = window.__tl.marks; const f = m.firstText;"
                "return f.slack && f.teams ? {...f, askedAt: m.askedAt} : null"
            )
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
    return {
        "listening_s": listening,
        "page_ready_s": page,
        "asked_s": marks["askedAt"] / 1000 - t0,
        "agent_first_token_s": marks["components"] / 1000 - t0,
        "slack_first_token_s": marks["slack"] / 1000 - t0,
        "teams_first_token_s": marks["teams"] / 1000 - t0,
    }


def direct_first_token(data_dir: str) -> float:
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, "-c", DIRECT, repr(t0), data_dir, QUESTION],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def ask(session: Any, url: str, text: str, thread: str) -> int:
    body = {
        "text": text,
        "thread_id": thread,
        "persona": {
            "user_id": "U0ALEX",
            "name": "Alex",
            "groups": ["user", "admin"],
            "place": "channel",
        },
    }
    events = 0
    async with session.post(f"{url}api/turns", json=body) as response:
        async for line in response.content:
            events += line.startswith(b"event: ")
    return events


async def memory_run(turns: int, data_dir: str) -> dict[str, float]:
    import aiohttp

    process, url = spawn_console(data_dir, "--stream-delay", "0", "--pace", "0.05")
    try:
        async with aiohttp.ClientSession() as session:
            await ask(session, url, QUESTION, "warm.0")
            after_first = rss_mb(process.pid)
            started = time.perf_counter()
            for n in range(turns):
                await ask(session, url, QUESTIONS[n % len(QUESTIONS)], f"t{n // 10}.0")
            elapsed = time.perf_counter() - started
            after = rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=10)
    return {
        "rss_after_first_turn_mb": round(after_first, 1),
        "rss_after_turns_mb": round(after, 1),
        "turns_per_s": round(turns / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    data_dir = tempfile.mkdtemp(prefix="tl-bench-data-")
    direct_first_token(data_dir)  # creates the sample database once, outside the timing

    driver = browser()
    try:
        runs = [first_answer(driver, data_dir) for _ in range(args.runs)]
    finally:
        driver.quit()
    direct = [direct_first_token(data_dir) for _ in range(args.runs)]
    median = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
    direct_median = round(statistics.median(direct), 3)
    memory = asyncio.run(memory_run(args.turns, data_dir))

    print(f"first answer, {args.runs} fresh `threadline dev` processes (median seconds):")
    for key, value in median.items():
        print(f"  {key:<24} {value:.3f}")
    print(f"  baseline: direct send_message in a fresh process {direct_median:.3f}")
    ratio = round(median["slack_first_token_s"] / direct_median, 2)
    print(
        f"  ratio console/direct {ratio}  (goal: first token < 2 s: "
        f"{'met' if median['slack_first_token_s'] < 2 else 'NOT met'})"
    )
    print(
        f"memory: {memory['rss_after_first_turn_mb']} MB after 1 turn, "
        f"{memory['rss_after_turns_mb']} MB after {args.turns} more "
        f"({memory['turns_per_s']} turns/s)"
    )
    print(
        result_line(
            "console_first_answer",
            runs=args.runs,
            **median,
            direct_first_token_s=direct_median,
            ratio_console_vs_direct=ratio,
            turns=args.turns,
            **memory,
            goal_first_token_under_2s=median["slack_first_token_s"] < 2,
        )
    )


if __name__ == "__main__":
    main()
