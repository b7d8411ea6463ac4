"""The build context: ``.dockerignore`` is an allow list, so nothing but what the image is
built from reaches ``docker build`` (no ``.env``, no ``threadline.toml``, no state, no
virtualenv). The rules are Docker's (its documentation's examples are checked first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.files import ROOT, build_context, excluded, ignore_rules


@pytest.mark.parametrize(
    ("rules", "path", "out"),
    [
        ("*/temp*", "somedir/temporary.txt", True),
        ("*/temp*", "somedir/temp", True),
        ("*/temp*", "temp", False),
        ("*/temp*", "a/b/temporary.txt", False),
        ("*/*/temp*", "somedir/subdir/temporary.txt", True),
        ("temp?", "tempa", True),
        ("temp?", "temp/inside.txt", False),
        ("**/*.go", "a/b/c.go", True),
        ("**/*.go", "c.go", True),
        ("*.md\n!README.md", "README.md", False),
        ("*.md\n!README.md", "CHANGES.md", True),
        ("*.md\n!README*.md\nREADME-secret.md", "README-secret.md", True),
        ("*.md\n!README*.md\nREADME-secret.md", "README-public.md", False),
        ("[a-c]at", "bat", True),
        ("[^a-c]at", "bat", False),
        ("/build", "build/lib/x.py", True),  # a folder left out takes its contents along
        ("*\n!src/", "src/pkg/mod.py", False),
        ("*\n!src/", "tests/test_x.py", True),
    ],
)
def test_the_rules_are_dockers(rules: str, path: str, out: bool) -> None:
    assert excluded(path, ignore_rules(rules)) is out


def test_what_the_context_holds() -> None:
    context = set(build_context())
    tops = {path.split("/")[0] for path in context}
    assert tops == {
        ".dockerignore",
        "Dockerfile",
        "README.md",
        "pyproject.toml",
        "agent_core",
        "adapters",
        "bots",
        "deploy",
    }
    assert {p for p in context if p.startswith("deploy/")} == {"deploy/healthcheck.py"}
    assert "bots/dev/vendor/adaptivecards/adaptivecards.min.js" in context  # package data


@pytest.mark.parametrize(
    "planted",
    [
        ".env",
        "threadline.toml",
        "deploy/.env",
        "deploy/threadline.toml",
        "bots/.env",
        "bots/slack/threadline.toml",
        ".venv/bin/python",
        ".threadline/state.db",
        "bots/dev/node_modules/adaptivecards/index.js",
        "bots/__pycache__/cli.cpython-311.pyc",
        "agent_core/secret.pyc",
        "tests/conftest.py",
        ".git/config",
        "id_rsa",
    ],
)
def test_secrets_and_local_state_never_enter_the_context(tmp_path: Path, planted: str) -> None:
    """An attack on the allow list: files a developer has lying around in their checkout
    (tokens in .env, state, a virtualenv) are not sent, wherever they sit."""
    (tmp_path / ".dockerignore").write_text((ROOT / ".dockerignore").read_text())
    for path in ("Dockerfile", "pyproject.toml", "bots/cli.py", planted):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("SLACK_BOT_TOKEN=xoxb-planted\n")
    context = set(build_context(tmp_path))
    assert "bots/cli.py" in context
    assert planted not in context
