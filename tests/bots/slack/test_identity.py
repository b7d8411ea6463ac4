"""Who is an admin in the real Slack bot: granted by configuration, never by a user-group
handle someone can create (issue 22, item 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_core import ScriptedResponse
from tests.bots.slack.harness import running_bot

SECRET_SQL = "select salary from payroll where name = 'Bo'"


def mention(text: str, *, user: str, ts: str) -> dict[str, Any]:
    return {
        "type": "app_mention",
        "user": user,
        "text": text,
        "ts": ts,
        "channel": "C1",
        "event_ts": ts,
    }


async def test_a_user_group_named_admin_grants_no_status_card_and_no_admin_sql(
    tmp_path: Path,
) -> None:
    """Regression: every Slack user-group handle became a Threadline group and admin meant
    ``"admin" in groups``, so a member of a user group with handle ``admin`` (any member may
    create one in many workspaces) got the /status card and another person's admin-only SQL
    as an ephemeral message."""
    script = [ScriptedResponse.tool("run_sql", {"sql": SECRET_SQL}), "Done."]
    async with running_bot(tmp_path, script) as h:
        h.fake.usergroups.append({"id": "S0SELF", "handle": "admin", "users": ["U2"]})
        await h.event(mention("<@UBOT> /status", user="U2", ts="200.000100"))
        await h.idle()
        shown = str([c.args for c in h.fake.calls if c.method.startswith("chat.")])
        assert "Tools available to you" not in shown
        assert "only available to administrators" in shown
        await h.event(mention("<@UBOT> salaries?", user="U2", ts="201.000100"))
        await h.idle()
        assert h.fake.calls_to("chat.postEphemeral") == []
        assert SECRET_SQL not in str([c.args for c in h.fake.calls])


async def test_a_configured_user_group_id_makes_its_members_admins(tmp_path: Path) -> None:
    script = [ScriptedResponse.tool("run_sql", {"sql": SECRET_SQL}), "Done."]
    async with running_bot(tmp_path, script, admin_groups=["S0DATA"]) as h:
        h.fake.usergroups.append({"id": "S0DATA", "handle": "data-leads", "users": ["U2"]})
        await h.event(mention("<@UBOT> /status", user="U2", ts="200.000100"))
        await h.idle()
        assert "Tools available to you" in str([c.args for c in h.fake.calls])
        await h.event(mention("<@UBOT> salaries?", user="U2", ts="201.000100"))
        await h.idle()
        private = h.fake.calls_to("chat.postEphemeral")
        assert private and all(c.args["user"] == "U2" for c in private)
        assert SECRET_SQL in str([c.args for c in private])
