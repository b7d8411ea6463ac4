"""``RequestContext.metadata`` is an ``agent_core.channel.ChannelMetadata``: pydantic checks
the keys it declares and keeps, as they came, the keys it does not (a context an older version
queued, an extension's own), through a dump and a validation as queued turns go."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_core.channel import read_metadata
from agent_core.users import RequestContext

CONTEXT = {
    "platform": "console",
    "user_id": "U1",
    "console_groups": ["admin"],
    "console_email": None,
    "added_later": {"by": "a newer version"},
}


def test_an_undeclared_key_and_a_none_survive_a_round_trip() -> None:
    context = RequestContext(metadata=CONTEXT)
    assert context.metadata == CONTEXT
    assert RequestContext.model_validate(context.model_dump()).metadata == CONTEXT
    assert RequestContext.model_validate_json(context.model_dump_json()).metadata == CONTEXT
    assert read_metadata(CONTEXT) == CONTEXT


@pytest.mark.parametrize("metadata", [{"is_dm": "maybe"}, {"platform": "fax"}, {"user_id": None}])
def test_a_declared_key_of_another_type_is_refused(metadata: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RequestContext(metadata=metadata)
