"""Every UI component -> how it shows in Teams: ``TeamsRenderer``, the channel's
``adapters.render.ComponentRenderer``.

``render(component)`` (bound to one ``TeamsRenderer``) returns a ``Rendering``: answer text
for the message's ``text``, an Adaptive Card 1.5 for content, a ``progress`` line for the
typing indicator / streaming informative update, a ``citation`` for link components, or
``None`` for UI-only components (chat input updates) that have no meaning in a chat. Types
without a card rendering fall back to their simple component, deliberately.

>>> from agent_core.components import NotificationComponent, UiComponent
>>> rendering = render(UiComponent(rich_component=NotificationComponent(message="Saved")))
>>> rendering.card["body"][0]["items"][0]["text"]
'💡 Saved'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from adapters.details import readable
from adapters.render import ComponentRenderer
from adapters.tasks import call_status_word
from adapters.teams import elements
from adapters.teams.activities import Citation
from adapters.teams.approval import approval_card
from adapters.teams.charts import render_chart
from adapters.teams.markdown import card_elements
from adapters.teams.tables import render_dataframe
from agent_core.components import (
    ApprovalComponent,
    BadgeComponent,
    ButtonComponent,
    ButtonGroupComponent,
    CardComponent,
    ChartComponent,
    ChatInputUpdateComponent,
    DataFrameComponent,
    IconTextComponent,
    LogViewerComponent,
    NotificationComponent,
    ProgressBarComponent,
    ProgressDisplayComponent,
    RichTextComponent,
    SignInComponent,
    SimpleComponent,
    SimpleImageComponent,
    SimpleLinkComponent,
    SimpleTextComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    StatusIndicatorComponent,
    TaskListComponent,
    TaskOperation,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)

CONTENT_CHARS = 12_000
"""Characters of free text one card may carry; longer content is cut with a note."""
LOG_LINES = 40
MAX_CARD_ACTIONS = 6

_STYLES: dict[str, elements.ContainerStyle] = {
    "success": "good",
    "completed": "good",
    "info": "accent",
    "warning": "warning",
    "error": "attention",
    "failed": "attention",
}
_ICONS = {
    "success": "✅",
    "completed": "✅",
    "info": "💡",
    "warning": "⚠️",
    "error": "❌",
    "failed": "❌",
    "running": "⏳",
    "pending": "🕓",
    "in_progress": "⏳",
    "loading": "⏳",
}
_TASK_MARKS = {"pending": "⬜", "in_progress": "⏳", "completed": "✅", "error": "❌"}


@dataclass(slots=True)
class Rendering:
    """How one component shows in Teams; one of text, card, progress or citation is set
    (``csv`` may accompany a card).

    >>> Rendering(progress="Running run_sql…").is_empty
    False
    """

    text: str | None = None
    """Answer markdown for the message text (streamed in personal chats)."""
    card: elements.Element | None = None
    progress: str | None = None
    """A status line: informative update / typing, never a message of its own."""
    citation: Citation | None = None
    csv: tuple[str, bytes] | None = None
    """A file offer (name, content) accompanying a card, e.g. a cut table's rows."""
    csv_rows: str = ""
    """What that file holds, in words ("the first 100 of 400 rows"), for its consent card."""
    streaming: bool = False

    @property
    def is_empty(self) -> bool:
        return not (self.text is not None or self.card or self.progress or self.citation)


def clip(text: str, limit: int = CONTENT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 40].rstrip() + "\n\n…(truncated)"


def _markdown_or_text(content: str, markdown: bool) -> list[elements.Element]:
    content = clip(content)
    return card_elements(content) if markdown else [elements.plain_block(content)]


def _actions(actions: list[dict[str, Any]]) -> list[elements.Element]:
    result = []
    for action in actions[:MAX_CARD_ACTIONS]:
        label, message = action.get("label"), action.get("action")
        if isinstance(label, str) and isinstance(message, str) and not action.get("disabled"):
            result.append(elements.execute_action(label, message))
    return result


