"""Files attached in the console, between their upload and the question they go with.

The page uploads each attached file (``POST /api/files``) before it sends the question, as
Slack and Teams store a file before the message that shares it. ``ConsoleUploads`` keeps the
bytes, who attached them (the persona at upload time, the file's owner as in a signed Slack
event) and their size, and hands them to the turn as ``SharedFile``s whose download reads
them back: the turn then goes through ``bots.files.take_files`` exactly as the bots' turns
do (the same limits, the same scope, the same notices). An upload is read at most once, and
at most ``keep`` wait at a time (the oldest is dropped first).

>>> import asyncio
>>> uploads = ConsoleUploads()
>>> upload = uploads.add("sales.csv", b"n\\n1\\n", owner="U0ANA")
>>> [(f.name, f.owner, f.size) for f in uploads.shared([upload.id])]
[('sales.csv', 'U0ANA', 4)]
>>> asyncio.run(uploads.fetch(uploads.shared([upload.id])[0]))
b'n\\n1\\n'
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.files import FileRefused, SharedFile

URL_PREFIX = "console-upload:"


@dataclass(frozen=True)
class Upload:
    """One attached file waiting for its question."""

    id: str
    name: str
    owner: str
    content: bytes

    @property
    def size(self) -> int:
        return len(self.content)


class ConsoleUploads:
    """The console's attached files; see the module docstring."""

    def __init__(self, *, keep: int = 20) -> None:
        self.keep = keep
        self._uploads: OrderedDict[str, Upload] = OrderedDict()

    def add(self, name: str, content: bytes, *, owner: str) -> Upload:
        """Keep ``content``, attached by ``owner``; its upload (with the id the question
        names it by)."""
        upload = Upload(id=os.urandom(8).hex(), name=name, owner=owner, content=content)
        self._uploads[upload.id] = upload
        while len(self._uploads) > self.keep:
            self._uploads.popitem(last=False)
        return upload

    def missing(self, ids: Sequence[str]) -> list[str]:
        """The ``ids`` no upload has (never uploaded, already asked about, or dropped)."""
        return [upload_id for upload_id in ids if upload_id not in self._uploads]

    def shared(self, ids: Sequence[str]) -> list[SharedFile]:
        """The uploads ``ids`` as files shared with a message (unknown ids left out)."""
        found = [self._uploads[upload_id] for upload_id in ids if upload_id in self._uploads]
        return [
            SharedFile(
                name=upload.name,
                url=URL_PREFIX + upload.id,
                owner=upload.owner,
                size=upload.size,
                file_id=upload.id,
            )
            for upload in found
        ]

    async def fetch(self, file: SharedFile) -> bytes:
        """The file's bytes, once (the console's "download"); ``FileRefused`` when gone."""
        upload = self._uploads.pop(file.url.removeprefix(URL_PREFIX), None)
        if upload is None:
            raise FileRefused(f"{file.name} is no longer uploaded; attach it again")
        return upload.content
