"""Outbound fetches on someone's behalf: allowed schemes only, never a private address.

Every URL the bot fetches because of what someone sent (a file shared in Slack or Teams, a
OneDrive upload URL from a file consent) goes through a ``Fetcher``::

    async with Fetcher(policy) as fetcher, fetcher.open(url) as response:
        body = await response.read()


* **addresses are checked after DNS resolution and where the socket is made**
  (``GuardedResolver``, then ``GuardedSockets``: aiohttp's ``socket_factory``): loopback,
  private, link-local (the cloud metadata service ``169.254.169.254``), shared, reserved,
  multicast and unspecified addresses are refused, IPv4 inside IPv6 (mapped, 6to4, NAT64,
  Teredo) included. A name that resolves to ``10.0.0.5`` is refused as ``10.0.0.5`` is; no
  string check on the URL stands in for it, so DNS rebinding and redirects cannot get
  around it.
* **redirects are followed here, one hop at a time**: each hop must keep the scheme of the
  URL asked for (no https -> http), stay within ``policy.schemes``, and pass the caller's
  host check (Slack's bot token goes only to Slack's file hosts); credentials are dropped
  when a hop changes host.

Tests and the local console fetch from the shipped fakes on 127.0.0.1, so a policy may
allow named private networks (``FetchPolicy.local_fakes()``: loopback only; the
``[outbound]`` setting ``allow_addresses``): an allow list, logged as a warning when it is
made, never silent.

>>> FetchPolicy().refuses_address("169.254.169.254")
'169.254.169.254 is a link-local address'
>>> FetchPolicy().refuses_address("93.184.216.34") is None
True
>>> FetchPolicy().refuses_url("http://files.example/a.csv")
'http URLs are not fetched (allowed: https)'
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Self

import aiohttp
from pydantic import Field, field_validator
from yarl import URL

from agent_core.errors import AgentError, ThreadlineError
from agent_core.settings import CommaList, Section, env

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
REDIRECTS = frozenset({301, 302, 303, 307, 308})
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class FetchRefused(AgentError):
    """An outbound fetch refused before anything was sent: a scheme, a redirect, a host or
    an address the policy does not allow. ``str(error)`` says which (never a credential).

    >>> str(FetchRefused("a redirect from https to http"))
    'a redirect from https to http'
    """


class AddressRefused(ThreadlineError, OSError):
    """Raised where the socket is made for an address the policy refuses (aiohttp reports
    it as the connection's ``os_error``, so it is an ``OSError`` too).

    >>> isinstance(AddressRefused("10.0.0.5 is a private address"), OSError)
    True
    """


def _kind(address: IPAddress) -> str | None:
    """What makes ``address`` private, or None for a public unicast address."""
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    )
    named = next((name for name, hit in checks if hit), None)
    if named is not None:
        return named
    return None if address.is_global else "non-public"


def _embedded(address: IPAddress) -> list[IPAddress]:
    """The IPv4 addresses an IPv6 address carries (mapped, 6to4, NAT64, Teredo)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    inside: list[IPAddress] = []
    if address.ipv4_mapped is not None:
        inside.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        inside.append(address.sixtofour)
    if address.teredo is not None:
        inside.extend(address.teredo)
    if address in NAT64:
        inside.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return inside


def _ip(address: str) -> IPAddress:
    return ipaddress.ip_address(address.split("%", 1)[0])


def private_kind(address: str) -> str | None:
    """Why ``address`` (an IP, as a socket sees it) is not public, or None when it is.

    >>> private_kind("::ffff:10.1.2.3"), private_kind("2002:7f00:1::"), private_kind("8.8.8.8")
    ('private', 'loopback', None)
    """
    ip = _ip(address)
    for candidate in (*_embedded(ip), ip):  # the IPv4 inside says most about where it goes
        if (kind := _kind(candidate)) is not None:
            return kind
    return None


@dataclass(frozen=True)
class FetchPolicy:
    """Where fetches on someone's behalf may go.

    ``schemes`` allowed (https only by default); ``allowed_networks`` are private networks
    fetches may reach all the same: an allow list for tests and the local console, whose
    fakes listen on loopback (``local_fakes``). Making that allowance logs a warning.

    >>> FetchPolicy().schemes
    frozenset({'https'})
    >>> FetchPolicy.local_fakes().refuses_address("10.0.0.5")
    '10.0.0.5 is a private address'
    """

    schemes: frozenset[str] = field(default_factory=lambda: frozenset({"https"}))
    allowed_networks: tuple[IPNetwork, ...] = ()

    def __post_init__(self) -> None:
        if self.allowed_networks:
            logger.warning(
                "outbound fetches may reach these private addresses: %s "
                "([outbound] allow_addresses): for tests and local fakes only",
                ", ".join(str(network) for network in self.allowed_networks),
            )

    @classmethod
    def local_fakes(cls) -> FetchPolicy:
        """The shipped fakes' policy: http and https, loopback allowed (logged)."""
        return cls(schemes=frozenset({"http", "https"}), allowed_networks=LOOPBACK)

    def refuses_url(self, url: str | URL) -> str | None:
        """Why ``url`` may not be fetched (its scheme or host), or None."""
        target = URL(url) if isinstance(url, str) else url
        if target.scheme not in self.schemes:
            allowed = ", ".join(sorted(self.schemes))
            return f"{target.scheme or 'scheme-less'} URLs are not fetched (allowed: {allowed})"
        if not target.host:
            return "the URL names no host"
        return None

    def refuses_address(self, address: str) -> str | None:
        """Why a connection to ``address`` is refused, or None."""
        kind = private_kind(address)
        if kind is None:
            return None
        ip = _ip(address)
        if any(
            candidate in network
            for candidate in (ip, *_embedded(ip))
            for network in self.allowed_networks
            if candidate.version == network.version
        ):
            return None
        return f"{ip} is a {kind} address"


class GuardedSockets:
    """aiohttp's ``socket_factory``: refuses a socket for an address ``policy`` refuses,
    after DNS resolution and before any packet is sent.

    >>> import socket
    >>> GuardedSockets(FetchPolicy())((socket.AF_INET, socket.SOCK_STREAM, 6, "",
    ...                                ("127.0.0.1", 443)))
    Traceback (most recent call last):
    ...
    adapters.fetch.AddressRefused: 127.0.0.1 is a loopback address
    """

    def __init__(self, policy: FetchPolicy) -> None:
        self.policy = policy

    def __call__(self, addr_info: tuple[Any, ...]) -> socket.socket:
        family, kind, proto, _, address = addr_info
        refused = self.policy.refuses_address(str(address[0]))
        if refused is not None:
            raise AddressRefused(refused)
        return socket.socket(family=family, type=kind, proto=proto)


class GuardedResolver(aiohttp.abc.AbstractResolver):
    """A resolver that keeps only the addresses ``policy`` allows (a name with none left
    fails to resolve, saying why); IP literals skip resolvers, so ``GuardedSockets`` checks
    every connection again.

    >>> GuardedResolver(FetchPolicy()).policy.allowed_networks
    ()
    """

    def __init__(
        self, policy: FetchPolicy, resolver: aiohttp.abc.AbstractResolver | None = None
    ) -> None:
        self.policy = policy
        self._resolver = resolver  # aiohttp's own by default, made in the event loop

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[aiohttp.abc.ResolveResult]:
        if self._resolver is None:
            self._resolver = aiohttp.DefaultResolver()
        found = await self._resolver.resolve(host, port, family)
        kept = [entry for entry in found if self.policy.refuses_address(entry["host"]) is None]
        if not kept and found:
            refused = self.policy.refuses_address(found[0]["host"])
            raise AddressRefused(f"{host} resolves to {refused}")
        return kept

    async def close(self) -> None:
        if self._resolver is not None:
            await self._resolver.close()


HostCheck = Callable[[URL], bool]


class Fetcher:
    """Fetches on someone's behalf under one ``FetchPolicy``: a session whose every
    connection passes the policy's address check, and ``open`` (checked redirects). No proxy
    comes from the environment (a proxy would make the address check meaningless).
    ``resolver`` and ``ssl`` are aiohttp's own (tests give a fake DNS, or trust a test
    certificate).

    >>> Fetcher(FetchPolicy()).policy.allowed_networks
    ()
    """

    def __init__(
        self,
        policy: FetchPolicy,
        *,
        timeout: float = 60.0,
        resolver: aiohttp.abc.AbstractResolver | None = None,
        ssl: Any = True,
    ) -> None:
        self.policy = policy
        self._timeout = timeout
        self._resolver = resolver
        self._ssl = ssl
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        connector = aiohttp.TCPConnector(
            socket_factory=GuardedSockets(self.policy),
            resolver=GuardedResolver(self.policy, self._resolver),
            ssl=self._ssl,
            limit=20,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self._timeout, sock_connect=10),
            trust_env=False,
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    @asynccontextmanager
    async def open(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
        allowed: HostCheck | None = None,
        max_redirects: int = 3,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """The response to ``url`` after at most ``max_redirects`` checked redirects;
        raises ``FetchRefused`` for a URL, redirect or address the policy (or ``allowed``)
        refuses.

        A redirect answered with 303 (or of a GET) is followed with GET and no body;
        headers (credentials) are dropped once a hop leaves the first URL's host.
        """
        target = URL(url)
        if (problem := self.policy.refuses_url(target)) is not None:
            raise FetchRefused(problem)
        if allowed is not None and not allowed(target):
            raise FetchRefused("a host that is not allowed")
        sent = dict(headers or {})
        for hop in range(max_redirects + 1):
            response = await self._request(method, target, sent, data)
            if response.status not in REDIRECTS or hop == max_redirects:
                break
            try:
                following = _next_hop(self.policy, target, response, allowed)
            finally:
                response.release()
            if following.host != target.host:
                sent = {}
            if response.status == 303 or method in ("GET", "HEAD"):
                method, data = ("HEAD" if method == "HEAD" else "GET"), None
            target = following
        try:
            if response.status in REDIRECTS:
                raise FetchRefused(f"more than {max_redirects} redirects")
            yield response
        finally:
            response.release()

    async def _request(
        self, method: str, target: URL, headers: dict[str, str], data: bytes | None
    ) -> aiohttp.ClientResponse:
        if self._session is None:
            raise RuntimeError("use the Fetcher as 'async with Fetcher(policy) as fetcher'")
        try:
            return await self._session.request(
                method, target, headers=headers, data=data, allow_redirects=False
            )
        except aiohttp.ClientConnectorError as error:
            if isinstance(error.os_error, AddressRefused):
                raise FetchRefused(str(error.os_error)) from None
            raise


def _next_hop(
    policy: FetchPolicy, current: URL, response: aiohttp.ClientResponse, allowed: HostCheck | None
) -> URL:
    location = response.headers.get("Location")
    if not location:
        raise FetchRefused("a redirect without a Location")
    target = current.join(URL(location))
    if target.scheme != current.scheme:
        raise FetchRefused(f"a redirect from {current.scheme} to {target.scheme or 'nothing'}")
    if (problem := policy.refuses_url(target)) is not None:
        raise FetchRefused(f"a redirect to a URL that is not fetched: {problem}")
    if allowed is not None and not allowed(target):
        raise FetchRefused("a redirect to a host that is not allowed")
    return target


class OutboundSettings(Section):
    """``[outbound]``: fetches made on someone's behalf (shared files, upload URLs).

    ``allow_addresses`` (``THREADLINE_OUTBOUND_ALLOW_ADDRESSES``: CIDRs such as
    ``127.0.0.0/8``) are private networks they may reach all the same, and ``schemes``
    (``THREADLINE_OUTBOUND_SCHEMES``) may add plain http: for tests and local fakes only;
    the start-up log says so.

    >>> OutboundSettings().policy()
    FetchPolicy(schemes=frozenset({'https'}), allowed_networks=())
    """

    table = "outbound"

    allow_addresses: CommaList = Field(
        default_factory=list,
        validation_alias=env("allow_addresses", "THREADLINE_OUTBOUND_ALLOW_ADDRESSES"),
    )
    schemes: CommaList = Field(
        default_factory=lambda: ["https"],
        validation_alias=env("schemes", "THREADLINE_OUTBOUND_SCHEMES"),
    )

    @field_validator("allow_addresses")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for item in value:
            ipaddress.ip_network(item, strict=False)  # ValueError names the bad one
        return value

    @field_validator("schemes")
    @classmethod
    def _schemes(cls, value: list[str]) -> list[str]:
        schemes = [scheme.strip().lower() for scheme in value]
        if unknown := set(schemes) - {"http", "https"}:
            raise ValueError(f"schemes may be http and https only, not {sorted(unknown)}")
        return schemes or ["https"]

    def policy(self) -> FetchPolicy:
        return FetchPolicy(
            schemes=frozenset(self.schemes),
            allowed_networks=tuple(
                ipaddress.ip_network(item, strict=False) for item in self.allow_addresses
            ),
        )
