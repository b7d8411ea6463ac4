"""``[llm]`` settings -> the LLM service, with the platform's credentials checked at start.

``build_llm_service(settings)`` is what every command calls: ``None`` while no Claude is
configured (the scripted demo model answers), else ``AnthropicLlmService`` over the chosen
platform's SDK client. What a platform needs and cannot find is a ``ConfigError`` naming
the setting to change, before anything is served::

    bedrock   the 'bedrock' extra (boto3); a region; an AWS profile that exists; credentials
              from the AWS chain (or a Bedrock API key)
    vertex    the 'vertex' extra (google-auth); a region; application default credentials;
              a project (configured, or the credentials' own)
    foundry   a resource or endpoint; the resource key, or (foundry_auth = "entra") the
              'foundry' extra (azure-identity) for a Microsoft Entra token

Wrong credentials (a key the platform refuses) are found by ``threadline doctor`` and, at
the latest, by the first call, as ``LlmAuthenticationError`` in the platform's words.

>>> build_llm_service(ModelSettings()) is None  # no key: the scripted demo model
True
>>> try:
...     build_llm_service(ModelSettings(provider="foundry", foundry_resource="acme"))
... except ConfigError as error:
...     print(error.problems[0].where, "-", error.problems[0].problem)
[llm] foundry_api_key - Foundry needs the resource's key
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from agent_core.llm.settings import ModelSettings
from agent_core.settings import ConfigError, ConfigProblem

if TYPE_CHECKING:
    from agent_core.llm.anthropic import AnthropicLlmService
    from agent_core.observability import ObservabilityProvider

EXTRAS: dict[str, tuple[str, ...]] = {
    "bedrock": ("boto3", "botocore"),
    "vertex": ("google.auth",),
    "foundry": ("azure.identity",),
}
"""Each provider's extra and the modules it brings (``pip install 'threadline[bedrock]'``)."""

GOOGLE_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
ENTRA_SCOPE = "https://ai.azure.com/.default"


def _problem(where: str, problem: str, fix: str = "") -> ConfigError:
    return ConfigError([ConfigProblem(f"[llm] {where}", problem, fix)])


def missing_modules(extra: str) -> list[str]:
    """The modules of a provider's extra that are not installed."""
    absent = []
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            absent.append(module)
    return absent


def require_extra(extra: str, needed_by: str) -> None:
    """A ``ConfigError`` naming the extra (and how to install it) when it is missing."""
    if absent := missing_modules(extra):
        raise _problem(
            "provider",
            f"{needed_by} needs the '{extra}' extra (missing: {', '.join(absent)})",
            f"pip install 'threadline[{extra}]'",
        )


def build_llm_service(
    settings: ModelSettings, *, observability_provider: ObservabilityProvider | None = None
) -> AnthropicLlmService | None:
    """The configured service (see the module docstring); raises ``ConfigError``."""
    if not settings.uses_claude:
        return None
    options: dict[str, Any] = {
        "model": settings.model,
        "timeout": settings.timeout,
        "first_byte_timeout": settings.first_byte_timeout,
        "observability_provider": observability_provider,
    }
    match settings.provider:
        case "bedrock":
            return _bedrock(settings, options)
        case "vertex":
            return _vertex(settings, options)
        case "foundry":
            return _foundry(settings, options)
        case _:
            from agent_core.llm.anthropic import AnthropicLlmService

            assert settings.api_key is not None
            key = settings.api_key.get_secret_value()
            return AnthropicLlmService(api_key=key, base_url=settings.base_url, **options)


def _bedrock(settings: ModelSettings, options: dict[str, Any]) -> AnthropicLlmService:
    from agent_core.llm.platforms import bedrock_service

    require_extra("bedrock", 'provider = "bedrock"')
    region = bedrock_region(settings)
    api_key = settings.bedrock_api_key.get_secret_value() if settings.bedrock_api_key else None
    if api_key is None:
        check_aws_credentials(settings, region)
    return bedrock_service(
        aws_region=region,
        aws_profile=settings.aws_profile if api_key is None else None,
        api_key=api_key,
        base_url=settings.bedrock_base_url,
        **options,
    )


def bedrock_region(settings: ModelSettings) -> str:
    """``aws_region``, else the AWS profile's region; a ``ConfigError`` when neither is set."""
    import boto3
    import botocore.exceptions

    if settings.aws_region:
        return settings.aws_region
    try:
        region = boto3.Session(profile_name=settings.aws_profile).region_name
    except botocore.exceptions.ProfileNotFound:
        region = None
    if not region:
        raise _problem(
            "aws_region",
            "Bedrock needs an AWS region",
            "set it in threadline.toml or with AWS_REGION (e.g. us-east-1)",
        )
    return str(region)


