r"""Detail for people, not parsers: a fenced JSON block (a tool's arguments, shown to admins)
becomes one line per argument, and a long or multi-line string (the SQL) its own code block
with real line breaks, in both channels.

>>> print(readable('```json\n{"sql": "SELECT 1\\nFROM t", "rows": 3}\n```'))
**sql**
```sql
SELECT 1
FROM t
```
**rows**: `3`
"""

from __future__ import annotations

import json
import re
from typing import Any

_JSON_FENCE = re.compile(r"```json[ \t]*\n(.*?)\n```", re.DOTALL)
LONG_VALUE = 60
BACKTICK, QUOTE = "`", "'"
CODE_KEYS = {"sql": "sql", "query": "sql", "code": "", "python": "python"}


def _field(key: str, value: Any) -> str:
    if isinstance(value, str) and ("\n" in value or len(value) > LONG_VALUE):
        language = CODE_KEYS.get(key.lower(), "")
        return f"**{key}**\n```{language}\n{value.strip()}\n```"
    shown = value if isinstance(value, str) else json.dumps(value, default=str)
    return f"**{key}**: `{shown.replace(BACKTICK, QUOTE)}`"


def _as_fields(match: re.Match[str]) -> str:
    try:
        data = json.loads(match.group(1))
    except ValueError:
        return match.group(0)
    if not isinstance(data, dict) or not data:
        return match.group(0)
    return "\n".join(_field(str(key), value) for key, value in data.items())


def readable(markdown: str) -> str:
    """``markdown`` with each fenced JSON object shown as its fields (others unchanged)."""
    return _JSON_FENCE.sub(_as_fields, markdown)