def _titled(
    title: str,
    body: list[elements.Element],
    *,
    status: str | None = None,
    subtitle: str | None = None,
    icon: str | None = None,
) -> list[elements.Element]:
    mark = icon or _ICONS.get(status or "", "")
    header = [elements.plain_block(f"{mark} {title}".strip(), weight="Bolder")]
    if subtitle:
        header.append(elements.plain_block(subtitle, subtle=True, size="Small"))
    items = header + body
    style = _STYLES.get(status or "")
    return [elements.container(items, style=style)] if style else items


def _card_component(card: CardComponent) -> Rendering:
    content = _markdown_or_text(
        readable(card.content) if card.markdown else card.content, card.markdown
    )
    if card.collapsible:
        details = elements.container(content)
        details.update(id=f"details-{card.id}", isVisible=not card.collapsed)
        toggle: elements.Element = {
            "type": "Action.ToggleVisibility",
            "title": "Show / hide details",
            "targetElements": [f"details-{card.id}"],
        }
        body = _titled(
            card.title, [details], status=card.status, subtitle=card.subtitle, icon=card.icon
        )
        return Rendering(card=elements.card(body, [toggle, *_actions(card.actions)]))
    body = _titled(card.title, content, status=card.status, subtitle=card.subtitle, icon=card.icon)
    return Rendering(card=elements.card(body, _actions(card.actions), fallback_text=card.title))


def _notification(note: NotificationComponent) -> Rendering:
    mark = note.icon or _ICONS.get(note.level, "")
    text = f"{mark} {clip(note.message)}".strip()
    items = [elements.plain_block(note.title, weight="Bolder")] if note.title else []
    items.append(elements.text_block(text))
    body = [elements.container(items, style=_STYLES.get(note.level))]
    return Rendering(card=elements.card(body, _actions(note.actions), fallback_text=note.message))


def _status_card(status: StatusCardComponent) -> Rendering:
    return _status(
        status.title,
        status.status,
        status.description,
        icon=status.icon,
        facts=status.metadata,
        actions=status.actions,
    )


def _status(
    title: str,
    status: str,
    description: str | None,
    *,
    icon: str | None = None,
    facts: dict[str, Any] | None = None,
    actions: list[dict[str, Any]] | None = None,
) -> Rendering:
    """A status: a progress line while it runs or once it went well, else a card (its
    title and mark, the description, ``facts`` and ``actions``)."""
    line = f"{title}: {description}" if description else title
    if status in ("pending", "running", "completed", "success"):
        return Rendering(progress=line)
    pairs = [(str(k), clip(str(v), 300)) for k, v in list((facts or {}).items())[:10]]
    body = [elements.text_block(clip(description))] if description else []
    if pairs:
        body.append(elements.fact_set(pairs))
    titled = _titled(title, body, status=status, icon=icon)
    return Rendering(card=elements.card(titled, _actions(actions or []), fallback_text=line))


def _log_viewer(log: LogViewerComponent) -> Rendering:
    entries = log.entries[-LOG_LINES:]
    lines = "\n".join(f"[{e.level.upper()}] {e.message}" for e in entries)
    body: list[elements.Element] = [elements.plain_block(log.title, weight="Bolder")]
    body.append(elements.container([elements.monospace_block(clip(lines))], style="emphasis"))
    if len(log.entries) > len(entries):
        note = f"Last {len(entries)} of {len(log.entries)} entries."
        body.append(elements.text_block(note, subtle=True, size="Small"))
    return Rendering(card=elements.card(body, fallback_text=log.title))


