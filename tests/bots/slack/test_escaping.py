"""Through the real Slack bot: a value from the database that the model repeats reaches
Slack inert, in every call the turn makes (issue 22, item 7)."""

from __future__ import annotations

from pathlib import Path

from agent_core import ScriptedResponse
from tests.adapters.inert import slack_problems
from tests.bots.slack.harness import running_bot

ATTACK = "<!channel> <@U0123> <https://evil.example|click here>"


async def test_a_database_value_repeated_by_the_model_arrives_inert(tmp_path: Path) -> None:
    """Regression: an answer repeating a value such as ``<!channel> <@U0123>
    <https://evil.example|click here>`` was sent unescaped in ``chat.postMessage``'s
    top-level ``text`` and in markdown blocks (here also: streamed, and to an admin as the
    tool's arguments, ephemerally)."""
    script = [
        ScriptedResponse.tool("run_sql", {"sql": f"select '{ATTACK}'"}),
        f"The top customer is {ATTACK} [Reset your password](https://evil.example/reset).",
    ]
    async with running_bot(tmp_path, script, flush_chars=8) as h:
        await h.event(
            {
                "type": "app_mention",
                "user": "UADMIN",
                "text": "<@UBOT> top customer?",
                "ts": "300.000100",
                "channel": "C1",
                "event_ts": "300.000100",
            }
        )
        await h.idle()
        sent = [c for c in h.fake.calls if c.method.startswith("chat.")]
        assert {"chat.postEphemeral", "chat.appendStream"} <= {c.method for c in sent}
        assert [p for c in sent for p in slack_problems(c.args)] == []
        streamed = "".join(
            [c.args.get("markdown_text") or "" for c in sent]
            + [k.get("text", "") for c in sent for k in c.args.get("chunks") or []]
        )
        assert "&lt;!channel&gt; &lt;@U0123&gt;" in streamed
        assert "[Reset your password] (https://evil.example/reset)" in streamed
