"""An MCP tool's input schema, checked before the model is given it.

A server's schema must be a JSON Schema (2020-12 unless it names another draft) for an
object, small (``MAX_SCHEMA_BYTES``), not too deep, and self-contained: a ``$ref`` may
only point inside the schema (nothing is ever fetched). A tool whose schema fails is left
out of the agent's tools with a note saying why; the server's other tools still come.
Arguments the model writes are then checked against the same schema before anything runs,
and what is wrong is said so the model can correct itself.

>>> schema_problem({"type": "object", "properties": {"q": {"type": "string"}}}) is None
True
>>> schema_problem({"type": "string"})
'the input schema must describe an object (type: object)'
>>> schema_problem({"type": "object", "properties": {"a": {"$ref": "https://x.example/a"}}})
"the input schema refers outside itself ($ref 'https://x.example/a')"
>>> check = ArgumentCheck({"type": "object", "required": ["q"]})
>>> check.problems({})
["(arguments): 'q' is a required property"]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

MAX_SCHEMA_BYTES = 64_000
"""The largest input schema given to the model (it costs context on every turn)."""
MAX_DEPTH = 32
MAX_PROBLEMS = 5
"""Argument problems reported at once (the first ones; the model fixes them and retries)."""


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ("$ref", "$dynamicRef") and isinstance(inner, str):
                yield inner
            else:
                yield from _refs(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _refs(inner)


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be given to the model (``None``: it can); see the module
    docstring."""
    from jsonschema import exceptions, validators

    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "the input schema must describe an object (type: object)"
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError):
        return "the input schema is not JSON"
    if size > MAX_SCHEMA_BYTES:
        return f"the input schema is too large ({size:,} bytes; at most {MAX_SCHEMA_BYTES:,})"
    if _depth(schema) > MAX_DEPTH:
        return f"the input schema is nested more than {MAX_DEPTH} levels deep"
    outside = next((ref for ref in _refs(schema) if not ref.startswith("#")), None)
    if outside is not None:
        return f"the input schema refers outside itself ($ref {outside!r})"
    validator = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except exceptions.SchemaError as invalid:
        where = "/".join(str(part) for part in invalid.path) or "(root)"
        return f"the input schema is not valid JSON Schema at {where}: {invalid.message}"
    return None


class ArgumentCheck:
    """Arguments checked against a tool's (already checked) input schema, compiled once.

    Nothing is fetched while checking: a ``$ref`` outside the schema was refused before.

    >>> ArgumentCheck({"type": "object"}).problems([1])
    ["(arguments): [1] is not of type 'object'"]
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        from jsonschema import validators

        kind = validators.validator_for(schema, default=validators.Draft202012Validator)
        self._validator = kind(schema)

    def problems(self, arguments: Any) -> list[str]:
        """What is wrong with ``arguments``, readable by the model (empty: nothing)."""
        found = []
        for error in self._validator.iter_errors(arguments):
            where = ".".join(str(part) for part in error.absolute_path) or "(arguments)"
            found.append(f"{where}: {error.message[:300]}")
            if len(found) == MAX_PROBLEMS:
                break
        return found
