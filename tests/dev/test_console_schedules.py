"""Schedules in the console: made with ``/schedule`` like in the channels, listed by
``GET /api/schedules``, and "Run now" streams the next occurrence in both panes."""

from __future__ import annotations

import json
from typing import Any

from tests.dev.conftest import ANA, Console, TurnEvents, parse_sse


async def fire(console: Console, schedule_id: str) -> TurnEvents:
    response = await console.client.post(f"/api/schedules/{schedule_id}/fire")
    assert response.status == 200, await response.text()
    events, buffer = TurnEvents(), ""
    async for data in response.content.iter_any():
        buffer += data.decode()
        while "\n\n" in buffer:
            chunk, buffer = buffer.split("\n\n", 1)
            parsed = parse_sse(chunk)
            if parsed is not None:
                events.events.append(parsed)
    return events


async def listing(console: Console) -> list[dict[str, Any]]:
    response = await console.client.get("/api/schedules")
    assert response.status == 200
    rows: list[dict[str, Any]] = (await response.json())["schedules"]
    return rows


async def test_a_schedule_is_made_listed_and_run_now(console: Console) -> None:
    made = await console.ask("/schedule every weekday 9:00 Who are our top customers by revenue?")
    assert made.outcome == "done"
    (card,) = made.components("card")
    assert card["rich_component"]["title"] == "Scheduled"
    assert "Next runs" in card["rich_component"]["content"]
    assert any("Scheduled" in json.dumps(d) for d in made.of("slack"))
    assert any("Scheduled" in json.dumps(d) for d in made.of("teams"))

    (row,) = await listing(console)
    assert row["owner"] == "Ana" and row["schedule"].startswith("every weekday 9:00")
    assert row["status"] == "active" and row["last_run"] is None and row["place"] == "dm"
    next_run = row["next_run"]

    run = await fire(console, row["id"])
    assert run.outcome == "done"
    marker = run.components("notification")[0]["rich_component"]
    assert marker["message"] == "Scheduled by @Ana · every weekday 9:00"
    assert marker["actions"] == [{"label": "Pause", "action": f"/pause {row['id']}"}]
    assert run.components("text")  # the agent answered the question, as Ana
    slack = json.dumps(run.of("slack"))
    assert "Scheduled by @Ana" in slack and f"/pause {row['id']}" in slack
    assert "Scheduled by @Ana" in json.dumps(run.of("teams"))

    (row,) = await listing(console)
    assert row["last_run"].endswith(": posted")
    assert row["next_run"] != next_run  # the run it stood for does not run again at its time


async def test_run_now_refuses_what_is_not_active(console: Console) -> None:
    await console.ask("/schedule every weekday 9:00 revenue")
    (row,) = await listing(console)
    await console.ask(f"/pause {row['id']}")
    response = await console.client.post(f"/api/schedules/{row['id']}/fire")
    assert response.status == 404
    assert "no active schedule" in (await response.json())["error"]
    assert (await console.client.post("/api/schedules/nothex!/fire")).status == 404


async def test_refusals_and_someone_elses_schedule(console: Console) -> None:
    refused = await console.ask("/schedule every 1 minute ping")
    (card,) = refused.components("card")
    assert "minimum of every 15 minutes" in card["rich_component"]["content"]
    assert card["audience"] == "requester"
    assert await listing(console) == []
    await console.ask("/schedule every day 9:00 revenue")
    (row,) = await listing(console)
    bo = {**ANA, "user_id": "U0BO", "name": "Bo"}
    answer = await console.ask(f"/unschedule {row['id']}", bo)
    assert "No such schedule" in json.dumps(answer.components("card"))
    assert len(await listing(console)) == 1


async def test_the_browsers_zone_is_the_owners(console: Console) -> None:
    response = await console.client.post(
        "/api/turns",
        json={
            "text": "/schedule every Monday 9am signups",
            "thread_id": "1700000000.000200",
            "persona": ANA,
            "timezone": "America/New_York",
        },
    )
    text = await response.text()
    events = [parse_sse(chunk) for chunk in text.split("\n\n") if chunk.strip()]
    cards = [d for e in events if e and e[0] == "component" for d in [e[1]]]
    shown = json.dumps(cards)
    assert "(America/New_York)" in shown and "your time, America/New_York" in shown
