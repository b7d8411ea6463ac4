"""Is the configured Claude reachable with these credentials? Checked without generating.

``probe(settings)`` asks each platform the cheapest question that proves both the
credentials and the model, and says what it asked::

    anthropic   GET /v1/models/{model}                          a model lookup
    bedrock     POST /model/{model}/count-tokens (boto3, SigV4)  a token count
    vertex      POST .../models/count-tokens:rawPredict          a token count
    foundry     POST /anthropic/v1/messages/count_tokens         a token count

None of them generates anything. A Bedrock API key (bearer) cannot be checked this way by
boto3, so the probe says it checked the settings only. A refusal is the platform's own
message (``Amazon Bedrock error 403: ...``), never a traceback.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from agent_core.errors import LlmAuthenticationError, LlmBadRequestError, LlmError
from agent_core.llm.anthropic_errors import PROVIDER_NAMES, translate_error
from agent_core.llm.settings import ModelSettings
from agent_core.settings import ConfigError

PING = [{"role": "user", "content": "ping"}]


@dataclass(frozen=True)
class Probe:
    """The verdict: ``ok``, and one line saying what was checked (or what is wrong).

    >>> Probe(True, "key accepted").ok
    True
    """

    ok: bool
    detail: str
    skipped: bool = False


async def probe(settings: ModelSettings) -> Probe:
    """Check ``settings``'s provider (see the module docstring)."""
    from agent_core.llm.providers import build_llm_service

    if not settings.uses_claude:
        return Probe(True, "no ANTHROPIC_API_KEY: the scripted demo model answers", skipped=True)
    try:
        service = build_llm_service(settings)
    except ConfigError as error:
        return Probe(False, "; ".join(str(problem) for problem in error.problems))
    assert service is not None
    name = PROVIDER_NAMES[settings.provider]
    try:
        async with service:
            what = await _ask(settings, service.client, service.model)
    except LlmError as error:
        return _refused(settings, error)
    except Exception as error:
        translated = _aws_refusal(error) or translate_error(error, settings.provider)
        if translated is None:
            raise
        return _refused(settings, translated)
    return Probe(True, f"{name}, {service.model}: {what}")


CREDENTIALS = {
    "anthropic": "[llm] api_key (ANTHROPIC_API_KEY)",
    "bedrock": "the AWS credentials ([llm] aws_profile / AWS_PROFILE, AWS_ACCESS_KEY_ID, the "
    "role) and the model access granted in Bedrock",
    "vertex": "the Google credentials (GOOGLE_APPLICATION_CREDENTIALS) and [llm] vertex_project",
    "foundry": "[llm] foundry_api_key (ANTHROPIC_FOUNDRY_API_KEY) or the Entra identity's role",
}
"""What to check when a provider refuses the credentials."""


def _refused(settings: ModelSettings, error: LlmError) -> Probe:
    """The platform's words, and which setting to look at."""
    if isinstance(error, LlmAuthenticationError) or " error 403" in str(error):
        return Probe(False, f"{error} (check {CREDENTIALS[settings.provider]})")
    if isinstance(error, LlmBadRequestError) or " error 400" in str(error):
        return Probe(False, f"{error} (check [llm] model / ANTHROPIC_MODEL, and the region)")
    return Probe(False, str(error))


async def _ask(settings: ModelSettings, client: Any, model: str) -> str:
    match settings.provider:
        case "anthropic":
            await client.models.retrieve(model)
            return "key accepted, model found (a model lookup: no tokens spent)"
        case "bedrock":
            if settings.bedrock_api_key is not None:
                return "settings complete; the API key is checked by the first answer"
            counted = await asyncio.to_thread(_bedrock_count, settings, client, model)
            return (
                f"credentials accepted, model found (a token count: {counted}, nothing generated)"
            )
        case _:
            counted = await client.messages.count_tokens(model=model, messages=PING)
            return (
                "credentials accepted, model found "
                f"(a token count: {counted.input_tokens}, nothing generated)"
            )


def _bedrock_count(settings: ModelSettings, client: Any, model: str) -> int:
    """``CountTokens`` through boto3's own Bedrock runtime client, signed by the same
    credential chain the answers use."""
    import boto3

    session = boto3.Session(profile_name=settings.aws_profile, region_name=client.aws_region)
    runtime = session.client(
        "bedrock-runtime",
        endpoint_url=settings.bedrock_base_url,
        config=_boto_config(),
    )
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 1, "messages": PING}
    try:
        counted = runtime.count_tokens(
            modelId=model, input={"invokeModel": {"body": json.dumps(body).encode()}}
        )
    finally:
        runtime.close()
    return int(counted["inputTokens"])


def _aws_refusal(error: Exception) -> LlmError | None:
    """Bedrock's answer to boto3, in its words (``ClientError`` carries code and message)."""
    if not type(error).__module__.startswith("botocore"):
        return None
    from botocore.exceptions import ClientError

    if not isinstance(error, ClientError):
        return None
    response: Any = error.response
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
    detail = response.get("Error", {})
    message = detail.get("Message") or detail.get("Code") or str(error)
    return LlmError(f"{PROVIDER_NAMES['bedrock']} error {status}: {message}")


def _boto_config() -> Any:
    from botocore.config import Config

    return Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10)
