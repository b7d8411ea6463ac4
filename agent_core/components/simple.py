"""Plain fallbacks: text, image and link."""

from __future__ import annotations

from pydantic import Field

from agent_core.components.base import SimpleComponent, SimpleComponentType


class SimpleTextComponent(SimpleComponent):
    """Plain text. ``SimpleTextComponent(text="5 rows")``"""

    type: SimpleComponentType = SimpleComponentType.TEXT
    text: str


class SimpleImageComponent(SimpleComponent):
    """An image by URL; ``data:image/png;base64,...`` URLs carry generated charts."""

    type: SimpleComponentType = SimpleComponentType.IMAGE
    url: str
    alt_text: str | None = Field(default=None)


class SimpleLinkComponent(SimpleComponent):
    """A link. ``SimpleLinkComponent(url="https://example.com", text="docs")``"""

    type: SimpleComponentType = SimpleComponentType.LINK
    url: str
    text: str | None = None
