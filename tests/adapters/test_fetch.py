"""Outbound fetches on someone's behalf (``adapters.fetch``): never to a private address,
never to another scheme, against real servers on 127.0.0.1 (issue 22, item 5)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st
from slack_sdk.web.async_client import AsyncWebClient

from adapters.fetch import Fetcher, FetchPolicy, FetchRefused, OutboundSettings, private_kind
from adapters.files import FileRefused, SharedFile
from adapters.slack import files as slack_files
from adapters.teams import files as teams_files

LOCAL = FetchPolicy.local_fakes()


class Server:
    """A tiny HTTP(S) server on 127.0.0.1 that records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[web.Request] = []
        self.url = ""

    def handler(
        self, answer: Callable[[web.Request], web.StreamResponse]
    ) -> Callable[[web.Request], web.StreamResponse]:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.requests.append(request)
            return answer(request)

        return handle  # type: ignore[return-value]


@asynccontextmanager
async def serving(
    answer: Callable[[web.Request], web.StreamResponse],
    *,
    tls: ssl.SSLContext | None = None,
    host: str = "127.0.0.1",
) -> AsyncIterator[Server]:
    server = Server()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handler(answer))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    server.url = f"{'https' if tls else 'http'}://{host}:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()


def certificate(folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: the server's context, and a client context
    that trusts it (and nothing else)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client


class FakeDns(AbstractResolver):
    """Names -> addresses, as a hostile DNS answers them."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self.answers[host]
        kind = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            ResolveResult(hostname=host, host=address, port=port, family=kind, proto=0, flags=0)
        ]

    async def close(self) -> None:
        return None


def ok(request: web.Request) -> web.StreamResponse:
    return web.Response(body=b"region,amount\nEU,1\n")


def redirect_to(url: str) -> Callable[[web.Request], web.StreamResponse]:
    def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(status=302, headers={"Location": url})

    return answer


async def test_an_https_download_url_redirecting_to_an_internal_http_service_is_refused(
    tmp_path: Path,
) -> None:
    """Regression (issue 22, item 5): Teams file downloads followed redirects anywhere: an
    https ``downloadUrl`` redirecting to an internal http service was fetched and its
    content shown to the asker as a table."""
    tls, trust = certificate(tmp_path)
    async with serving(ok) as internal:
        secret = f"{internal.url}/admin/export.csv"
        async with serving(redirect_to(secret), tls=tls) as outside:
            shared = SharedFile(name="sales.csv", url=f"{outside.url}/d/1", owner="aad-1")
            async with Fetcher(LOCAL, ssl=trust) as fetcher:
                with pytest.raises(FileRefused, match="its link is not allowed"):
                    await teams_files.download(fetcher, shared, max_bytes=10_000)
            assert len(outside.requests) == 1
            assert internal.requests == []


async def test_a_same_scheme_redirect_is_followed(tmp_path: Path) -> None:
    tls, trust = certificate(tmp_path)
    async with serving(ok, tls=tls) as target:
        async with serving(redirect_to(f"{target.url}/file"), tls=tls) as first:
            shared = SharedFile(name="sales.csv", url=f"{first.url}/d/1", owner="aad-1")
            async with Fetcher(LOCAL, ssl=trust) as fetcher:
                content = await teams_files.download(fetcher, shared, max_bytes=10_000)
    assert content.startswith(b"region,amount")


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "10.0.0.5", "::1"])
async def test_a_hostname_resolving_to_a_private_address_is_refused(address: str) -> None:
    dns = FakeDns({"files.contoso.example": address})
    async with Fetcher(FetchPolicy(), resolver=dns) as fetcher:
        with pytest.raises(FetchRefused) as refused:
            async with fetcher.open("https://files.contoso.example/x"):
                pass
    assert str(refused.value).startswith(f"files.contoso.example resolves to {address} is a")


async def test_a_private_address_is_refused_before_any_packet_is_sent() -> None:
    """The loopback server would answer: the refusal happens where the socket is made (an IP
    literal never reaches a resolver), so it never sees a request."""
    async with serving(ok) as server:
        port = server.url.rsplit(":", 1)[1]
        for url in (f"https://127.0.0.1:{port}/x", f"https://[::ffff:127.0.0.1]:{port}/x"):
            async with Fetcher(FetchPolicy()) as fetcher:
                with pytest.raises(FetchRefused, match="loopback"):
                    async with fetcher.open(url):
                        pass
        assert server.requests == []


async def test_a_redirect_to_a_name_resolving_to_the_metadata_service_is_refused() -> None:
    """The first hop is the test server (loopback: the fakes' allowance); the redirect names
    a host whose DNS answer is the metadata service: refused when it resolves, whatever the
    name looks like, and nothing is sent there."""
    dns = FakeDns({"a.example": "127.0.0.1", "b.example": "169.254.169.254"})

    def to_metadata(request: web.Request) -> web.StreamResponse:
        port = request.url.port
        return redirect_to(f"http://b.example:{port}/latest/meta-data/")(request)

    async with serving(to_metadata) as server:
        port = server.url.rsplit(":", 1)[1]
        async with Fetcher(LOCAL, resolver=dns) as fetcher:
            with pytest.raises(FetchRefused, match=r"b\.example resolves to 169\.254\."):
                async with fetcher.open(f"http://a.example:{port}/x"):
                    pass
        assert len(server.requests) == 1


async def test_slack_sends_its_token_only_to_slack_file_hosts_on_every_hop() -> None:
    tokens: list[str | None] = []

    def record(request: web.Request) -> web.StreamResponse:
        tokens.append(request.headers.get("Authorization"))
        return ok(request)

    async with serving(record, host="127.0.0.2") as elsewhere:
        async with serving(redirect_to(f"{elsewhere.url}/steal")) as slack_api:
            client = AsyncWebClient(token="xoxb-secret", base_url=f"{slack_api.url}/api/")
            shared = SharedFile(name="a.csv", url=f"{slack_api.url}/files/F1/a.csv", owner="U1")
            with pytest.raises(FileRefused, match="is not stored on Slack"):
                await slack_files.download(client, shared, max_bytes=10_000, policy=LOCAL)
            assert len(slack_api.requests) == 1
    assert tokens == []


async def test_slack_file_urls_pass_the_address_check_too() -> None:
    """``files.slack.com`` is Slack's, but a download still never reaches a private
    address: the check is on the address connected to, not on the name."""
    client = AsyncWebClient(token="xoxb-secret")
    shared = SharedFile(
        name="a.csv", url="https://files.slack.com/files-pri/T1-F1/a.csv", owner="U"
    )
    policy = FetchPolicy()
    dns = FakeDns({"files.slack.com": "10.1.2.3"})
    async with Fetcher(policy, resolver=dns) as fetcher:
        with pytest.raises(FetchRefused, match=r"10\.1\.2\.3 is a private address"):
            async with fetcher.open(shared.url):
                pass
    with pytest.raises(FileRefused):  # and through the adapter: plain http is refused
        await slack_files.download(
            client,
            shared.model_copy(update={"url": "http://files.slack.com/a"}),
            max_bytes=1,
            policy=policy,
        )


async def test_too_many_redirects_are_refused() -> None:
    async with serving(redirect_to("/again")) as loop:
        async with Fetcher(LOCAL) as fetcher:
            with pytest.raises(FetchRefused, match="more than 3 redirects"):
                async with fetcher.open(f"{loop.url}/x"):
                    pass
        assert len(loop.requests) == 4


def test_allowing_private_addresses_is_logged_loudly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="adapters.fetch"):
        FetchPolicy()
        assert caplog.records == []
        OutboundSettings(allow_addresses=["127.0.0.0/8"], schemes=["https", "http"]).policy()
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    assert "private addresses: 127.0.0.0/8" in warning.getMessage()


def test_the_allowance_is_an_allow_list_of_networks() -> None:
    policy = FetchPolicy.local_fakes()
    assert policy.refuses_address("127.0.0.1") is None
    assert policy.refuses_address("::ffff:127.0.0.1") is None
    for address in ("10.0.0.5", "169.254.169.254", "192.168.1.1", "fd00:ec2::254"):
        assert policy.refuses_address(address) is not None


PRIVATE_V4 = [
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "0.0.0.0/8",
    )
]


@given(st.sampled_from(PRIVATE_V4), st.integers(min_value=0, max_value=2**32 - 1))
def test_every_private_ipv4_address_is_refused_bare_or_inside_ipv6(
    network: ipaddress.IPv4Network, offset: int
) -> None:
    address = network[offset % network.num_addresses]
    assert private_kind(str(address)) is not None
    assert private_kind(f"::ffff:{address}") is not None
    nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) + int(address))
    assert private_kind(str(nat64)) is not None
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80))
    assert private_kind(str(sixtofour)) is not None
