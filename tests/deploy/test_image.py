"""The image's command line, proven without a container runtime: the Dockerfile's install
steps run in a fresh virtualenv (``tests.deploy.image``: once for the module, ~30 s), then
its commands run as ``docker run`` would run them, with the image's environment and
working directory: every command's help, both channel servers answering the HEALTHCHECK,
the Kubernetes probes and the Ingress paths, and stopping on SIGTERM; the console listening
on the container's interfaces with its Host and Origin checks on."""

from __future__ import annotations

import signal
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.state.testing import free_port
from bots.cli import COMMANDS
from tests.deploy.files import by_name, objects
from tests.deploy.image import Built, build_image


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_image(tmp_path_factory.mktemp("image") / "root")


class Server:
    """A command of the image left running, its output read until it says it listens."""

    def __init__(self, image: Built, argv: list[str], env: dict[str, str], ready: str):
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            image.command(*argv),
            cwd=image.workdir,
            env={**image.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.listening = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(ready,), daemon=True)
        self._reader.start()
        if not self.listening.wait(90) or self.process.poll() is not None:
            self.close()
            raise AssertionError("never listened:\n" + "".join(self.lines))

    def _read(self, ready: str) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # read to the end, so the server never blocks
            self.lines.append(line)
            if ready in line:
                self.listening.set()
        self.listening.set()

    def stop(self, timeout: float) -> int:
        """SIGTERM (the image's STOPSIGNAL); the exit status."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def close(self) -> None:
        """Kill it if it still runs; release its output."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self._reader.join(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


def get(url: str, **headers: str) -> tuple[int, str]:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, headers=headers)
    try:
        with direct.open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def post(url: str, body: bytes = b"{}", **headers: str) -> int:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with direct.open(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def probes(deployment: str) -> list[dict[str, Any]]:
    [container] = by_name("Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    return [container[k]["httpGet"] for k in ("startupProbe", "readinessProbe", "livenessProbe")]


def ingress_paths(service: str) -> list[str]:
    [ingress] = objects("Ingress")
    return [
        path["path"]
        for rule in ingress["spec"]["rules"]
        for path in rule["http"]["paths"]
        if path["backend"]["service"]["name"] == service
    ]


def grace(deployment: str) -> int:
    spec = by_name("Deployment", deployment)["spec"]["template"]["spec"]
    return int(spec["terminationGracePeriodSeconds"])


def test_the_image_without_arguments_prints_the_help(image: Built) -> None:
    done = image.run()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: threadline")
    assert image.run("--version").stdout.strip() == "threadline 0.1.0"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_runs_in_the_image(image: Built, command: str) -> None:
    done = image.run(command, "--help")
    assert done.returncode == 0, done.stderr
    assert f"usage: threadline {command}" in done.stdout


def test_config_reads_the_image_data_directory(image: Built) -> None:
    done = image.run("config", "--json")
    assert done.returncode == 0, done.stderr
    assert str(image.root / "data") in done.stdout  # THREADLINE_DATA_DIR, under the image root


@pytest.fixture
def slack(image: Built) -> Iterator[tuple[Server, int]]:
    port = free_port()
    env = {
        "PORT": str(port),
        "SLACK_SIGNING_SECRET": "deploy-test-secret",
        "SLACK_CLIENT_ID": "1.2",
        "SLACK_CLIENT_SECRET": "deploy-test-client-secret",
    }
    server = Server(image, ["slack", "--mode", "http", "--scripted"], env, "listening on")
    yield server, port
    server.close()


def test_slack_in_the_image_is_healthy_probed_routed_and_stops_on_sigterm(
    image: Built, slack: tuple[Server, int]
) -> None:
    server, port = slack
    check = subprocess.run(
        image.healthcheck, env={**image.env, "PORT": str(port)}, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    for probe in probes("threadline-slack") + probes("threadline-slack-socket"):
        assert get(f"http://127.0.0.1:{port}{probe['path']}")[0] == 200, probe
    paths = ingress_paths("threadline-slack")
    assert paths and all(get(f"http://127.0.0.1:{port}{p}")[0] != 404 for p in paths[1:])
    assert post(f"http://127.0.0.1:{port}{paths[0]}") == 401  # events: signed ones only
    assert server.stop(timeout=grace("threadline-slack")) == 0, "".join(server.lines)
    assert "Traceback" not in "".join(server.lines)


def test_teams_in_the_image_is_healthy_probed_routed_and_stops_on_sigterm(
    image: Built,
) -> None:
    port = free_port()
    server = Server(image, ["teams", "--scripted"], {"PORT": str(port)}, "listening on")
    try:
        check = subprocess.run(
            image.healthcheck, env={**image.env, "PORT": str(port)}, capture_output=True, text=True
        )
        assert check.returncode == 0, check.stdout + check.stderr
        for probe in probes("threadline-teams"):
            assert get(f"http://127.0.0.1:{port}{probe['path']}")[0] == 200, probe
        [messages] = ingress_paths("threadline-teams")
        refused = post(f"http://127.0.0.1:{port}{messages}", b"not json")
        assert 400 <= refused < 500 and refused != 404  # routed, and refused as it should be
        assert server.stop(timeout=grace("threadline-teams")) == 0, "".join(server.lines)
    finally:
        server.close()


def listening_everywhere(port: int) -> bool:
    """Whether a socket listens on 0.0.0.0:``port`` (the kernel's own table)."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(row.split()[1] == f"00000000:{port:04X}" and row.split()[3] == "0A" for row in rows)


def test_the_console_in_the_image_listens_on_its_interfaces_behind_its_checks(
    image: Built,
) -> None:
    port = free_port()
    argv = ["dev", "--host", "0.0.0.0", "--port", str(port), "--scripted"]
    server = Server(image, argv, {}, "Threadline console:")
    try:
        assert f"http://127.0.0.1:{port}/" in "".join(server.lines)
        assert listening_everywhere(port)
        url = f"http://127.0.0.1:{port}"
        assert get(f"{url}/api/info")[0] == 200  # as the host's browser asks, published
        assert get(f"{url}/api/info", Host="console.attacker.example")[0] == 403  # rebinding
        origin = {"Origin": "http://attacker.example", "Content-Type": "application/json"}
        assert post(f"{url}/api/turns", b'{"text": "hi"}', **origin) == 403
    finally:
        server.close()