def _task_list(tasks: TaskListComponent) -> Rendering:
    shown = [t for t in tasks.tasks if tasks.filter_status in (None, t.status)]
    lines = [f"{_TASK_MARKS.get(t.status, '•')} {t.title}" for t in shown[:50]]
    body = [elements.plain_block(tasks.title, weight="Bolder")]
    if tasks.show_progress and tasks.tasks:
        done = sum(t.status == "completed" for t in tasks.tasks)
        body.append(elements.text_block(f"{done} of {len(tasks.tasks)} done", subtle=True))
    body.append(elements.text_block("\n\n".join(lines) or "No tasks."))
    return Rendering(card=elements.card(body, fallback_text=tasks.title))


def _buttons(specs: list[tuple[str, str]]) -> Rendering:
    actions = [elements.execute_action(label, message) for label, message in specs]
    if not actions:
        return Rendering()
    if len(actions) <= MAX_CARD_ACTIONS:
        return Rendering(card=elements.card([], actions))
    sets = [
        {"type": "ActionSet", "actions": actions[i : i + MAX_CARD_ACTIONS]}
        for i in range(0, len(actions), MAX_CARD_ACTIONS)
    ]
    return Rendering(card=elements.card(sets))


def _sign_in(prompt: SignInComponent) -> Rendering:
    """The sign-in card only the person asked receives (their 1:1 chat): why, and a button
    opening the sign-in page; a URL a browser should not open gets no button."""
    text = prompt.message or f"Connect your {prompt.service} account to go on."
    body = [elements.text_block(prompt.label, weight="Bolder"), elements.text_block(clip(text))]
    if not prompt.url.startswith(("https://", "http://")):
        return Rendering(card=elements.card(body, fallback_text=text))
    action = elements.open_url_action(prompt.label, prompt.url)
    return Rendering(card=elements.card(body, [action], fallback_text=text))


def _progress(label: str | None, value: float, description: str | None = None) -> Rendering:
    text = " ".join(p for p in (label, f"{round(value * 100)}%", description) if p)
    return Rendering(progress=text)


