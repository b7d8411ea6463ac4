"""Passwords inside URLs are never shown (issue 22 item 9): ``threadline config`` printed
``REDIS_URL``'s password (``redis://:pw@host`` has no user, which the old pattern required),
and a malformed ``THREADLINE_DATABASE_URL`` was echoed whole in errors."""

from __future__ import annotations

import logging
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.database.urls import DatabaseConfigError, mask_url, parse_url
from agent_core.masking import SecretsFilter, hide_paths, mask_secrets
from agent_core.settings import masked

SCHEMES = ["redis", "rediss", "postgresql", "postgresql+psycopg", "mysql", "snowflake", "https"]
SAFE = string.ascii_letters + string.digits
PASSWORD = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FFF, exclude_characters="*"),
    min_size=1,
    max_size=30,
).map(lambda tail: "Pw9" + tail)


@settings(max_examples=400, deadline=None)
@given(
    scheme=st.sampled_from(SCHEMES),
    user=st.sampled_from(["", "bo", "svc.reader", "me%40corp"]),
    password=PASSWORD,
    host=st.sampled_from(["db", "10.0.0.5:5432", "cache.internal:6379", "acct-1"]),
    path=st.sampled_from(["", "/0", "/shop", "/db/public?sslmode=require&app=a@b"]),
    around=st.sampled_from(["{}", "failed: {} (retrying)", "'{}'", '{{"url": "{}"}}', "({})"]),
)
def test_no_password_inside_any_url_is_ever_shown(
    scheme: str, user: str, password: str, host: str, path: str, around: str
) -> None:
    url = f"{scheme}://{user}:{password}@{host}{path}"
    for shown in (mask_secrets(around.format(url)), mask_url(url), masked(url)):
        assert password not in shown
        assert "***" in shown


@settings(max_examples=200, deadline=None)
@given(
    key=st.sampled_from(["password", "PWD", "token", "private_key_passphrase", "api_key"]),
    value=st.text(alphabet=SAFE, min_size=4, max_size=20).map(lambda v: "Sx7" + v),
)
def test_secret_query_parameters_are_masked(key: str, value: str) -> None:
    url = f"snowflake://me@acct/db?warehouse=wh&{key}={value}&role=analyst"
    assert value not in mask_secrets(f"connecting to {url}")
    assert "warehouse=wh" in mask_url(url) and "role=analyst" in mask_url(url)


def test_what_is_not_a_secret_stays_readable() -> None:
    assert mask_url("https://example.com/a@b?x=1") == "https://example.com/a@b?x=1"
    assert mask_url("postgresql://bo@db/shop") == "postgresql://bo@db/shop"
    assert mask_secrets("no url here: a:b@c") == "no url here: a:b@c"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql//bo:S3cr3t-pw@db/x",
        "postgresql://bo:S3cr3t-pw@db:notaport/x",
        "postgres ql://bo:S3cr3t-pw@db/x",
        "bo:S3cr3t-pw@db/x",
    ],
)
def test_a_malformed_database_url_is_never_echoed(url: str) -> None:
    with pytest.raises(DatabaseConfigError) as bad:
        parse_url(url)
    assert "S3cr3t" not in str(bad.value)


def test_a_password_with_a_space_is_masked_once_parsed() -> None:
    shown = mask_url(parse_url("postgresql://bo:S3cr3t pw@db/x"))
    assert "S3cr3t" not in shown and "pw@" not in shown


def test_log_records_are_masked_message_and_arguments(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("threadline.test.masking")
    caplog.handler.addFilter(SecretsFilter())
    logger.warning("cannot reach %s", "redis://:L0g-S3cret@cache/0")
    logger.warning("cannot reach postgresql://bo:L0g-S3cret@db/x")
    logger.warning("cannot reach %(url)s", {"url": "mysql://bo:L0g-S3cret@db/x"})
    assert "L0g-S3cret" not in caplog.text and caplog.text.count("***") == 3


def test_server_paths_are_hidden_from_engine_messages() -> None:
    message = 'Permission Error: Cannot access directory "/root/.duckdb/extensions/v2"'
    assert hide_paths(message) == 'Permission Error: Cannot access directory "<path>"'
    assert hide_paths(r"IO Error: C:\data\shop.duckdb is locked") == "IO Error: <path> is locked"
