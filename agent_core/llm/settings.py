"""``[llm]``: which Claude every agent the commands build talks to, and where it runs.

``provider`` picks the platform; each has its own settings, read from the file or the
platform's usual environment variables (the ones its own SDK and CLI read)::

    provider = "anthropic"   api_key (ANTHROPIC_API_KEY), base_url
    provider = "bedrock"     aws_region (AWS_REGION), aws_profile (AWS_PROFILE) or the AWS
                             credential chain, or bedrock_api_key (AWS_BEARER_TOKEN_BEDROCK)
    provider = "vertex"      vertex_project (ANTHROPIC_VERTEX_PROJECT_ID), vertex_region
                             (CLOUD_ML_REGION); Google application default credentials
    provider = "foundry"     foundry_resource (ANTHROPIC_FOUNDRY_RESOURCE); foundry_api_key
                             (ANTHROPIC_FOUNDRY_API_KEY) or foundry_auth = "entra"

``model`` is the platform's name for the model: a Claude model id, a Bedrock model id or
inference profile, a Vertex model id, a Foundry deployment. ``threadline config`` shows
every one of these with secrets masked.

>>> ModelSettings(provider="bedrock", aws_region="eu-west-1").uses_claude
True
>>> ModelSettings().uses_claude  # no key: the scripted demo model answers
False
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from agent_core.settings import Section, env

Provider = Literal["anthropic", "bedrock", "vertex", "foundry"]
FoundryAuth = Literal["api_key", "entra"]


class ModelSettings(Section):
    """``[llm]``: the model every agent the commands build talks to (see the module)."""

    table = "llm"

    provider: Provider = Field(
        "anthropic", validation_alias=env("provider", "THREADLINE_LLM_PROVIDER")
    )
    """Where Claude runs: ``anthropic``, ``bedrock``, ``vertex`` or ``foundry``."""
    api_key: SecretStr | None = Field(None, validation_alias=env("api_key", "ANTHROPIC_API_KEY"))
    model: str | None = Field(None, validation_alias=env("model", "ANTHROPIC_MODEL"))
    """The model id, Bedrock model id / inference profile, or Foundry deployment name."""
    base_url: str | None = Field(None, validation_alias=env("base_url", "ANTHROPIC_BASE_URL"))
    timeout: float = Field(120.0, gt=0, validation_alias=env("timeout", "THREADLINE_LLM_TIMEOUT"))
    """Seconds to connect and to wait for each piece of an answer (all of an unstreamed one)."""
    first_byte_timeout: float = Field(
        15.0, gt=0, validation_alias=env("first_byte_timeout", "THREADLINE_LLM_FIRST_BYTE_TIMEOUT")
    )
    """Seconds a streamed answer may take to start: a hung API fails (and is retried) fast."""
    scripted: bool = Field(False, validation_alias=env("scripted", "THREADLINE_SCRIPTED"))
    """Use the scripted demo model even when a key is set (demos, tests)."""
    stream_delay: float = Field(
        0.0, ge=0, validation_alias=env("stream_delay", "THREADLINE_DEMO_STREAM_DELAY")
    )
    """Seconds between the scripted demo model's chunks, so a demo visibly streams."""

    aws_region: str | None = Field(
        None, validation_alias=env("aws_region", "AWS_REGION", "AWS_DEFAULT_REGION")
    )
    """Bedrock: the AWS region (``us-east-1``)."""
    aws_profile: str | None = Field(None, validation_alias=env("aws_profile", "AWS_PROFILE"))
    """Bedrock: a profile of ``~/.aws/config``; unset: the AWS credential chain (environment
    keys, SSO, container or instance role)."""
    bedrock_api_key: SecretStr | None = Field(
        None, validation_alias=env("bedrock_api_key", "AWS_BEARER_TOKEN_BEDROCK")
    )
    """Bedrock: an Amazon Bedrock API key, instead of signing with AWS credentials."""
    bedrock_base_url: str | None = Field(
        None, validation_alias=env("bedrock_base_url", "ANTHROPIC_BEDROCK_BASE_URL")
    )
    """Bedrock: another runtime endpoint (a VPC endpoint); unset: the region's."""

    vertex_project: str | None = Field(
        None,
        validation_alias=env(
            "vertex_project", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT"
        ),
    )
    """Vertex: the Google Cloud project; unset: the credentials' own project."""
    vertex_region: str | None = Field(
        None, validation_alias=env("vertex_region", "CLOUD_ML_REGION")
    )
    """Vertex: the region (``us-east5``, ``europe-west1``, ``global``)."""
    vertex_base_url: str | None = Field(
        None, validation_alias=env("vertex_base_url", "ANTHROPIC_VERTEX_BASE_URL")
    )
    """Vertex: another endpoint (Private Service Connect); unset: the region's."""

    foundry_resource: str | None = Field(
        None, validation_alias=env("foundry_resource", "ANTHROPIC_FOUNDRY_RESOURCE")
    )
    """Foundry: the resource name (``https://{resource}.services.ai.azure.com``)."""
    foundry_base_url: str | None = Field(
        None, validation_alias=env("foundry_base_url", "ANTHROPIC_FOUNDRY_BASE_URL")
    )
    """Foundry: the endpoint instead of the resource name."""
    foundry_api_key: SecretStr | None = Field(
        None, validation_alias=env("foundry_api_key", "ANTHROPIC_FOUNDRY_API_KEY")
    )
    """Foundry: the resource's key."""
    foundry_auth: FoundryAuth = Field(
        "api_key", validation_alias=env("foundry_auth", "THREADLINE_FOUNDRY_AUTH")
    )
    """Foundry: ``api_key``, or ``entra`` for a Microsoft Entra token from
    ``DefaultAzureCredential`` (managed identity, workload identity, ``az login``)."""

    @property
    def uses_claude(self) -> bool:
        """Whether Claude answers: a cloud provider, or Anthropic's API with a key (and not
        ``scripted``)."""
        if self.scripted:
            return False
        return self.provider != "anthropic" or self.api_key is not None
