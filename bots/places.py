"""``PlacePolicy``: what a place shared with another organisation gets, from configuration.

Whether a place is shared is the platform's to say (``adapters.<channel>.places``); what
happens then is the deployment's (``shared_places`` in ``[slack]`` / ``[teams]``, the same
names in both) or the profile's that serves the place (``shared_places`` in
``[[profiles]]``), and a list of places shared on purpose (``shared_places_allowed``)::

    private   the default: everything the answer carries goes to the asker alone (Slack: an
              ephemeral message in the thread; Teams: a targeted message or a 1:1 chat) and
              the place reads one line saying so
    refuse    the place reads one line; nothing runs
    allow     answered as anywhere else

>>> policy = PlacePolicy(default="private", allowed=frozenset({"C0PARTNER"}))
>>> policy.for_place({"platform": "slack", "channel_id": "C0PARTNER"})
'allow'
>>> policy.for_place({"platform": "slack", "channel_id": "C1"})
'private'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.notices import SCHEDULE_PRIVATELY
from agent_core.components import NotificationComponent, UiComponent
from agent_core.workflow import DefaultWorkflowHandler
from bots.channel_settings import ChannelSettings, SharedPlaces
from bots.profiles import Profile, ProfileRouter

PLACE_KEYS = ("channel_id", "teams_channel_id", "teams_team_id")
"""The metadata keys naming a place (a Slack channel; a Teams conversation, channel, team)."""


@dataclass(frozen=True)
class PlacePolicy:
    """See the module docstring."""

    default: SharedPlaces = "private"
    allowed: frozenset[str] = frozenset()
    profiles: Sequence[Profile] = ()

    @classmethod
    def of(cls, settings: ChannelSettings, agent: object) -> PlacePolicy:
        """The policy of a channel's settings and the profiles of the agent it serves."""
        profiles = agent.profiles if isinstance(agent, ProfileRouter) else []
        return cls(settings.shared_places, frozenset(settings.shared_places_allowed), profiles)

    def for_place(self, metadata: Mapping[str, Any]) -> SharedPlaces:
        """What a shared place with this request metadata gets."""
        if not self.allowed.isdisjoint(str(metadata.get(key)) for key in PLACE_KEYS):
            return "allow"
        for profile in self.profiles:
            if profile.claims(metadata) and profile.shared_places is not None:
                return profile.shared_places
        return self.default

    def describe(self) -> str:
        """The policy in words (``threadline doctor``, ``/status``)."""
        text = f"shared places: {self.default}"
        if self.allowed:
            text += f" (allowed: {', '.join(sorted(self.allowed))})"
        overrides = [f"{p.name}={p.shared_places}" for p in self.profiles if p.shared_places]
        if overrides:
            text += f"; profiles: {', '.join(overrides)}"
        return text


def told_privately(text: str = SCHEDULE_PRIVATELY) -> UiComponent:
    """A line for the asker alone (a scheduled answer sent privately says why, privately).

    >>> told_privately().is_private
    True
    """
    shown = UiComponent.of(NotificationComponent(message=text, level="info"), text)
    return shown.model_copy(update={"audience": "requester"})


def edge_lines(home: str, external_groups: Sequence[str], policy: PlacePolicy) -> list[str]:
    """What ``/status`` and ``threadline doctor`` say of the organisation's edge.

    >>> edge_lines("tenant t1", [], PlacePolicy())[1]
    '- People from other organisations: granted nothing (told one sentence)'
    """
    granted = ", ".join(external_groups) or "nothing (told one sentence)"
    return [
        f"- Organisation: {home}",
        f"- People from other organisations: granted {granted}",
        f"- {policy.describe()[0].upper()}{policy.describe()[1:]}",
    ]


def show_in_status(agent: object, lines: Callable[[], list[str]]) -> None:
    """Add ``lines`` to ``/status`` of every served agent with the default workflow."""
    served = agent.served_agents() if hasattr(agent, "served_agents") else [agent]
    for one in served:
        workflow = getattr(one, "workflow_handler", None)
        if isinstance(workflow, DefaultWorkflowHandler):
            workflow.status.append(lines)
