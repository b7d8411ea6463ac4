"""Plain fallbacks: text, image and link, for clients where nothing richer fits."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class SimpleComponentType(StrEnum):
    TEXT = "text"
    IMAGE = "image"
    LINK = "link"


class SimpleComponent(BaseModel):
    """Base of the plain forms used where nothing richer fits (SMS, logs, CLIs)."""

    model_config = ConfigDict(defer_build=True)

    type: SimpleComponentType
    semantic_type: str | None = None
    metadata: dict[str, Any] | None = None


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
