"""The Adaptive Cards renderer the console ships is Microsoft's, unchanged, at the pinned
version, with its licence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DEV = Path(__file__).resolve().parents[2] / "bots" / "dev"
VENDOR = DEV / "vendor" / "adaptivecards"
NPM = DEV / "node_modules" / "adaptivecards"


def test_the_licence_and_the_notices_ship_with_it() -> None:
    assert "MIT License" in (VENDOR / "LICENSE").read_text()
    assert "Microsoft" in (VENDOR / "LICENSE").read_text()
    bundle = (VENDOR / "adaptivecards.min.js").read_text()
    assert bundle.startswith(
        "/*! For license information please see adaptivecards.min.js.LICENSE.txt */"
    )
    assert (VENDOR / "adaptivecards.min.js.LICENSE.txt").is_file()


@pytest.mark.skipif(not NPM.is_dir(), reason="`npm ci` in bots/dev brings the npm package")
def test_it_is_the_pinned_npm_package_unchanged() -> None:
    pinned = json.loads((DEV / "package.json").read_text())["dependencies"]["adaptivecards"]
    assert json.loads((NPM / "package.json").read_text())["version"] == pinned
    for name in ("adaptivecards.min.js", "adaptivecards.min.js.LICENSE.txt"):
        assert (VENDOR / name).read_bytes() == (NPM / "dist" / name).read_bytes()
    assert (VENDOR / "LICENSE").read_bytes() == (NPM / "LICENSE").read_bytes()
