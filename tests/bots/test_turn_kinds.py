"""The turn kinds (``bots.turn_kinds``): each wing reads every kind it records back as the
same model, and reads the payloads a version before the kinds left in a durable queue
(``bots.legacy_turns``) as the kinds they stand for."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.slack.workflow import WorkflowStep
from agent_core.schedules.occurrence import Occurrence
from agent_core.schedules.removed import RemovedNotice
from bots.legacy_turns import upgraded
from bots.slack.kinds import SlackAsked
from bots.slack.turns import SlackWing
from bots.slack.workflow import StepTurn
from bots.teams.kinds import TeamsAsked, TeamsWhere
from bots.teams.turns import TeamsWing
from bots.turn_kinds import Kind, Question, ResumedApproval, StepRun

CONTEXT = {"workspace_id": "T1", "channel_id": "C1", "thread_id": "1.0", "user_id": "U1"}
ACTIVITY: dict[str, Any] = {
    "type": "message",
    "id": "m1",
    "serviceUrl": "https://smba.example/",
    "from": {"id": "29:1", "aadObjectId": "aad-1", "role": "user"},
    "conversation": {"id": "19:c", "conversationType": "personal", "tenantId": "t1"},
    "recipient": {"id": "28:bot"},
    "locale": "en-US",
    "localTimezone": "Europe/Paris",
    "text": "hi",
}
OCCURRENCE = Occurrence(schedule_id="5e1f0c2a", due=60.0, at=60.0, dispatched_at=61.0)
NOTICE = RemovedNotice(schedule_id="5e1f0c2a", workspace="slack:T1", thread_key="k", text="x")
STEP = StepTurn(
    workflow_step=WorkflowStep(execution_id="Fx1", team_id="T1", user_id="U1", question="q")
)


def slack(payload: dict[str, Any]) -> object:
    return SlackWing.kinds.validate_python(upgraded(payload))


def teams(payload: dict[str, Any]) -> object:
    return TeamsWing.kinds.validate_python(upgraded(payload))


@pytest.mark.parametrize(
    "kind",
    [
        SlackAsked(context=CONTEXT, text="hi", private=True).question(),
        ResumedApproval(approval_id="a1", where=SlackAsked(context=CONTEXT, text="")),
        STEP.run(),
        OCCURRENCE,
        NOTICE,
    ],
    ids=lambda kind: str(kind.kind),
)
def test_a_slack_turn_is_read_back_as_the_kind_it_was_recorded_as(kind: Kind) -> None:
    assert slack(kind.payload()) == kind


def test_a_slack_question_keeps_the_context_keys_it_does_not_declare() -> None:
    """A key the context does not declare (a newer version's) and a None reach the worker."""
    context = {**CONTEXT, "scheduled_by": "5e1f0c2a", "added_later": None}
    kind = SlackAsked(context=context, text="hi").question()
    read = slack(json.loads(json.dumps(kind.payload())))
    assert read == kind
    assert isinstance(read, Question) and read.asked.context == context


def test_a_teams_question_carries_its_whole_activity_through_the_queue() -> None:
    """Fields the activity model does not read (``locale``, ``localTimezone``, ``role``)
    reach the worker as Teams posted them."""
    kind = TeamsAsked.of(ACTIVITY, "hi")
    read = teams(kind.payload())
    assert read == kind
    assert isinstance(read, Question) and read.asked.activity.wire() == ACTIVITY


def test_a_teams_resumed_approval_is_read_back() -> None:
    where = TeamsWhere(ref={"conversation_id": "19:c"}, reply_to="m2", context=CONTEXT)
    kind: ResumedApproval[TeamsWhere] = ResumedApproval(approval_id="a1", where=where)
    assert teams(kind.payload()) == kind


def test_payloads_queued_before_the_kinds_are_read_as_their_kinds() -> None:
    """An upgrade finds turns the previous version queued in Redis or SQLite: each old
    shape is the kind it stood for."""
    old_question = {"context": CONTEXT, "text": "hi", "private": True}
    assert slack(old_question) == SlackAsked(context=CONTEXT, text="hi", private=True).question()
    old_resume = {"context": CONTEXT, "text": "", "resume": "a1"}
    resumed = slack(old_resume)
    assert isinstance(resumed, ResumedApproval) and resumed.approval_id == "a1"
    assert resumed.where == SlackAsked(context=CONTEXT, text="")
    old_step = {"workflow_step": STEP.workflow_step.model_dump(mode="json")}
    assert slack(old_step) == StepRun(step=STEP)
    assert slack({"scheduled": OCCURRENCE.model_dump(mode="json")}) == OCCURRENCE
    assert teams({"schedule_removed": NOTICE.model_dump(mode="json")}) == NOTICE
    assert teams({"activity": ACTIVITY, "text": "hi"}) == TeamsAsked.of(ACTIVITY, "hi")
    ref = {"conversation_id": "19:c", "service_url": "https://smba.example/"}
    old_teams_resume = {"resume": "a1", "ref": ref, "reply_to": "m2", "context": CONTEXT}
    where = TeamsWhere(ref=ref, reply_to="m2", context=CONTEXT)
    assert teams({**old_teams_resume, "text": ""}) == ResumedApproval(approval_id="a1", where=where)
