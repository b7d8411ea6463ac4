"""``[llm] provider``: settings -> the service, with each platform's standard credentials
found the way its own SDK finds them (issue 28, item 1), and ``threadline doctor``'s check
of each provider without generating anything.

Bedrock: keys in the environment, or a profile of an AWS config file (the AWS credential
chain). Vertex: application default credentials from a service-account key file whose
token endpoint is the fake (the JWT's signature is checked there). Foundry: the resource
key. Missing or wrong credentials are one clear problem naming the setting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agent_core.errors import LlmAuthenticationError
from agent_core.llm.platforms import foundry_service
from agent_core.llm.probe import probe
from agent_core.llm.providers import build_llm_service
from agent_core.llm.settings import ModelSettings
from agent_core.llm.testing import Reply
from agent_core.llm.testing_bedrock import FakeBedrock
from agent_core.llm.testing_foundry import FakeFoundry
from agent_core.llm.testing_vertex import FakeVertex
from agent_core.settings import ConfigError
from tests.llm.support import ask

CLOUD_VARIABLES = ("AWS_", "GOOGLE_", "ANTHROPIC_", "CLOUD_ML_", "CLOUDSDK_", "AZURE_")


@pytest.fixture(autouse=True)
def clean_cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No developer's cloud credentials: empty AWS files, no gcloud, no metadata servers."""
    for name in [n for n in os.environ if n.startswith(CLOUD_VARIABLES)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    yield tmp_path


def problem_of(error: pytest.ExceptionInfo[ConfigError]) -> str:
    return str(error.value.problems[0])


def bedrock_settings(fake: FakeBedrock, **options: object) -> ModelSettings:
    values: dict[str, object] = {
        "provider": "bedrock",
        "model": "us.anthropic.claude-test-v1:0",
        "aws_region": fake.region,
        "bedrock_base_url": fake.base_url,
        **options,
    }
    return ModelSettings.model_validate(values)


async def test_bedrock_signs_with_keys_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with FakeBedrock() as fake:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", fake.key.access_key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", fake.key.secret_access_key)
        fake.queue(Reply.text("Signed."))
        service = build_llm_service(bedrock_settings(fake))
        assert service is not None
        async with service:
            assert (await service.send_request(ask())).content == "Signed."
        assert fake.requests[0].headers["Authorization"].startswith("AWS4-HMAC-SHA256 ")


async def test_bedrock_signs_with_a_profile_of_the_aws_config(clean_cloud: Path) -> None:
    async with FakeBedrock() as fake:
        (clean_cloud / "aws-credentials").write_text(
            f"[analytics]\naws_access_key_id = {fake.key.access_key_id}\n"
            f"aws_secret_access_key = {fake.key.secret_access_key}\n"
        )
        (clean_cloud / "aws-config").write_text(f"[profile analytics]\nregion = {fake.region}\n")
        fake.queue(Reply.text("Profiled."))
        settings = bedrock_settings(fake, aws_region=None, aws_profile="analytics")
        service = build_llm_service(settings)
        assert service is not None
        async with service:
            chunks = [c async for c in service.stream_request(ask(stream=True))]
        assert "".join(c.content or "" for c in chunks) == "Profiled."
        assert f"/{fake.region}/bedrock/" in fake.requests[0].headers["Authorization"]


async def test_bedrock_without_credentials_names_what_to_set() -> None:
    async with FakeBedrock() as fake:
        with pytest.raises(ConfigError) as missing:
            build_llm_service(bedrock_settings(fake))
    assert 'provider = "bedrock"' in problem_of(missing)
    assert "AWS_ACCESS_KEY_ID" in problem_of(missing) and "aws_profile" in problem_of(missing)


async def test_bedrock_with_an_unknown_profile_names_the_setting() -> None:
    async with FakeBedrock() as fake:
        with pytest.raises(ConfigError) as missing:
            build_llm_service(bedrock_settings(fake, aws_profile="nope"))
    assert problem_of(missing).startswith("[llm] aws_profile: no AWS profile 'nope'")


def test_bedrock_without_a_region_names_the_setting() -> None:
    with pytest.raises(ConfigError) as missing:
        build_llm_service(ModelSettings(provider="bedrock"))
    assert problem_of(missing).startswith("[llm] aws_region: Bedrock needs an AWS region")


def service_account_file(folder: Path, fake: FakeVertex) -> Path:
    """A service-account key file whose token endpoint is the fake, which trusts its key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    fake.service_accounts["key-1"] = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    info = {
        "type": "service_account",
        "project_id": fake.project,
        "private_key_id": "key-1",
        "private_key": pem.decode(),
        "client_email": f"threadline@{fake.project}.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": fake.token_uri,
    }
    path = folder / "service-account.json"
    path.write_text(json.dumps(info))
    return path


async def test_vertex_uses_application_default_credentials(
    clean_cloud: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project comes from the credentials; the token from the (fake) token endpoint,
    which checked the service account's signed assertion."""
    async with FakeVertex() as fake:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file(clean_cloud, fake))
        )
        fake.queue(Reply.text("Via ADC."))
        settings = ModelSettings(
            provider="vertex",
            model="claude-test@20261001",
            vertex_region=fake.region,
            vertex_base_url=fake.base_url,
        )
        service = build_llm_service(settings)
        assert service is not None
        async with service:
            assert (await service.send_request(ask())).content == "Via ADC."
        assert [r["grant_type"] for r in fake.token_requests] == [
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        ]
        assert f"/projects/{fake.project}/" in fake.requests[0].path


