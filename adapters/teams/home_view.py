"""``/home`` in Teams: a person's home (``bots.home``) as one Adaptive Card, each component
rendered by the same renderer as answers (``adapters.teams.render``) and stacked, its
buttons kept with it (the Slack twin: ``adapters.slack.home_view``).

>>> from agent_core.components import CardComponent, UiComponent
>>> card = home_card([UiComponent(rich_component=CardComponent(title="Hi", content="x",
...     actions=[{"label": "Go", "action": "/schedules"}]))])
>>> card["type"], card["body"][0]["type"], card["body"][0]["items"][-1]["type"]
('AdaptiveCard', 'Container', 'ActionSet')
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.teams import elements
from adapters.teams.render import render
from agent_core.components import UiComponent

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
    return elements.card(body, fallback_text=FALLBACK, full_width=True)
