"""Claude on the cloud platforms: ``AnthropicLlmService`` over each platform's SDK client.

The ``anthropic`` SDK ships a client per platform; each speaks the Messages API with the
platform's own routing and credentials, and each service here has the timeouts and the
retry policy of Anthropic's (the SDK's own retries off; the agent's recovery strategy
retries 429 / throttling, overload, 5xx and timeouts)::

    bedrock_service   AsyncAnthropicBedrock   /model/{id}/invoke[-with-response-stream],
                                              SigV4 from the AWS credential chain (environment,
                                              profile, SSO, container or instance role), or a
                                              Bedrock API key (bearer)
    vertex_service    AsyncAnthropicVertex    .../publishers/anthropic/models/{id}:[stream]
                                              rawPredict, a Google OAuth token (application
                                              default credentials, or one given)
    foundry_service   AsyncAnthropicFoundry   https://{resource}.services.ai.azure.com/
                                              anthropic/v1/messages, the resource key or a
                                              Microsoft Entra token

Bedrock needs ``boto3`` and Vertex ``google-auth`` only when they sign or fetch a token:
the extras ``threadline[bedrock]`` / ``threadline[vertex]`` (``agent_core.llm.providers``
says so when one is missing). Prompt caching works the same on every platform (the same
``cache_control`` breakpoints; each platform bills cache writes and reads).

>>> service = foundry_service(model="claude-sonnet-5-5", api_key="k", resource="acme")
>>> service.provider, str(service.client.base_url)
('foundry', 'https://acme.services.ai.azure.com/anthropic/')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anthropic

from agent_core.llm.anthropic import (
    DEFAULT_FIRST_BYTE_TIMEOUT,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT,
    AnthropicLlmService,
    sdk_timeout,
)

if TYPE_CHECKING:
    from agent_core.observability import ObservabilityProvider

TokenProvider = Callable[[], "str | Awaitable[str]"]


def _service(
    client: Any, provider: str, model: str | None, options: dict[str, Any]
) -> AnthropicLlmService:
    return AnthropicLlmService(
        model=model or DEFAULT_MODEL, client=client, provider=provider, **options
    )


def bedrock_service(
    *,
    model: str | None = None,
    aws_region: str | None = None,
    aws_profile: str | None = None,
    aws_access_key: str | None = None,
    aws_secret_key: str | None = None,
    aws_session_token: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    first_byte_timeout: float = DEFAULT_FIRST_BYTE_TIMEOUT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    observability_provider: ObservabilityProvider | None = None,
) -> AnthropicLlmService:
    """Claude on Amazon Bedrock. ``model`` is a Bedrock model id or inference profile
    (``us.anthropic.claude-sonnet-5-5-v1:0``, an ARN); without keys or ``api_key`` the
    AWS credential chain signs (``AWS_PROFILE`` / ``aws_profile``, the environment, a role)."""
    client = anthropic.AsyncAnthropicBedrock(
        aws_region=aws_region,
        aws_profile=aws_profile,
        aws_access_key=aws_access_key,
        aws_secret_key=aws_secret_key,
        aws_session_token=aws_session_token,
        api_key=api_key,
        base_url=base_url,
        timeout=sdk_timeout(timeout),
        max_retries=0,
    )
    options = _options(timeout, first_byte_timeout, max_tokens, observability_provider)
    return _service(client, "bedrock", model, options)


def vertex_service(
    *,
    model: str | None = None,
    project: str | None = None,
    region: str,
    credentials: Any = None,
    access_token: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    first_byte_timeout: float = DEFAULT_FIRST_BYTE_TIMEOUT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    observability_provider: ObservabilityProvider | None = None,
) -> AnthropicLlmService:
    """Claude on Google Cloud Vertex AI. ``model`` is Vertex's id (``claude-sonnet-5-5``,
    ``claude-...@20261001``); ``credentials`` a google-auth credential (default: the
    application default credentials) or a ready ``access_token``."""
    client = anthropic.AsyncAnthropicVertex(
        region=region,
        project_id=project if project else anthropic.NOT_GIVEN,
        credentials=credentials,
        access_token=access_token,
        base_url=base_url,
        timeout=sdk_timeout(timeout),
        max_retries=0,
    )
    options = _options(timeout, first_byte_timeout, max_tokens, observability_provider)
    return _service(client, "vertex", model, options)


def foundry_service(
    *,
    model: str | None = None,
    resource: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    token_provider: TokenProvider | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    first_byte_timeout: float = DEFAULT_FIRST_BYTE_TIMEOUT,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    observability_provider: ObservabilityProvider | None = None,
) -> AnthropicLlmService:
    """Claude on Microsoft Foundry. ``model`` is the deployment's name; ``resource`` the
    Foundry resource (or ``base_url``); ``api_key`` the resource key, or ``token_provider``
    a function returning a Microsoft Entra token (called before every request)."""
    auth: dict[str, Any] = {"api_key": api_key, "azure_ad_token_provider": token_provider}
    client = (
        anthropic.AsyncAnthropicFoundry(
            base_url=base_url, timeout=sdk_timeout(timeout), max_retries=0, **auth
        )
        if base_url is not None
        else anthropic.AsyncAnthropicFoundry(
            resource=resource, timeout=sdk_timeout(timeout), max_retries=0, **auth
        )
    )
    options = _options(timeout, first_byte_timeout, max_tokens, observability_provider)
    return _service(client, "foundry", model, options)


def _options(
    timeout: float,
    first_byte_timeout: float,
    max_tokens: int,
    observability_provider: ObservabilityProvider | None,
) -> dict[str, Any]:
    return {
        "timeout": timeout,
        "first_byte_timeout": first_byte_timeout,
        "max_tokens": max_tokens,
        "observability_provider": observability_provider,
    }
