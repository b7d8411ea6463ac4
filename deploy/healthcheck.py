"""The image's HEALTHCHECK: ``GET /healthz`` of the bot in this container (stdlib only).

``threadline slack`` and ``threadline teams`` serve ``/healthz`` on ``$PORT`` (the image sets
8080): 200 while the process can take turns, 503 while its state backend is down. Exits 0
when healthy and 1 otherwise, as Docker's HEALTHCHECK expects, printing what it saw (``docker
inspect`` keeps the last lines). A proxy configured for the container is never used: the
request goes to this container's own loopback.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

HEALTH_PATH = "/healthz"
DEFAULT_PORT = "8080"
TIMEOUT = 4.0


def check(port: str) -> tuple[bool, str]:
    """Whether the bot on ``port`` says it is healthy, and what it said."""
    url = f"http://127.0.0.1:{port}{HEALTH_PATH}"
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(url, timeout=TIMEOUT) as response:
            return True, f"{response.status} {response.read(2000).decode(errors='replace')}"
    except urllib.error.HTTPError as error:
        return False, f"{error.code} {error.read(2000).decode(errors='replace')}"
    except OSError as error:
        return False, f"{url}: {error}"


def main() -> int:
    healthy, said = check(os.environ.get("PORT") or DEFAULT_PORT)
    print(said)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
