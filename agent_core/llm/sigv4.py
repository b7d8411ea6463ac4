"""AWS Signature Version 4, checked the way AWS checks it (for the fake Bedrock).

``verify`` rebuilds the canonical request from what arrived on the wire (method, path,
query, the headers the ``Authorization`` header says were signed, the body's SHA-256),
derives the signing key from the secret of the access key named in the credential scope,
and compares signatures in constant time. It also checks the scope's region and service,
the ``X-Amz-Date`` skew (AWS allows 5 minutes) and the session token. The canonical form
follows the AWS SigV4 specification as botocore implements it for non-S3 services (each
path segment URI-encoded once more, ``~`` and ``/`` kept).

>>> import datetime as dt
>>> now = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
>>> headers = sign("POST", "/model/m/invoke", "", {"host": "h"}, b"{}",
...                key=AwsKey("AKID", "secret"), region="us-east-1", service="bedrock", now=now)
>>> verify("POST", "/model/m/invoke", "", {"host": "h", **headers}, b"{}",
...        keys={"AKID": AwsKey("AKID", "secret")}, region="us-east-1", service="bedrock",
...        now=now)
>>> try:
...     verify("POST", "/model/m/invoke", "", {"host": "h", **headers}, b"{ }",
...            keys={"AKID": AwsKey("AKID", "secret")}, region="us-east-1",
...            service="bedrock", now=now)
... except SignatureError as error:
...     print(error.code)
InvalidSignatureException
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote

ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = dt.timedelta(minutes=5)
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<credential>[^,\s]+),\s*"
    r"SignedHeaders=(?P<signed>[^,\s]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass(frozen=True)
class AwsKey:
    """An access key the fake accepts (with the session token it must come with, if any)."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None


class SignatureError(ValueError):
    """Why AWS would refuse the request; ``code`` is AWS's own exception name."""

    def __init__(self, message: str, code: str = "InvalidSignatureException") -> None:
        super().__init__(message)
        self.code = code


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = _hmac(("AWS4" + secret).encode(), day)
    return _hmac(_hmac(_hmac(key, region), service), "aws4_request")


def canonical_request(
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    signed: list[str],
    body: bytes,
) -> str:
    lowered = {name.lower(): value for name, value in headers.items()}
    canonical_headers = "".join(
        f"{name}:{' '.join(lowered.get(name, '').split())}\n" for name in signed
    )
    pairs = sorted(
        (quote(k, safe="-_.~"), quote(v, safe="-_.~"))
        for k, v in parse_qsl(query, keep_blank_values=True)
    )
    return "\n".join(
        [
            method.upper(),
            quote(path or "/", safe="/~"),
            "&".join(f"{k}={v}" for k, v in pairs),
            canonical_headers,
            ";".join(signed),
            lowered.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest(),
        ]
    )


def _string_to_sign(amz_date: str, scope: str, canonical: str) -> str:
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return f"{ALGORITHM}\n{amz_date}\n{scope}\n{digest}"


def sign(
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    key: AwsKey,
    region: str,
    service: str,
    now: dt.datetime,
) -> dict[str, str]:
    """The headers that sign a request (for tests of ``verify``; clients use botocore)."""
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    added = {"x-amz-date": amz_date}
    if key.session_token:
        added["x-amz-security-token"] = key.session_token
    every = {**{k.lower(): v for k, v in headers.items()}, **added}
    signed = sorted(every)
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    canonical = canonical_request(method, path, query, every, signed, body)
    secret = signing_key(key.secret_access_key, amz_date[:8], region, service)
    signature = hmac.new(
        secret, _string_to_sign(amz_date, scope, canonical).encode(), hashlib.sha256
    ).hexdigest()
    authorization = (
        f"{ALGORITHM} Credential={key.access_key_id}/{scope}, "
        f"SignedHeaders={';'.join(signed)}, Signature={signature}"
    )
    return {**added, "authorization": authorization}


def verify(
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    keys: Mapping[str, AwsKey],
    region: str,
    service: str,
    now: dt.datetime,
) -> None:
    """Raise ``SignatureError`` unless the request is signed by one of ``keys``."""
    lowered = {name.lower(): value for name, value in headers.items()}
    match = _AUTHORIZATION.match(lowered.get("authorization", ""))
    if match is None:
        raise SignatureError("Missing Authentication Token", "MissingAuthenticationTokenException")
    access_key, _, scope = match["credential"].partition("/")
    day, scope_region, scope_service, terminal = [*scope.split("/"), "", "", ""][:4]
    key = keys.get(access_key)
    if key is None:
        raise SignatureError(
            "The security token included in the request is invalid.",
            "UnrecognizedClientException",
        )
    if (scope_region, scope_service, terminal) != (region, service, "aws4_request"):
        raise SignatureError(f"Credential should be scoped to a valid region ({region}).")
    _check_date(lowered.get("x-amz-date", ""), day, now)
    if key.session_token is not None and lowered.get("x-amz-security-token") != key.session_token:
        raise SignatureError(
            "The security token included in the request is invalid.",
            "UnrecognizedClientException",
        )
    signed = match["signed"].split(";")
    if "host" not in signed:
        raise SignatureError("'Host' must be a signed header.")
    canonical = canonical_request(method, path, query, headers, signed, body)
    secret = signing_key(key.secret_access_key, day, region, service)
    expected = hmac.new(
        secret, _string_to_sign(lowered["x-amz-date"], scope, canonical).encode(), hashlib.sha256
    ).hexdigest()
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureError(
            "The request signature we calculated does not match the signature you provided."
        )


def _check_date(amz_date: str, day: str, now: dt.datetime) -> None:
    try:
        signed_at = dt.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        raise SignatureError("X-Amz-Date is missing or malformed.") from None
    if amz_date[:8] != day:
        raise SignatureError("The credential scope's date is not the X-Amz-Date day.")
    if abs(now - signed_at) > MAX_SKEW:
        raise SignatureError("Signature expired: the request time is too skewed.")
