"""The Helm chart (deploy/helm/rocketmq-console): `helm lint` is clean, `helm template` renders
what production needs (web with probes and a disruption budget, workers, two beats, the
migration as a hook, non-root read-only containers, settings and secrets by reference, the
shipped Prometheus rules), and the rendered web, worker and beat workloads started with
`podman kube play` from the image poll the session's cluster and answer /readyz.

Real parts: helm built from the Go module proxy (devstack/helm.py), podman, the image
(devstack/containers.py), redis-server, PostgreSQL, the RocketMQ cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from devstack import containers
from devstack.helm import CHART, helm
from devstack.processes import free_port
from tests.support.containers import answers, run, site, web_image  # noqa: F401 (a fixture)
from tests.support.scenarios import wait
from tests.test_settings import env_example_entries

pytestmark = pytest.mark.slow
RULES = Path(__file__).resolve().parent.parent / "docs" / "prometheus" / "rules.yml"


def render(*settings: str) -> list[dict]:
    rendered = helm("template", "site", str(CHART), *(a for s in settings for a in ("--set", s)))
    assert rendered.returncode == 0, rendered.stderr
    return [d for d in yaml.safe_load_all(rendered.stdout) if d]


def by_kind(manifests: list[dict]) -> dict[tuple[str, str], dict]:
    return {(m["kind"], m["metadata"]["name"].removeprefix("site-rocketmq-console")): m for m in manifests}


def test_helm_lint_is_clean_and_the_defaults_render_what_production_needs():
    linted = helm("lint", "--strict", str(CHART))
    assert linted.returncode == 0 and "0 chart(s) failed" in linted.stdout, linted.stdout + linted.stderr
    found = by_kind(render())
    assert set(found) == {("ConfigMap", ""), ("PersistentVolumeClaim", ""), ("Service", ""),
                          ("PodDisruptionBudget", "-web"), ("Deployment", "-web"), ("Deployment", "-worker"),
                          ("Deployment", "-beat"), ("Job", "-migrate")}  # fmt: skip
    web = found["Deployment", "-web"]["spec"]
    assert web["replicas"] == 2 and found["Deployment", "-beat"]["spec"]["replicas"] == 2
    [serve] = web["template"]["spec"]["containers"]
    assert serve["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert serve["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert found["PodDisruptionBudget", "-web"]["spec"]["minAvailable"] == 1
    hook = found["Job", "-migrate"]["metadata"]["annotations"]["helm.sh/hook"]
    assert hook == "pre-install,pre-upgrade"
    assert found["Job", "-migrate"]["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate", "--no-input"]
    for kind, name in (("Deployment", "-web"), ("Deployment", "-worker"), ("Deployment", "-beat"), ("Job", "-migrate")):
        pod = found[kind, name]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] == 10001
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"]
            assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp", "/var/lib/rocketmq-console"}
            assert container["envFrom"][0] == {"configMapRef": {"name": "site-rocketmq-console"}}


def test_every_setting_is_reachable_secrets_by_reference_and_the_options_render():
    names = sorted(env_example_entries())
    manifests = render(*(f"config.{name}=value-of-{name}" for name in names),
                       "secretEnv.SECRET_KEY.secretName=vault", "secretEnv.SECRET_KEY.key=console-key",
                       "envFromSecrets={database}", "ingress.enabled=true", "metrics.serviceMonitor.enabled=true",
                       "metrics.prometheusRule.enabled=true", "persistence.existingClaim=history")  # fmt: skip
    found = by_kind(manifests)
    assert found["ConfigMap", ""]["data"] == {name: f"value-of-{name}" for name in names}  # every one of .env.example
    [worker] = found["Deployment", "-worker"]["spec"]["template"]["spec"]["containers"]
    assert {"name": "SECRET_KEY", "valueFrom": {"secretKeyRef": {"name": "vault", "key": "console-key"}}} in worker[
        "env"
    ]
    assert {"secretRef": {"name": "database"}} in worker["envFrom"]
    assert ("PersistentVolumeClaim", "") not in found  # the existing claim instead
    volumes = found["Deployment", "-web"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "var", "persistentVolumeClaim": {"claimName": "history"}} in volumes
    assert found["Ingress", ""]["spec"]["rules"][0]["host"] == "console.example.com"
    assert found["ServiceMonitor", ""]["spec"]["endpoints"][0]["path"] == "/metrics"
    # the rules shipped for Prometheus, as they are (the chart's copy equal, {{ $labels }} untouched by helm)
    assert found["PrometheusRule", ""]["spec"] == yaml.safe_load(RULES.read_text())


@pytest.mark.broker
def test_the_rendered_workloads_run_under_podman_kube_play(web_image, tmp_path: Path, namesrv, mqadmin, names):  # noqa: F811
    mqadmin.run("updateSubGroup", "-c", "DefaultCluster", "-g", names.group("chart"))  # a group every poll finds
    port = free_port()
    repository, tag = web_image.tag.rsplit(":", 1)
    with site(web_image, tmp_path, namesrv) as ours:
        secrets = {k: v for k, v in ours.environment.items() if k in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL")}
        settings = [f"config.{k}={v}" for k, v in ours.environment.items() if k not in secrets]
        manifests = render(
            f"image.repository={repository}", f"image.tag={tag}", "hostNetwork=true", "web.bindAddress=127.0.0.1",
            f"web.port={port}", "web.replicas=1", "worker.replicas=1", f"persistence.hostPath={ours.volume}",
            "secret.create=true", *(f"secret.values.{k}={v}" for k, v in secrets.items()),
            *(s.replace(",", "\\,") for s in settings),
        )  # fmt: skip
        # the migration Job's container, as a one-off (podman kube play runs no Job)
        job = next(m for m in manifests if m["kind"] == "Job")["spec"]["template"]["spec"]["containers"][0]
        migrated = run(web_image, job["args"], ours.environment)
        assert migrated.returncode == 0, migrated.stderr
        workloads = [m for m in manifests if m["kind"] in ("ConfigMap", "Secret", "Deployment")]
        played = containers.Played(workloads, tmp_path)
        try:
            assert len(played.containers) == 4, played.containers  # web, worker and two beats
            wait(lambda: answers(port), 120, "the web pod answers /healthz")
            wait(ours.polled, 120, "a poll in the history, from the worker pod")
            wait(lambda: answers(port, "/readyz"), 60, "the web pod's /readyz 200")
            beats = [c for c in played.containers if "-beat-" in c]
            logs = [played.logs(c) for c in beats]
            assert sum("beat: active" in log for log in logs) == 1, logs  # one sends, the other stands by
        finally:
            played.down()