class TeamsRenderer(ComponentRenderer[Rendering | None]):
    """Renders components for Teams; ``render(component)`` below is one bound to a shared
    instance. Types without a card rendering (``ArtifactComponent``: web-only content, and
    any future type) fall back to their simple component.

    >>> from agent_core.components import BadgeComponent, UiComponent
    >>> badge = UiComponent(rich_component=BadgeComponent(text="[beta](https://x.io)"))
    >>> TeamsRenderer().render(badge).card["body"][0]["inlines"]
    [{'type': 'TextRun', 'text': '[beta](https://x.io)', 'weight': 'Bolder'}]
    """

    def render(self, component: UiComponent) -> Rendering | None:
        """How ``component`` shows in Teams, or None when it has nothing to show in a chat.

        A link as the simple form of a component with no richer Teams rendering is a citation.
        """
        rich = component.rich_component
        link = component.simple_component
        if (
            rich.visible
            and isinstance(link, SimpleLinkComponent)
            and not isinstance(rich, RichTextComponent | DataFrameComponent | ChartComponent)
        ):
            abstract = getattr(rich, "content", "") or getattr(rich, "description", "") or ""
            title = getattr(rich, "title", None) or link.text or link.url
            return Rendering(citation=Citation(title=title, url=link.url, abstract=str(abstract)))
        rendering = super().render(component)
        return None if rendering is None or rendering.is_empty else rendering

    def nothing(self) -> Rendering:
        return Rendering()  # empty: shown nowhere, and not replaced by the simple form

    def simple(self, simple: SimpleComponent | None) -> Rendering | None:
        """The deliberate fallback for rich types without a card rendering."""
        match simple:
            case SimpleTextComponent(text=text) if text.strip():
                return Rendering(card=elements.card([elements.plain_block(clip(text))]))
            case SimpleImageComponent(url=url, alt_text=alt):
                return Rendering(card=elements.card([elements.image(url, alt or "image")]))
            case SimpleLinkComponent(url=url, text=text):
                return Rendering(citation=Citation(title=text or url, url=url))
        return None

    def on_text(self, text: RichTextComponent) -> Rendering:
        content = text.content
        if text.code_language:
            content = f"```{text.code_language}\n{content}\n```"
        return Rendering(text=content, streaming=text.streaming)

    def on_card(self, card: CardComponent) -> Rendering:
        return _card_component(card)

    def on_notification(self, note: NotificationComponent) -> Rendering:
        return _notification(note)

    def on_status_card(self, card: StatusCardComponent) -> Rendering:
        return _status_card(card)

    def on_dataframe(self, table: DataFrameComponent) -> Rendering:
        rendered = render_dataframe(table)
        name = f"{(table.title or 'results').strip().replace(' ', '_')[:60]}.csv"
        csv = (name, rendered.csv) if rendered.csv else None
        return Rendering(card=rendered.card, csv=csv, csv_rows=rendered.csv_rows)

    def on_chart(self, chart: ChartComponent) -> Rendering:
        return Rendering(card=render_chart(chart))

    def on_log_viewer(self, log: LogViewerComponent) -> Rendering:
        return _log_viewer(log)

    def on_task_list(self, tasks: TaskListComponent) -> Rendering:
        return _task_list(tasks)

    def on_sign_in(self, prompt: SignInComponent) -> Rendering:
        return _sign_in(prompt)

    def on_button(self, button: ButtonComponent) -> Rendering:
        return _buttons([] if button.disabled else [(button.label, button.action)])

    def on_button_group(self, group: ButtonGroupComponent) -> Rendering:
        return _buttons([(b.label, b.action) for b in group.buttons if not b.disabled])

    def on_progress_bar(self, bar: ProgressBarComponent) -> Rendering:
        return _progress(bar.label, bar.value)

    def on_progress_display(self, progress: ProgressDisplayComponent) -> Rendering:
        return _progress(progress.label, progress.value, progress.description)

    def on_status_indicator(self, status: StatusIndicatorComponent) -> Rendering:
        return Rendering(progress=status.message)

    def on_status_bar_update(self, bar: StatusBarUpdateComponent) -> Rendering:
        return Rendering(progress=bar.message if bar.status == "working" else None)

    def on_task_tracker_update(self, update: TaskTrackerUpdateComponent) -> Rendering:
        """A new task (a group of parallel calls) is a progress line; later task updates are
        not (they name no task, and its calls' statuses say it better)."""
        if update.operation is TaskOperation.ADD_TASK and update.task is not None:
            return Rendering(progress=f"{update.task.title}…")
        return Rendering()

    def on_tool_status(self, status: ToolStatusComponent) -> Rendering:
        """A tool call: a progress line while it runs and once it completed (the task list
        ticks it off), a card when it failed."""
        running = status.status == "in_progress"
        description = "Running..." if running else status.detail
        return _status(status.tool, call_status_word(status.status), description)

    def on_badge(self, badge: BadgeComponent) -> Rendering:
        return Rendering(card=elements.card([elements.plain_block(badge.text, weight="Bolder")]))

    def on_icon_text(self, icon: IconTextComponent) -> Rendering:
        return Rendering(card=elements.card([elements.plain_block(f"{icon.icon} {icon.text}")]))

    def on_approval(self, approval: ApprovalComponent) -> Rendering:
        """Approve / Deny as universal actions; the card is refreshed once decided."""
        return Rendering(card=approval_card(approval))

    def on_chat_input_update(self, update: ChatInputUpdateComponent) -> Rendering:
        return self.nothing()  # UI state with no meaning in a chat


_RENDERER = TeamsRenderer()


def render(component: UiComponent) -> Rendering | None:
    """How ``component`` shows in Teams, or None when it has nothing to show in a chat."""
    return _RENDERER.render(component)


def fallback_text(component: UiComponent) -> str:
    """Plain text for a component, for logs and notes (its simple form, else its JSON)."""
    simple = component.simple_component
    if isinstance(simple, SimpleTextComponent):
        return simple.text
    return json.dumps(component.rich_component.model_dump(mode="json"), default=str)[:500]
