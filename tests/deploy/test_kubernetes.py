"""The Kubernetes manifests: each object valid against the Kubernetes schemas (strict: an
unknown field fails) of the oldest and the newest version we support, the kustomization
complete, and the rules of a deployment we care about: probes on the bots' own paths,
resources, a drain that fits the grace period, disruption budgets, CPU autoscaling, Socket
Mode capped at Slack's limit, secrets only in Secrets, a locked-down securityContext, and a
ConfigMap that Threadline's own loader accepts. Names shared with the code are read from it."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from agent_core.settings import CONFIG_FILE, load_sections
from agent_core.state_factory import StateSettings
from bots.serving import SHARED, DatabaseSettings, channel_sections
from bots.slack.app import MAX_SOCKET_CONNECTIONS
from bots.slack.bot import SlackBot
from bots.slack.settings import SlackSettings
from bots.teams.bot import TeamsBot
from bots.teams.settings import TeamsSettings
from tests.deploy.files import (
    KUBERNETES,
    by_name,
    manifests,
    objects,
    secret_variables,
    setting_variables,
    stages,
)

VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]
"""The oldest Kubernetes we support (preStop exec, autoscaling/v2, policy/v1 PDBs) and the
newest whose schemas kubernetes-validate ships."""

HTTP_BOTS = ["threadline-slack", "threadline-teams"]
DEPLOYMENTS = [*HTTP_BOTS, "threadline-slack-socket"]
DRAIN_SECONDS = {
    "threadline-slack": inspect.signature(SlackBot.close).parameters["timeout"].default,
    "threadline-slack-socket": inspect.signature(SlackBot.close).parameters["timeout"].default,
    "threadline-teams": inspect.signature(TeamsBot.close).parameters["timeout"].default,
}
"""How long each bot lets the turns it holds finish after SIGTERM (from the code)."""


def container(deployment: str) -> dict[str, Any]:
    [found] = pod(deployment)["containers"]
    return dict(found)


def pod(deployment: str) -> dict[str, Any]:
    return dict(by_name("Deployment", deployment)["spec"]["template"]["spec"])


def image_user() -> int:
    return int(stages()[-1].one("USER").value[0].partition(":")[0])


def image_env() -> dict[str, str]:
    return stages()[-1].env()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("path", "document"),
    [
        pytest.param(p, d, id=f"{p.name}:{d['kind']}")
        for p, d in manifests()
        if d["kind"] != "Kustomization"  # not an API object: checked below
    ],
)
def test_every_object_is_valid_kubernetes(
    path: Path, document: dict[str, Any], version: str
) -> None:
    kubernetes_validate.validate(document, version, strict=True)


def test_a_mistake_in_a_manifest_is_caught() -> None:
    """The validation is real: a misspelt field, a wrong type and a missing field fail."""
    deployment = by_name("Deployment", "threadline-slack")
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    first = broken["spec"]["template"]["spec"]["containers"][0]
    first["readinesProbe"] = first.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    broken["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    del broken["spec"]["selector"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)


def test_the_kustomization_lists_what_exists() -> None:
    [kustomization] = objects("Kustomization")
    files = {p.name for p in KUBERNETES.glob("*.yaml")}
    resources = set(kustomization["resources"])
    assert resources <= files
    alternatives = {"slack-socket.yaml", "secrets.example.yaml", "kustomization.yaml"}
    assert resources | alternatives == files, "a manifest nobody applies"
    [namespace] = objects("Namespace")
    assert kustomization["namespace"] == namespace["metadata"]["name"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    [image] = kustomization["images"]
    assert {container(d)["image"] for d in DEPLOYMENTS} == {image["name"]}


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_probes_resources_and_the_drain(deployment: str) -> None:
    spec, bot = pod(deployment), container(deployment)
    port = int(image_env()["PORT"])
    assert bot["ports"] == [{"name": "http", "containerPort": port}]
    assert {"name": "PORT", "value": str(port)} in bot["env"]
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert bot[kind]["httpGet"]["port"] == "http"
    assert bot["readinessProbe"]["httpGet"]["path"] == "/healthz"  # served: tests/deploy/test_image
    assert bot["livenessProbe"]["httpGet"]["path"] != "/healthz", (
        "a Redis outage restarts every pod"
    )
    resources = bot["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"]) and "memory" in resources["limits"]
    pre_stop = bot.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    waited = int(pre_stop[1]) if pre_stop[:1] == ["sleep"] else 0
    assert spec["terminationGracePeriodSeconds"] >= waited + DRAIN_SECONDS[deployment] + 5


@pytest.mark.parametrize("deployment", HTTP_BOTS)
def test_http_bots_stop_after_the_load_balancer_has_let_go(deployment: str) -> None:
    assert container(deployment)["lifecycle"]["preStop"]["exec"]["command"][0] == "sleep"
    assert container(deployment)["args"][0] in ("slack", "teams")
    strategy = by_name("Deployment", deployment)["spec"]["strategy"]["rollingUpdate"]
    assert strategy["maxUnavailable"] == 0


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_disruption_budget_and_cpu_autoscaling(deployment: str) -> None:
    labels = by_name("Deployment", deployment)["spec"]["selector"]["matchLabels"]
    template = by_name("Deployment", deployment)["spec"]["template"]["metadata"]["labels"]
    assert labels.items() <= template.items()
    budget = by_name("PodDisruptionBudget", deployment)["spec"]
    assert budget["selector"]["matchLabels"] == labels and budget["minAvailable"] >= 1
    scaler = by_name("HorizontalPodAutoscaler", deployment)["spec"]
    assert scaler["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment,
    }
    [metric] = scaler["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert scaler["minReplicas"] > budget["minAvailable"]


def test_socket_mode_never_opens_more_connections_than_slack_allows() -> None:
    deployment = by_name("Deployment", "threadline-slack-socket")["spec"]
    scaler = by_name("HorizontalPodAutoscaler", "threadline-slack-socket")["spec"]
    assert scaler["maxReplicas"] <= MAX_SOCKET_CONNECTIONS
    assert deployment["replicas"] <= MAX_SOCKET_CONNECTIONS
    assert deployment["strategy"]["rollingUpdate"]["maxSurge"] == 0  # no 11th during a rollout
    assert container("threadline-slack-socket")["args"] == ["slack", "--mode", "socket"]
    assert "--processes" not in container("threadline-slack-socket")["args"]


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_locked_down(deployment: str) -> None:
    spec, bot = pod(deployment), container(deployment)
    security = spec["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] == image_user()
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    assert bot["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    writable = {m["mountPath"] for m in bot["volumeMounts"] if not m.get("readOnly")}
    data_dir = image_env()[StateSettings.model_fields["data_dir"].validation_alias.choices[1]]
    assert writable == {data_dir, "/tmp"}
    assert {"name": "THREADLINE_DATA_DIR", "value": data_dir} in bot["env"]
    workdir = stages()[-1].one("WORKDIR").value[0]
    [config] = [m for m in bot["volumeMounts"] if m.get("readOnly")]
    assert config["mountPath"] == f"{workdir}/{CONFIG_FILE}" and config["subPath"] == CONFIG_FILE


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_secrets_come_from_secrets_and_name_real_settings(deployment: str) -> None:
    bot = container(deployment)
    examples = {s["metadata"]["name"]: s for s in objects("Secret")}
    for source in bot["envFrom"]:
        secret = examples[source["secretRef"]["name"]]
        assert set(secret["stringData"]) <= setting_variables(), "a key no setting reads"
    plain = {item["name"] for item in bot["env"]}
    assert plain <= setting_variables() and not plain & secret_variables()
    [config] = objects("ConfigMap")
    assert not set(config["data"][CONFIG_FILE].split()) & secret_variables()


@pytest.mark.parametrize("deployment", DEPLOYMENTS)
def test_the_configmap_is_a_configuration_threadline_accepts(
    deployment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What a pod loads: the ConfigMap's file, and the Secrets' values in the environment;
    by today's names (regression: ``[teams] concurrency``, renamed ``turn_concurrency`` by
    issue 23, logged a deprecation on every start)."""
    [config] = objects("ConfigMap")
    [volume] = [v for v in pod(deployment)["volumes"] if "configMap" in v]
    assert volume["configMap"]["name"] == config["metadata"]["name"]
    path = tmp_path / CONFIG_FILE
    path.write_text(config["data"][CONFIG_FILE])
    for name in setting_variables():
        monkeypatch.delenv(name, raising=False)
    channel = {"slack": SlackSettings, "teams": TeamsSettings}[container(deployment)["args"][0]]
    kinds = [*SHARED, channel]
    secrets = {s["metadata"]["name"]: s["stringData"] for s in objects("Secret")}
    for source in container(deployment)["envFrom"]:
        for name, value in secrets[source["secretRef"]["name"]].items():
            monkeypatch.setenv(name, value)
    if "socket" in container(deployment)["args"]:
        monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1")
    loaded = load_sections(kinds, file=path, known=channel_sections())
    assert loaded.section(StateSettings).redis_url == secrets["threadline-shared"]["REDIS_URL"]
    assert loaded.section(DatabaseSettings).files is False
    assert "deprecated" not in caplog.text
    monkeypatch.delenv("REDIS_URL")
    without = load_sections(kinds, file=path, known=channel_sections())
    assert without.section(StateSettings).backend == "redis", "never state of a pod's own"


def test_the_ingress_routes_only_what_the_platforms_post_to() -> None:
    [ingress] = objects("Ingress")
    services = {s["metadata"]["name"] for s in objects("Service")}
    for rule in ingress["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            assert path["backend"]["service"]["name"] in services
            assert path["backend"]["service"]["port"] == {"name": "http"}
            assert path["pathType"] == "Exact"
            assert path["path"] not in ("/healthz", "/metrics")
