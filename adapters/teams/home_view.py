"""``/home`` in Teams: a person's home (``bots.home``) as one Adaptive Card, each component
rendered by the same renderer as answers (``adapters.teams.render``) and stacked, its
buttons kept with it (the Slack twin: ``adapters.slack.home_view``).

Its ``refresh`` action (verb ``threadline.home``): Teams asks for the card again when the
person views it (Universal Actions), so the home shown is the home as it stands then, as
Slack's tab is published again when what it shows changes.

>>> from agent_core.components import CardComponent, UiComponent
>>> card = home_card([UiComponent(rich_component=CardComponent(title="Hi", content="x",
...     actions=[{"label": "Go", "action": "/schedules"}]))])
>>> card["type"], card["body"][0]["type"], card["body"][0]["items"][-1]["type"]
('AdaptiveCard', 'Container', 'ActionSet')
>>> card["refresh"]["action"]["verb"], is_home_refresh({"type": "invoke",
...     "name": "adaptiveCard/action", "value": {"action": {"verb": "threadline.home"}}})
('threadline.home', True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.teams import elements
from adapters.teams.controls import CARD_ACTION
from adapters.teams.render import render
from agent_core.components import UiComponent

HOME_VERB = "threadline.home"
"""The verb of the card's refresh action."""
FALLBACK = "Your Threadline home: your schedules, connections and questions to start with."


def home_card(components: Sequence[UiComponent]) -> elements.Element:
    """One card of every component's rendering (text as a TextBlock, a card's body and its
    actions as an ActionSet), each in a Container with a separator."""
    body: list[elements.Element] = []
    for component in components:
        rendering = render(component)
        if rendering is None:
            continue
        items: list[elements.Element] = []
        if rendering.card is not None:
            items += list(rendering.card.get("body") or [])
            if actions := rendering.card.get("actions"):
                items.append({"type": "ActionSet", "actions": list(actions)})
        elif rendering.text:
            items.append(elements.text_block(rendering.text))
        if items:
            box = elements.container(items)
            if body:
                box["separator"] = True
            body.append(box)
    card = elements.card(body, fallback_text=FALLBACK, full_width=True)
    card["refresh"] = {"action": {"type": "Action.Execute", "title": "Refresh", "verb": HOME_VERB}}
    return card


def is_home_refresh(activity: Mapping[str, Any]) -> bool:
    """Whether ``activity`` is the home card's refresh (an ``adaptiveCard/action`` invoke)."""
    if activity.get("type") != "invoke" or activity.get("name") != CARD_ACTION:
        return False
    value = activity.get("value")
    action = value.get("action") if isinstance(value, Mapping) else None
    return isinstance(action, Mapping) and action.get("verb") == HOME_VERB


def home_response(card: elements.Element) -> dict[str, Any]:
    """The invoke response of a refresh: the card as it now stands, shown in place."""
    return {"statusCode": 200, "type": "application/vnd.microsoft.card.adaptive", "value": card}
