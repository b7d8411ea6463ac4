"""The Slack renderer: every ``UiComponent`` -> Block Kit messages (or a deliberate fallback).

``SlackRenderer`` is the channel's ``adapters.render.ComponentRenderer``: one hook per
component type it renders natively. ``render(component)`` (one shared renderer) returns the
messages to post for one component version, each already validated through slack_sdk and
within Slack's limits (see ``limits``). Components that are not messages return ``[]``:
status and task tracker updates are shown by the reply stream (``assistant.threads.setStatus``,
streamed ``task_update`` chunks: ``controls.task_chunk``) and UI-only components (chat input)
are dropped. A rich type this module does not know falls back to its simple component.

>>> from agent_core.components import NotificationComponent, UiComponent
>>> note = NotificationComponent(message="Saved", level="success")
>>> [m] = render(UiComponent(rich_component=note))
>>> m.blocks[0]["type"], m.text
('alert', 'Saved')
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import (
    AlertBlock,
    ImageBlock,
    MarkdownTextObject,
    PlanBlock,
    TaskCardBlock,
)

from adapters.details import readable
from adapters.render import ComponentRenderer
from adapters.slack.approval import approval_message
from adapters.slack.charts import render_chart
from adapters.slack.controls import TASK_STATUS, sources_block
from adapters.slack.elements import (
    SIGN_IN_BUTTON,
    action_buttons,
    context,
    dict_actions,
    header,
    link_button,
    markdown_blocks,
    sections,
    status_emoji,
)
from adapters.slack.escape import escape, link
from adapters.slack.limits import MAX_SECTION_TEXT, FileUpload, SlackMessage, pack_messages
from adapters.slack.markdown import to_mrkdwn, truncate
from adapters.slack.tables import render_dataframe
from adapters.tasks import call_status_word
from agent_core.components import (
    ApprovalComponent,
    ArtifactComponent,
    BadgeComponent,
    ButtonComponent,
    ButtonGroupComponent,
    CardComponent,
    ChartComponent,
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
    Source,
    SourcesComponent,
    StatusBarUpdateComponent,
    StatusCardComponent,
    StatusIndicatorComponent,
    TaskListComponent,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)
from agent_core.components.images import IMAGE_TYPES, image_from_data_uri


class SlackRenderer(ComponentRenderer[list[SlackMessage]]):
    """Block Kit messages for each component type; see the module docstring.

    Hooks not overridden (and rich types this module does not know) render the component's
    simple form; status bar and task tracker updates render as no message (the reply stream
    shows them), chat input updates are dropped (``ComponentRenderer``'s default).

    >>> from agent_core.components import BadgeComponent
    >>> [m] = SlackRenderer().render(UiComponent(rich_component=BadgeComponent(text="<beta>")))
    >>> m.blocks[0]["elements"][0]["text"], m.text
    (':small_blue_diamond: `&lt;beta&gt;`', '&lt;beta&gt;')
    """

    def nothing(self) -> list[SlackMessage]:
        return []

    def simple(self, simple: SimpleComponent | None) -> list[SlackMessage]:
        return render_simple(simple)

    def on_text(self, text: RichTextComponent) -> list[SlackMessage]:
        return render_text(text)

    def on_card(self, card: CardComponent) -> list[SlackMessage]:
        return _card(card)

    def on_notification(self, note: NotificationComponent) -> list[SlackMessage]:
        return _notification(note)

    def on_status_card(self, card: StatusCardComponent) -> list[SlackMessage]:
        return _status_card(card)

    def on_progress_bar(self, bar: ProgressBarComponent) -> list[SlackMessage]:
        return _progress(bar)

    def on_progress_display(self, progress: ProgressDisplayComponent) -> list[SlackMessage]:
        return _progress(progress)

    def on_status_indicator(self, status: StatusIndicatorComponent) -> list[SlackMessage]:
        line = f"{status_emoji(status.status)} {escape(status.message)}"
        return _one_line(line, status.message)

    def on_badge(self, badge: BadgeComponent) -> list[SlackMessage]:
        icon = escape(badge.icon) if badge.icon else status_emoji(badge.variant)
        return _one_line(f"{icon} `{escape(badge.text)}`", badge.text)

    def on_icon_text(self, icon: IconTextComponent) -> list[SlackMessage]:
        return _one_line(f"{escape(icon.icon)} {escape(icon.text)}", icon.text)

    def on_log_viewer(self, log: LogViewerComponent) -> list[SlackMessage]:
        return _logs(log)

    def on_task_list(self, tasks: TaskListComponent) -> list[SlackMessage]:
        return _task_list(tasks)

    def on_sign_in(self, prompt: SignInComponent) -> list[SlackMessage]:
        return _sign_in(prompt)

    def on_button(self, button: ButtonComponent) -> list[SlackMessage]:
        return _buttons(button.label, [(button.label, button.action, button.variant)])

    def on_button_group(self, group: ButtonGroupComponent) -> list[SlackMessage]:
        specs = [(b.label, b.action, b.variant) for b in group.buttons if not b.disabled]
        return _buttons("Options", specs)

    def on_dataframe(self, table: DataFrameComponent) -> list[SlackMessage]:
        return render_dataframe(table)

    def on_chart(self, chart: ChartComponent) -> list[SlackMessage]:
        return render_chart(chart)

    def on_artifact(self, artifact: ArtifactComponent) -> list[SlackMessage]:
        return _artifact(artifact)

    def on_status_bar_update(self, bar: StatusBarUpdateComponent) -> list[SlackMessage]:
        return []  # the status line (assistant.threads.setStatus), shown by the stream

    def on_task_tracker_update(self, update: TaskTrackerUpdateComponent) -> list[SlackMessage]:
        return []  # task_update chunks of the streamed answer, shown by the stream

    def on_tool_status(self, status: ToolStatusComponent) -> list[SlackMessage]:
        """A tool call as a status card (the reply stream posts it only when the call failed:
        the plan and the status line show the rest)."""
        return _status(status.tool, call_status_word(status.status), status.detail)

    def on_approval(self, approval: ApprovalComponent) -> list[SlackMessage]:
        """Approve / Deny in the thread, updated in place once decided."""
        return approval_message(approval)

    def on_sources(self, sources: SourcesComponent) -> list[SlackMessage]:
        """The sources line alone (the reply stream puts it, with "Show query", under the
        answer it belongs to)."""
        return pack_messages([sources_block(sources, None)], text=sources.summary())


_RENDERER = SlackRenderer()


def render(component: UiComponent) -> list[SlackMessage]:
    """The messages showing ``component`` (``[]`` when it is not shown as a message)."""
    return _RENDERER.render(component)


def render_text(text: RichTextComponent) -> list[SlackMessage]:
    """Markdown as ``markdown`` blocks; plain text as escaped sections; code fenced."""
    content = text.content
    if text.code_language is not None:
        return pack_messages(
            markdown_blocks(f"```{text.code_language}\n{content}\n```"), text=content
        )
    if text.markdown:
        return pack_messages(markdown_blocks(content), text=content)
    return pack_messages(sections(escape(content)), text=content)


def _body(text: str, markdown: bool) -> str:
    return to_mrkdwn(readable(text)) if markdown else escape(text)


def _card(card: CardComponent) -> list[SlackMessage]:
    status = f"{status_emoji(card.status)} {escape(card.status)}" if card.status else None
    blocks = [
        *header(f"{card.icon} {card.title}" if card.icon else card.title),
        *context(status, escape(card.subtitle) if card.subtitle else None),
        *([] if card.collapsed else sections(_body(card.content, card.markdown))),
        *dict_actions(card.actions),
    ]
    return pack_messages(blocks, text=f"{card.title}: {card.content}")


def _notification(note: NotificationComponent) -> list[SlackMessage]:
    title = f"*{escape(note.title)}*\n" if note.title else ""
    text = truncate(f"{title}{to_mrkdwn(note.message)}", MAX_SECTION_TEXT) or " "
    alert = AlertBlock(text=MarkdownTextObject(text=text), level=note.level).to_dict()
    summary = f"{note.title}: {note.message}" if note.title else note.message
    return pack_messages([alert, *dict_actions(note.actions)], text=summary)


SEVERITIES = frozenset({"error", "warning", "info"})
"""Statuses the emoji already says: not repeated as a word ("Error · error")."""


def _status_card(card: StatusCardComponent) -> list[SlackMessage]:
    return _status(
        card.title,
        card.status,
        card.description,
        icon=card.icon,
        details=None if card.collapsed else card.metadata,
        actions=card.actions,
    )


def _status(
    title: str,
    status: str,
    description: str | None,
    *,
    icon: str | None = None,
    details: dict[str, Any] | None = None,
    actions: list[dict[str, Any]] | None = None,
) -> list[SlackMessage]:
    """The message of a status: its emoji and title, the status word unless the emoji says
    it, the description, then ``details`` as key: value lines and ``actions``."""
    state = "" if status in SEVERITIES else f" · {escape(status)}"
    line = f"{escape(icon) if icon else status_emoji(status)} *{escape(title)}*{state}"
    lines = [f"*{escape(str(k))}:* {escape(str(v))}" for k, v in (details or {}).items()]
    blocks = [
        *sections(line + (f"\n{to_mrkdwn(description)}" if description else "")),
        *context(*lines[:10]),
        *dict_actions(actions or []),
    ]
    summary = f"{title}: {status}" + (f" ({description})" if description else "")
    return pack_messages(blocks, text=summary)


def progress_bar(value: float, width: int = 10) -> str:
    """``progress_bar(0.5) == "▓▓▓▓▓░░░░░"``"""
    filled = round(max(0.0, min(1.0, value)) * width)
    return "▓" * filled + "░" * (width - filled)


def _progress(p: ProgressBarComponent | ProgressDisplayComponent) -> list[SlackMessage]:
    label = p.label or "Progress"
    if isinstance(p, ProgressDisplayComponent) and p.indeterminate:
        line = f":hourglass_flowing_sand: *{escape(label)}*"
    else:
        percent = f" {round(p.value * 100)}%" if p.show_percentage else ""
        line = f"*{escape(label)}*\n`{progress_bar(p.value)}`{percent}"
    description = getattr(p, "description", None)
    if description:
        line += f"\n{to_mrkdwn(description)}"
    return pack_messages(sections(line), text=f"{label}: {round(p.value * 100)}%")


def _one_line(mrkdwn: str, plain: str) -> list[SlackMessage]:
    return pack_messages(context(mrkdwn), text=plain)


def _log_line(entry_ts: float, level: str, message: str, timestamps: bool) -> str:
    stamp = dt.datetime.fromtimestamp(entry_ts, dt.UTC).strftime("%H:%M:%S ") if timestamps else ""
    return escape(f"{stamp}{level.upper():<7} {message}".replace("```", "'''"))


def _logs(logs: LogViewerComponent) -> list[SlackMessage]:
    lines = [_log_line(e.timestamp, e.level, e.message, logs.show_timestamps) for e in logs.entries]
    budget = MAX_SECTION_TEXT - 10
    kept: list[str] = []
    for line in reversed(lines):  # newest lines matter most; keep what fits
        if sum(len(k) + 1 for k in kept) + len(line) + 1 > budget:
            break
        kept.insert(0, truncate(line, budget))
    note = f"{len(lines) - len(kept)} earlier lines not shown" if len(kept) < len(lines) else None
    body = "```\n" + "\n".join(kept) + "\n```" if kept else "_No log entries._"
    blocks = [*sections(f"*{escape(logs.title)}*"), *sections(body), *context(note)]
    return pack_messages(blocks, text=f"{logs.title}: {len(lines)} lines")


def _rich_text(text: str) -> dict[str, Any]:
    return {
        "type": "rich_text",
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def _task_list(tasks: TaskListComponent) -> list[SlackMessage]:
    cards = [
        TaskCardBlock(
            task_id=t.id,
            title=truncate(t.title, 150),
            status=TASK_STATUS[t.status],
            details=_rich_text(truncate(t.description, 2000)) if t.description else None,
        )
        for t in tasks.tasks
    ]
    plan = PlanBlock(title=truncate(tasks.title, 150) or "Tasks", tasks=cards).to_dict()
    done = sum(t.status == "completed" for t in tasks.tasks)
    return pack_messages([plan], text=f"{tasks.title}: {done}/{len(tasks.tasks)} done")


def _buttons(summary: str, specs: Sequence[tuple[str, str, str | None]]) -> list[SlackMessage]:
    blocks = action_buttons(specs)
    return pack_messages(blocks, text=summary) if blocks else []


_ARTIFACT_EXTENSIONS = {"html": "html", "svg": "svg", "markdown": "md", "json": "json"}


def _artifact(artifact: ArtifactComponent) -> list[SlackMessage]:
    title = artifact.title or "Artifact"
    extension = _ARTIFACT_EXTENSIONS.get(artifact.artifact_type, "txt")
    upload = FileUpload(
        filename=f"{artifact.artifact_id}.{extension}",
        content=artifact.content.encode(),
        title=title,
    )
    description = escape(artifact.description) if artifact.description else None
    blocks = [*sections(f"*{escape(title)}*"), *context(description)]
    return pack_messages(blocks, text=title, files=[upload])


def render_simple(simple: SimpleComponent | None) -> list[SlackMessage]:
    """The fallback for rich types without a Slack rendering."""
    match simple:
        case SimpleTextComponent():
            return pack_messages(sections(escape(simple.text)), text=simple.text)
        case SimpleLinkComponent():
            return pack_messages(
                sections(link(simple.url, simple.text)), text=simple.text or simple.url
            )
        case SimpleImageComponent():
            return _simple_image(simple)
    return []


def _sign_in(prompt: SignInComponent) -> list[SlackMessage]:
    """The message only the person asked sees: why, and a button opening the sign-in page
    (or, where a button cannot carry the URL, the link itself)."""
    text = prompt.message or f"Connect your {prompt.service} account to go on."
    button = link_button(prompt.label, prompt.url, action_id=SIGN_IN_BUTTON)
    if button is None:
        return pack_messages(sections(escape(text)), text=text)
    return pack_messages([*sections(escape(text)), button], text=text)


def _simple_image(image: SimpleImageComponent) -> list[SlackMessage]:
    alt = image.alt_text or "image"
    inline = image_from_data_uri(image.url)
    if inline is not None:
        mime_type, data = inline
        name = f"image.{IMAGE_TYPES[mime_type]}"
        return [SlackMessage(text=escape(alt), files=[FileUpload(name, data, alt, alt)])]
    if image.url.startswith(("https://", "http://")) and len(image.url) <= 3000:
        return pack_messages([ImageBlock(image_url=image.url, alt_text=alt).to_dict()], text=alt)
    return []


MAX_QUERY_CHARS = MAX_SECTION_TEXT - 200
"""SQL shown per query (a section holds 3,000 characters with its title and fences)."""


def query_messages(sources: Sequence[Source]) -> list[SlackMessage]:
    """The queries behind an answer, for someone allowed to see SQL (posted to them alone):
    each query's tables and rows, then its SQL, cut to what a section holds.

    >>> [m] = query_messages([Source(tool="run_sql", query="SELECT 1", tables=["t"], rows=1)])
    >>> m.blocks[0]["text"]["text"].splitlines()
    ['*Query 1* · `t` · 1 row', '```SELECT 1```']
    """
    blocks: list[dict[str, Any]] = []
    for number, source in enumerate(sources, start=1):
        facts = [f"*Query {number}*"]
        facts += [", ".join(f"`{escape(truncate(t, 100))}`" for t in source.tables[:20])]
        facts += [source.rows_text()]
        sql = source.query.strip().replace("```", "` ` `")
        if len(sql) > MAX_QUERY_CHARS:
            sql = sql[: MAX_QUERY_CHARS - 40].rstrip() + "\n-- (cut: the query is longer)"
        sql = escape(sql)
        title = " · ".join(fact for fact in facts if fact)
        blocks.extend(sections(f"{title}\n```{sql}```"))
    count = len(sources)
    return pack_messages(
        blocks, text=f"The {count} quer{'y' if count == 1 else 'ies'} behind this answer"
    )
