"""One person's many questions must not hold up anyone else's (issue 22, item 10).

Regression: 70 questions from one person made another's wait 7 s: every turn slot of the
process went to the first person's turns. The real Slack bot on the fake Slack Web API:
``turn_concurrency`` 4 and ``turns_per_person`` 2.
"""

from __future__ import annotations

from pathlib import Path

from adapters.slack.testing import FakeSlackApi
from agent_core.llm.base import LlmRequest
from agent_core.llm.scripted import ScriptedResponse
from tests.bots.slack.harness import running_bot
from tests.bots.slack.test_bot_entry_points import mention

SLOW = 1.5
ANA_ASKS = [f"{100 + n}.000100" for n in range(6)]
BO_ASKS = "200.000100"


def answer(request: LlmRequest) -> ScriptedResponse:
    """Ana's answers take ``SLOW`` seconds; Bo's come at once."""
    if request.user.id.endswith(":U1"):
        return ScriptedResponse(text="Ana's answer.", latency=SLOW)
    return ScriptedResponse(text="Bo's answer.")


def said(fake: FakeSlackApi, thread_ts: str, text: str) -> bool:
    return any(text in m.text for m in fake.thread("C1", thread_ts))


async def test_another_persons_question_is_answered_while_one_persons_wait(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path, [], then=answer, turn_concurrency=4, turns_per_person=2) as h:
        for ts in ANA_ASKS:
            await h.event(mention("<@UBOT> how many?", ts=ts))
        await h.event(mention("<@UBOT> and me?", ts=BO_ASKS, user="U2"))
        await h.fake.wait_for(lambda f: said(f, BO_ASKS, "Bo's answer."), timeout=SLOW)
        answered = [ts for ts in ANA_ASKS if h.fake.thread("C1", ts)]
        assert answered == []  # Bo did not wait for any of Ana's six
        requests = h.agent.llm_service.requests  # type: ignore[attr-defined]
        started = [r for r in requests if r.user.id.endswith(":U1")]
        assert len(started) == 2  # Ana's: two at a time, the rest wait their turn
        await h.idle()
        posted = {ts: float(h.fake.thread("C1", ts)[-1].ts) for ts in ANA_ASKS}
        first, last = ANA_ASKS[:2], ANA_ASKS[-2:]
        assert max(posted[ts] for ts in first) < min(posted[ts] for ts in last)  # in order
