"""The Helm chart: it lints, renders for the default and for non-default values, every rendered
manifest passes the Kubernetes schema (kubernetes-validate, offline, strict), RBAC grants only what
the mode needs, the values schema refuses bad values, the dashboards it ships are the generated ones,
and every flag it passes to `chronos tune` exists. helm is the binary scripts/setup.sh installs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from chronos.metrics.grafana import render
from chronos.metrics.views import DASHBOARDS

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "chronos"
KUBERNETES = "1.30.0"
NON_DEFAULT = """
target:
  flinkDeployment: fleet
  restUrl: http://flink-jobmanager:8081
  jobFile:
    name: fleet
    io: {bootstrap: "kafka:9092", input-topic: events, output-topic: results}
  reporterUrls: [http://flink-taskmanager:9249/metrics]
qos: {latencyP99: 800ms, recovery: 2min}
policy: {strategy: daly}
dryRun: true
realize: restart
storage: {persistence: {enabled: false}}
metrics: {serviceMonitor: {enabled: true, labels: {release: kube-prometheus}}}
dashboards: {enabled: false}
"""
# The parts of the Prometheus Operator's ServiceMonitor CRD the chart uses (its full CRD schema is not
# on any registry this machine reaches; kubernetes-validate knows only built-in kinds).
SERVICE_MONITOR = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {
            "type": "object", "required": ["selector", "endpoints"], "additionalProperties": False,
            "properties": {
                "selector": {"type": "object", "properties": {"matchLabels": {"type": "object"}}},
                "endpoints": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "additionalProperties": False,
                    "properties": {"port": {"type": "string"}, "path": {"type": "string"},
                                   "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"}}}},
            },
        },
    },
}


def helm() -> str:
    found = shutil.which("helm", path=str(Path(sys.executable).parent)) or shutil.which("helm")
    if found is None:
        pytest.fail("helm is not installed; run scripts/setup.sh (it installs .venv/bin/helm)")
    return found


def run_helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm(), *args], capture_output=True, text=True, timeout=60)


def rendered(tmp_path: Path, values: str | None = None, *sets: str) -> list[dict[str, Any]]:
    extra: list[str] = []
    if values is not None:
        file = tmp_path / "values.yaml"
        file.write_text(values)
        extra = ["-f", str(file)]
    result = run_helm("template", "rel", str(CHART), "-n", "streaming", *extra, *(a for s in sets for a in ("--set", s)))
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def by_kind(manifests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == kind]


def validate_all(manifests: list[dict[str, Any]]) -> None:
    for manifest in manifests:
        if manifest["kind"] == "ServiceMonitor":
            jsonschema.validate(manifest, SERVICE_MONITOR)
        else:
            kubernetes_validate.validate(manifest, KUBERNETES, strict=True)


def tune_args(manifests: list[dict[str, Any]]) -> list[str]:
    container = by_kind(manifests, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
    args: list[str] = container["args"]
    return args


def test_the_chart_lints_with_default_and_non_default_values(tmp_path: Path) -> None:
    assert run_helm("lint", str(CHART), "--strict").returncode == 0
    file = tmp_path / "other.yaml"
    file.write_text(NON_DEFAULT)
    result = run_helm("lint", str(CHART), "--strict", "-f", str(file))
    assert result.returncode == 0, result.stdout + result.stderr


def test_default_values_render_a_valid_operator_mode_release(tmp_path: Path) -> None:
    manifests = rendered(tmp_path)
    validate_all(manifests)
    assert sorted(m["kind"] for m in manifests) == ["ConfigMap", "ConfigMap", "Deployment", "PersistentVolumeClaim",
                                                    "Role", "RoleBinding", "Service", "ServiceAccount"]
    args = tune_args(manifests)
    assert "--flink-deployment=my-flink-job" in args and "--rest-url=http://my-flink-job-rest:8081" in args
    assert "--db=/data/chronos.db" in args and "--metrics-address=0.0.0.0" in args and "--dry-run" not in args
    assert "--realize=auto" in args, "paced where the cluster offers the checkpoint trigger"
    spec = by_kind(manifests, "Deployment")[0]["spec"]
    assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate", "never two tuners on one job"
    container = spec["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}, "the loop's heartbeat"
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "rel-chronos-data"


def test_operator_mode_may_only_get_and_patch_its_own_flinkdeployment(tmp_path: Path) -> None:
    role = by_kind(rendered(tmp_path), "Role")[0]
    assert role["rules"] == [{"apiGroups": ["flink.apache.org"], "resources": ["flinkdeployments"],
                              "resourceNames": ["my-flink-job"], "verbs": ["get", "patch"]}]


def test_non_default_values_render_what_they_say(tmp_path: Path) -> None:
    manifests = rendered(tmp_path, NON_DEFAULT)
    validate_all(manifests)
    kinds = sorted(m["kind"] for m in manifests)
    assert "PersistentVolumeClaim" not in kinds and "ServiceMonitor" in kinds
    assert kinds.count("ConfigMap") == 1, "dashboards disabled"
    args = tune_args(manifests)
    assert "--flink-deployment=fleet" in args and "--rest-url=http://flink-jobmanager:8081" in args
    assert "--dry-run" in args and "--strategy=daly" in args and "--latency-p99=800ms" in args
    assert "--realize=restart" in args
    assert "--reporter-url=http://flink-taskmanager:9249/metrics" in args
    pod = by_kind(manifests, "Deployment")[0]["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    assert {"name": "data", "emptyDir": {}} in pod["volumes"]
    monitor = by_kind(manifests, "ServiceMonitor")[0]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"


def test_no_role_and_no_api_token_when_rbac_is_off(tmp_path: Path) -> None:
    manifests = rendered(tmp_path, None, "rbac.create=false")
    assert not by_kind(manifests, "Role") and not by_kind(manifests, "RoleBinding")
    pod = by_kind(manifests, "Deployment")[0]["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert by_kind(manifests, "ServiceAccount")[0]["automountServiceAccountToken"] is False
    with_role = by_kind(rendered(tmp_path), "Deployment")[0]["spec"]["template"]["spec"]
    assert with_role["automountServiceAccountToken"] is True


def test_no_rule_lets_the_tuner_touch_pods(tmp_path: Path) -> None:
    for manifests in (rendered(tmp_path), rendered(tmp_path, NON_DEFAULT)):
        rules = [rule for role in by_kind(manifests, "Role") for rule in role["rules"]]
        assert all("pods" not in rule["resources"] for rule in rules)


@pytest.mark.parametrize("hostile", [
    "target.restUrl=http://flink:8081;id #",
    "target.restUrl=http://flink:8081$(id)",
    "target.restUrl=http://user:pw@flink:8081",
    "target.reporterUrls[0]=http://x:9249/metrics`id`",
    "extraArgs[0]=--dry-run; rm -rf /",
])
def test_a_hostile_value_is_refused_before_anything_renders(hostile: str) -> None:
    result = run_helm("template", "rel", str(CHART), "--set", hostile)
    assert result.returncode != 0 and "does not match pattern" in result.stderr, result.stdout + result.stderr


def test_no_manifest_runs_a_shell_and_every_value_stays_one_argument(tmp_path: Path) -> None:
    odd = "target.jobFile.name=x y; z"  # a job-file value: it goes into the ConfigMap, never into a command
    for manifests in (rendered(tmp_path), rendered(tmp_path, NON_DEFAULT), rendered(tmp_path, None, odd)):
        pod = by_kind(manifests, "Deployment")[0]["spec"]["template"]["spec"]
        for container in pod["containers"] + pod.get("initContainers", []):
            assert "command" not in container, "the image's entry point, exec form"
            assert all(isinstance(a, str) and "\n" not in a for a in container["args"])
        assert "sh -c" not in yaml.safe_dump(manifests)


def test_every_flag_the_chart_passes_exists_on_chronos_tune(tmp_path: Path) -> None:
    help_text = subprocess.run([sys.executable, "-m", "chronos.cli.main", "tune", "--help"], capture_output=True,
                               text=True, env={"COLUMNS": "300", "PATH": "/usr/bin:/bin"}, timeout=60).stdout
    flags = {a.split("=")[0] for m in (rendered(tmp_path), rendered(tmp_path, NON_DEFAULT)) for a in tune_args(m)
             if a.startswith("--")}
    missing = [f for f in sorted(flags) if not re.search(rf"{re.escape(f)}\b", help_text)]
    assert not missing, f"not options of chronos tune: {missing}"


def test_the_dashboards_configmap_carries_the_generated_dashboards_for_the_sidecar(tmp_path: Path) -> None:
    maps = [m for m in by_kind(rendered(tmp_path), "ConfigMap") if m["metadata"]["name"].endswith("-dashboards")]
    assert maps and maps[0]["metadata"]["labels"]["grafana_dashboard"] == "1"
    data = maps[0]["data"]
    assert set(data) == {f"{d.uid}.json" for d in DASHBOARDS}
    for spec in DASHBOARDS:
        assert json.loads(data[f"{spec.uid}.json"]) == json.loads(render(spec))


@pytest.mark.parametrize(("setting", "complaint"), [
    ("qos.recovery=fast", "recovery"),
    ("policy.strategy=magic", "strategy"),
    ("metrics.port=80", "port"),
    ("realize=sometimes", "realize"),
    ("nosuchkey=1", "nosuchkey"),
])
def test_the_values_schema_refuses_bad_values(setting: str, complaint: str) -> None:
    result = run_helm("template", "rel", str(CHART), "--set", setting)
    assert result.returncode != 0 and complaint in result.stderr, result.stderr


def test_a_release_without_a_target_is_refused_in_one_line() -> None:
    result = run_helm("template", "rel", str(CHART), "--set", "target.flinkDeployment=")
    assert result.returncode != 0 and "set target.flinkDeployment" in result.stderr


TARGETS = """
targets:
  - name: orders
    flinkDeployment: orders
    policy: {latency_p99_ms: 5000}
    jobFile:
      name: orders
      io: {bootstrap: "kafka:9092", input-topic: orders, output-topic: totals}
  - name: fleet
    flinkDeployment: fleet
    restUrl: http://fleet-jm:8081
targetDefaults: {recovery_s: 45, interval_max_s: 120}
"""


def test_a_list_of_targets_is_one_controller_reading_the_jobs_file_chronos_reads(tmp_path: Path) -> None:
    from chronos.tune.job_targets import read_job_targets

    manifests = rendered(tmp_path, TARGETS)
    validate_all(manifests)
    args = tune_args(manifests)
    assert "--jobs=/etc/chronos/jobs.yaml" in args
    assert not [a for a in args if a.startswith(("--flink-deployment", "--latency-p99", "--recovery", "--strategy"))]
    config = next(m for m in by_kind(manifests, "ConfigMap") if m["metadata"]["name"] == "rel-chronos")["data"]
    mounted = tmp_path / "etc"
    mounted.mkdir()
    for name, text in config.items():
        (mounted / name).write_text(text)
    orders, fleet = read_job_targets(mounted / "jobs.yaml")  # what the pod's chronos reads, read by chronos
    assert (orders.flink_deployment, orders.namespace, orders.rest_url) == ("orders", "streaming", "http://orders-rest:8081")
    assert (orders.policy.latency_p99_ms, orders.policy.recovery_s, orders.policy.interval_max_s) == (5000, 45, 120)
    assert orders.job_file == mounted / "job-orders.yaml" and "totals" in orders.job_file.read_text()
    assert (fleet.rest_url, fleet.job_file, fleet.policy.latency_p99_ms) == ("http://fleet-jm:8081", None, None)
    rule = by_kind(manifests, "Role")[0]["rules"]
    assert rule == [{"apiGroups": ["flink.apache.org"], "resources": ["flinkdeployments"],
                     "resourceNames": ["orders", "fleet"], "verbs": ["get", "patch"]}]


def test_discovery_lists_the_release_namespace_and_passes_qos_and_policy_as_defaults(tmp_path: Path) -> None:
    manifests = rendered(tmp_path, None, "discovery.enabled=true", "discovery.every=1min")
    validate_all(manifests)
    args = tune_args(manifests)
    assert "--discover=streaming" in args and "--discover-every=1min" in args
    assert "--recovery=60s" in args and not [a for a in args if a.startswith(("--flink-deployment", "--job-file"))]
    rule = by_kind(manifests, "Role")[0]["rules"]
    assert rule == [{"apiGroups": ["flink.apache.org"], "resources": ["flinkdeployments"],
                     "verbs": ["get", "list", "patch"]}]


def test_every_flag_of_the_many_job_modes_exists_on_chronos_tune(tmp_path: Path) -> None:
    help_text = subprocess.run([sys.executable, "-m", "chronos.cli.main", "tune", "--help"], capture_output=True,
                               text=True, env={"COLUMNS": "300", "PATH": "/usr/bin:/bin"}, timeout=60).stdout
    flags = {a.split("=")[0] for m in (rendered(tmp_path, TARGETS), rendered(tmp_path, None, "discovery.enabled=true"))
             for a in tune_args(m) if a.startswith("--")}
    missing = [f for f in sorted(flags) if not re.search(rf"{re.escape(f)}\b", help_text)]
    assert not missing, f"not options of chronos tune: {missing}"


SECURED = [
    "security.kafka.protocol=SASL_SSL", "security.kafka.username=analytics", "security.kafka.passwordSecret.name=kafka-user",
    "security.kafka.caSecret.name=kafka-ca", "security.rest.caSecret.name=flink-ca",
    "security.rest.clientCertSecret.name=chronos-tls", "security.rest.authScheme=bearer",
    "security.rest.authSecret.name=proxy-token",
]


def test_a_secured_cluster_is_reached_with_secrets_mounted_read_only_and_named_by_reference(tmp_path: Path) -> None:
    from chronos.cli import connections

    manifests = rendered(tmp_path, None, *SECURED)
    validate_all(manifests)
    pod = by_kind(manifests, "Deployment")[0]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    mounts = {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}
    secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    assert set(secrets) == {"kafka-password", "kafka-ca", "rest-ca", "rest-client", "rest-auth"}
    assert all(mounts[name]["readOnly"] and mounts[name]["mountPath"] == f"/etc/chronos-secrets/{name}"
               for name in secrets)
    assert all(s["defaultMode"] == 0o440 for s in secrets.values())
    assert secrets["rest-client"]["items"] == [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]
    # What the pod's chronos reads, read by chronos: references to the mounted files, never a value.
    config = next(m for m in by_kind(manifests, "ConfigMap") if m["metadata"]["name"] == "rel-chronos")["data"]
    (tmp_path / "kafka-security.yaml").write_text(config["kafka-security.yaml"])
    kafka = connections.kafka_security({connections.KAFKA_SECURITY_ENV: str(tmp_path / "kafka-security.yaml")})
    assert kafka is not None and kafka.describe() == \
        "SASL_SSL, SCRAM-SHA-512 as analytics, CA /etc/chronos-secrets/kafka-ca/ca.pem"
    assert str(kafka.password) == "${file:/etc/chronos-secrets/kafka-password/password}"
    assert env["CHRONOS_KAFKA_SECURITY"] == "/etc/chronos/kafka-security.yaml"
    assert env["CHRONOS_REST_CA_FILE"] == "/etc/chronos-secrets/rest-ca/ca.pem"
    assert env["CHRONOS_REST_AUTH"] == "bearer:${file:/etc/chronos-secrets/rest-auth/secret}"
    rest = connections.rest_security({connections.REST_AUTH_ENV: env["CHRONOS_REST_AUTH"]})
    assert rest is not None and str(rest.auth) == "${file:/etc/chronos-secrets/rest-auth/secret}"
    plain = by_kind(rendered(tmp_path), "Deployment")[0]["spec"]["template"]["spec"]
    assert not [v for v in plain["volumes"] if "secret" in v]
    assert not [e for e in plain["containers"][0]["env"] if e["name"].startswith("CHRONOS_")]


def test_a_sasl_login_without_its_secret_is_refused_in_one_line() -> None:
    result = run_helm("template", "rel", str(CHART), "--set", "security.kafka.protocol=SASL_SSL")
    assert result.returncode != 0 and "needs security.kafka.passwordSecret.name" in result.stderr


def test_the_default_image_is_the_one_scripts_build_image_builds_and_a_digest_pins_it(tmp_path: Path) -> None:
    """scripts/build_image.sh tags its image `image.repository:VERSION` (chronos's version, which the chart's
    appVersion must be) and writes the manifest's digest, which `image.digest` takes."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"] == version
    repository = yaml.safe_load((CHART / "values.yaml").read_text())["image"]["repository"]
    script = (ROOT / "scripts" / "build_image.sh").read_text()
    assert 'ref="$repository:$version"' in script and "helm/chronos/values.yaml" in script
    assert f"ARG VERSION={version}\n" in (ROOT / "image" / "Containerfile").read_text(), "its label's default"

    def image(*sets: str) -> str:
        pod = by_kind(rendered(tmp_path, None, *sets), "Deployment")[0]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsUser"] == 10001, "the image's own user (image/Containerfile)"
        return str(pod["containers"][0]["image"])

    assert image() == f"{repository}:{version}"
    digest = "sha256:" + "0a" * 32
    assert image(f"image.digest={digest}") == f"{repository}:{version}@{digest}"
    refused = run_helm("template", "rel", str(CHART), "--set", "image.digest=latest")
    assert refused.returncode != 0 and "does not match pattern" in refused.stderr, refused.stderr