def check_aws_credentials(settings: ModelSettings, region: str) -> None:
    """A ``ConfigError`` unless the AWS credential chain finds credentials (no network call
    beyond what the chain itself does: environment, files, SSO cache, container/instance)."""
    import boto3
    import botocore.exceptions

    try:
        session = boto3.Session(profile_name=settings.aws_profile, region_name=region)
        credentials = session.get_credentials()
    except botocore.exceptions.ProfileNotFound:
        raise _problem(
            "aws_profile",
            f"no AWS profile {settings.aws_profile!r} in the AWS config files",
            "check AWS_PROFILE / [llm] aws_profile, or ~/.aws/config",
        ) from None
    except botocore.exceptions.BotoCoreError as error:
        raise _problem("aws_profile", f"the AWS credentials could not be read: {error}") from None
    if credentials is None:
        raise _problem(
            'provider = "bedrock"',
            "no AWS credentials found",
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, [llm] aws_profile (AWS_PROFILE) "
            "or bedrock_api_key (AWS_BEARER_TOKEN_BEDROCK), or run with an IAM role",
        )


def _vertex(settings: ModelSettings, options: dict[str, Any]) -> AnthropicLlmService:
    from agent_core.llm.platforms import vertex_service

    require_extra("vertex", 'provider = "vertex"')
    if not settings.vertex_region:
        raise _problem(
            "vertex_region",
            "Vertex AI needs a region",
            "set it in threadline.toml or with CLOUD_ML_REGION (e.g. us-east5 or global)",
        )
    credentials, project = google_credentials(settings)
    return vertex_service(
        project=project,
        region=settings.vertex_region,
        credentials=credentials,
        base_url=settings.vertex_base_url,
        **options,
    )


def google_credentials(settings: ModelSettings) -> tuple[Any, str]:
    """The application default credentials and the project (configured, else theirs)."""
    import google.auth
    import google.auth.exceptions

    try:
        credentials, found = google.auth.default(scopes=[GOOGLE_SCOPE])
    except google.auth.exceptions.GoogleAuthError as error:
        raise _problem(
            'provider = "vertex"',
            f"no Google application default credentials ({error})",
            "run 'gcloud auth application-default login', set GOOGLE_APPLICATION_CREDENTIALS "
            "to a credentials file, or run with a service account",
        ) from None
    project = settings.vertex_project or found
    if not project:
        raise _problem(
            "vertex_project",
            "Vertex AI needs a Google Cloud project (the credentials name none)",
            "set it in threadline.toml or with ANTHROPIC_VERTEX_PROJECT_ID",
        )
    return credentials, str(project)


def _foundry(settings: ModelSettings, options: dict[str, Any]) -> AnthropicLlmService:
    from agent_core.llm.platforms import foundry_service

    if not settings.foundry_resource and not settings.foundry_base_url:
        raise _problem(
            "foundry_resource",
            "Foundry needs the resource name (or foundry_base_url)",
            "set it in threadline.toml or with ANTHROPIC_FOUNDRY_RESOURCE",
        )
    where: dict[str, Any] = {
        "resource": None if settings.foundry_base_url else settings.foundry_resource,
        "base_url": settings.foundry_base_url,
    }
    if settings.foundry_auth == "entra":
        return foundry_service(token_provider=entra_token_provider(), **where, **options)
    if settings.foundry_api_key is None:
        raise _problem(
            "foundry_api_key",
            "Foundry needs the resource's key",
            "set it in threadline.toml or with ANTHROPIC_FOUNDRY_API_KEY, "
            'or foundry_auth = "entra"',
        )
    key = settings.foundry_api_key.get_secret_value()
    return foundry_service(api_key=key, **where, **options)


def entra_token_provider() -> Any:
    """Microsoft Entra tokens for Foundry from ``DefaultAzureCredential`` (environment,
    workload identity, managed identity, Azure CLI), fetched and cached by azure-identity."""
    require_extra("foundry", 'foundry_auth = "entra"')
    from azure.identity.aio import DefaultAzureCredential, get_bearer_token_provider

    return get_bearer_token_provider(DefaultAzureCredential(), ENTRA_SCOPE)
