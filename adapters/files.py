"""Files shared with a question, as both channels describe them before download.

Each wing's ``files`` module reads them from the signed payload (``shared_files``) and
downloads them (``download``) with its platform's credentials, at most ``max_bytes``;
``adapters.slack.files`` and ``adapters.teams.files``. ``FileRefused`` is a file that is
not downloaded, with the reason in words for the person who shared it.

>>> SharedFile(name="sales.csv", url="https://files.slack.com/x", owner="U1", size=10).name
'sales.csv'
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from agent_core.database.file_formats import too_big
from agent_core.errors import ValidationError

__all__ = ["FileRefused", "SharedFile", "too_big"]


def plain_name(name: str) -> str:
    """A file name safe to repeat in a message: no markup a channel would act on (``<!here>``,
    ``<@U1>``), no control characters, at most 120 characters.

    >>> plain_name("<!channel> sales\\t.csv")
    '!channel sales.csv'
    """
    kept = "".join(c for c in name if c.isprintable() and c not in "<>&`")
    return kept.strip()[:120] or "file"


class SharedFile(BaseModel):
    """One file shared with a message: where to download it and whose it is.

    ``owner`` is the platform user who shared it (from the signed payload); ``size`` the
    size the platform announced (None when it does not say); ``name`` is made plain
    (``plain_name``): it is repeated in messages and to the model.
    """

    model_config = ConfigDict(frozen=True)

    name: Annotated[str, AfterValidator(plain_name)]
    url: str
    owner: str
    size: int | None = None
    file_id: str | None = None


class FileRefused(ValidationError):
    """A shared file that was not downloaded (too big, not the asker's, unreachable); the
    message names the file and says why, for the person who shared it."""
