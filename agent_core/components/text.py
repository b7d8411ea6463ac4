"""Text-like rich components: markdown text, cards, artifacts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agent_core.components.base import ComponentType, RichComponent, new_component_id

StatusLevel = Literal["success", "info", "warning", "error"]


class RichTextComponent(RichComponent):
    """Text, usually the LLM's markdown answer.

    While an answer streams, the agent yields one ``create`` and then ``update`` versions whose
    ``content`` is the full text so far, ``delta`` what was appended since the previous version
    and ``streaming`` True; the last version has ``streaming=False``.

    >>> RichTextComponent(content="**hi**", markdown=True).markdown
    True
    """

    type: ComponentType = ComponentType.TEXT
    content: str
    markdown: bool = False
    delta: str | None = None
    streaming: bool = False
    generated: bool = True
    """Written by the model (channels label it "AI generated"); False for fixed text such as
    a command's answer."""
    code_language: str | None = None
    font_size: str | None = None
    font_weight: str | None = None
    text_align: str | None = None


class CardComponent(RichComponent):
    """A titled card with optional actions (``[{"label": ..., "action": ...}]``).

    >>> CardComponent(title="Setup", content="All good", status="success").status
    'success'
    """

    type: ComponentType = ComponentType.CARD
    title: str
    content: str
    subtitle: str | None = None
    icon: str | None = None
    status: StatusLevel | None = None
    actions: list[dict[str, Any]] = Field(default_factory=list)
    collapsible: bool = False
    collapsed: bool = False
    markdown: bool = False


class ArtifactComponent(RichComponent):
    """Self-contained HTML/SVG content a web client can sandbox; chat channels link or skip it.

    >>> ArtifactComponent(content="<svg/>", artifact_type="svg").artifact_type
    'svg'
    """

    type: ComponentType = ComponentType.ARTIFACT
    artifact_id: str = Field(default_factory=lambda: f"artifact_{new_component_id()}")
    content: str
    artifact_type: str
    title: str | None = None
    description: str | None = None
    editable: bool = True
    fullscreen_capable: bool = True
    external_renderable: bool = True
