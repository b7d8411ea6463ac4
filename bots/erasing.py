"""What the channels keep of a person beyond the state's own stores, for every erase:
``threadline forget``, ``/forget @person`` (``bots.forget_tool``) and an uninstall
(``bots.uninstall``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.forget import Step
    from agent_core.state_factory import State


def channel_steps(state: State) -> dict[str, Step]:
    """Slack's thread transcripts (their messages dropped from each of their workspace)."""
    from adapters.slack.threads import ThreadTranscript

    transcripts = ThreadTranscript(state.cache)
    return {"transcripts": lambda person, dry: transcripts.forget(person, dry_run=dry)}