async def test_vertex_refuses_a_forged_service_account(
    clean_cloud: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeVertex() as fake:
        path = service_account_file(clean_cloud, fake)
        fake.service_accounts["key-1"] = FakeVertexKey.other_public_key()
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
        fake.queue(Reply.text("never"))
        settings = ModelSettings(
            provider="vertex", vertex_region=fake.region, vertex_base_url=fake.base_url
        )
        service = build_llm_service(settings)
        assert service is not None
        async with service:
            with pytest.raises(LlmAuthenticationError):
                await service.send_request(ask())
        assert fake.requests == []


class FakeVertexKey:
    @staticmethod
    def other_public_key() -> bytes:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def test_vertex_without_credentials_names_what_to_do() -> None:
    with pytest.raises(ConfigError) as missing:
        build_llm_service(ModelSettings(provider="vertex", vertex_region="us-east5"))
    assert 'provider = "vertex"' in problem_of(missing)
    assert "gcloud auth application-default login" in problem_of(missing)


def test_vertex_without_a_region_names_the_setting() -> None:
    with pytest.raises(ConfigError) as missing:
        build_llm_service(ModelSettings(provider="vertex"))
    assert problem_of(missing).startswith("[llm] vertex_region:")


async def test_foundry_with_the_resource_key_and_with_an_entra_token() -> None:
    async with FakeFoundry() as fake:
        fake.queue(Reply.text("Keyed."), Reply.text("Entra."))
        settings = ModelSettings.model_validate(
            {
                "provider": "foundry",
                "model": "claude-test",
                "foundry_base_url": fake.base_url,
                "foundry_api_key": fake.api_key,
            }
        )
        keyed = build_llm_service(settings)
        assert keyed is not None

        async def entra_token() -> str:
            return fake.token

        entra = foundry_service(
            model="claude-test", base_url=fake.base_url, token_provider=entra_token
        )
        async with keyed, entra:
            assert (await keyed.send_request(ask())).content == "Keyed."
            assert (await entra.send_request(ask())).content == "Entra."
        assert fake.requests[1].headers["Authorization"] == f"Bearer {fake.token}"
        assert "api-key" not in {k.lower() for k in fake.requests[1].headers}


def test_foundry_without_a_resource_names_the_setting() -> None:
    with pytest.raises(ConfigError) as missing:
        build_llm_service(ModelSettings(provider="foundry"))
    assert problem_of(missing).startswith("[llm] foundry_resource:")


def test_a_missing_extra_is_named_with_its_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_core.llm import providers

    monkeypatch.setitem(providers.EXTRAS, "bedrock", ("boto3", "a_module_nobody_installed"))
    with pytest.raises(ConfigError) as missing:
        build_llm_service(ModelSettings(provider="bedrock", aws_region="us-east-1"))
    assert "needs the 'bedrock' extra (missing: a_module_nobody_installed)" in problem_of(missing)
    assert "pip install 'threadline[bedrock]'" in problem_of(missing)


# -- threadline doctor: each provider checked without generating ----------------------------


async def test_doctor_checks_bedrock_with_a_token_count(monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeBedrock() as fake:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", fake.key.access_key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", fake.key.secret_access_key)
        verdict = await probe(bedrock_settings(fake))
        assert verdict.ok, verdict.detail
        assert "a token count" in verdict.detail and "nothing generated" in verdict.detail
        assert fake.requests == [] and len(fake.token_counts) == 1

        fake.models = {"us.anthropic.claude-other-v1:0"}
        refused = await probe(bedrock_settings(fake))
        assert not refused.ok
        assert "Amazon Bedrock error 400: The provided model identifier is invalid." in (
            refused.detail
        )
        assert "[llm] model" in refused.detail

        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a-wrong-secret")
        wrong = await probe(bedrock_settings(fake))
        assert not wrong.ok and "403" in wrong.detail and "AWS credentials" in wrong.detail
        assert "Traceback" not in wrong.detail


async def test_doctor_checks_vertex_and_foundry_with_a_token_count(
    clean_cloud: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeVertex() as vertex, FakeFoundry() as foundry:
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file(clean_cloud, vertex))
        )
        on_vertex = ModelSettings(
            provider="vertex", vertex_region=vertex.region, vertex_base_url=vertex.base_url
        )
        verdict = await probe(on_vertex)
        assert verdict.ok and "a token count" in verdict.detail, verdict.detail
        assert vertex.requests == [] and len(vertex.token_counts) == 1

        on_foundry = ModelSettings.model_validate(
            {"provider": "foundry", "foundry_base_url": foundry.base_url, "foundry_api_key": "x"}
        )
        wrong = await probe(on_foundry)
        assert not wrong.ok and "Microsoft Foundry error 401" in wrong.detail
        assert "foundry_api_key" in wrong.detail
        keyed = on_foundry.model_validate(
            {**on_foundry.model_dump(), "foundry_api_key": foundry.api_key}
        )
        right = await probe(keyed)
        assert right.ok and foundry.requests == []
