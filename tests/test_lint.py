"""scripts/lint.sh really validates: the shipped manifests and Dockerfiles pass, broken copies fail.

The manifests are rendered with the real `kubectl kustomize` and checked against the
Kubernetes 1.37 schemas; beyond the schema, the invariants the deployment relies on (probes,
the drain within the grace period, the required token Secret, non-root read-only containers, GPU
limits, shards = completions) are asserted on the output.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"
LINT = REPO / "scripts" / "lint.sh"

pytestmark = pytest.mark.skipif(not all((BIN / tool).exists() for tool in ("kubectl", "hadolint", "shellcheck")),
                                reason="lint tools not installed: run `make venv-dev` (requirements-dev.txt)")


def lint(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(LINT), *args], capture_output=True, text=True, timeout=300, cwd=REPO)


def render(path: Path) -> list[dict]:
    out = subprocess.run([str(BIN / "kubectl"), "kustomize", str(path)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(docs: list[dict], kind: str) -> dict:
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


@pytest.fixture()
def k8s_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(REPO / "k8s", tmp_path / "k8s"))


def test_shipped_manifests_validate(k8s_copy):
    result = lint("k8s", str(k8s_copy))
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("overlays/cpu", "overlays/gpu", "bulk"):
        assert f"ok   {k8s_copy / name} (Kubernetes 1.30.0, 1.37.0)" in result.stdout


def test_a_broken_manifest_fails_validation(k8s_copy):
    deployment = k8s_copy / "base" / "deployment.yaml"
    text = deployment.read_text()
    assert "  revisionHistoryLimit: 5\n" in text
    deployment.write_text(text.replace("  revisionHistoryLimit: 5\n", '  replicas: "two"\n  revisionHistoryLimit: 5\n'))
    result = lint("k8s", str(k8s_copy / "overlays" / "cpu"))
    assert result.returncode != 0
    assert "replicas" in result.stdout + result.stderr
    assert f"FAIL {k8s_copy / 'overlays' / 'cpu'}: kubernetes-validate" in result.stderr


def test_an_unknown_field_fails_strict_validation(k8s_copy):
    service = k8s_copy / "base" / "service.yaml"
    service.write_text(service.read_text().replace("  type: ClusterIP\n", "  type: ClusterIP\n  replica: 3\n"))
    result = lint("k8s", str(k8s_copy / "overlays" / "gpu"))
    assert result.returncode != 0 and "replica" in result.stdout + result.stderr


def test_dockerfiles_pass_and_a_root_user_fails(tmp_path):
    assert lint("docker").returncode == 0
    broken = tmp_path / "Dockerfile"
    broken.write_text((REPO / "Dockerfile").read_text().replace("USER 10001:10001", "USER root"))
    result = lint("docker", str(broken))
    assert result.returncode != 0 and "DL3002" in result.stdout


def test_shell_scripts_pass_and_an_unchecked_cd_fails(tmp_path):
    """shellcheck over scripts/*.sh and .ci/run: a failed benchmark's status once vanished in a pipe there."""
    result = lint("shell")
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken.sh"
    broken.write_text('#!/usr/bin/env bash\ncd "$1"\nrm -f ./*.tmp\n')
    result = lint("shell", str(broken))
    assert result.returncode != 0 and "SC2164" in result.stdout


@pytest.mark.parametrize("overlay", ["cpu", "gpu"])
def test_the_drain_fits_in_the_grace_period(overlay):
    """preStop sleep, then DIALSCORE_GRACEFUL_TIMEOUT for the requests in flight and queued, then a margin
    for the master to reap its workers, all before the kubelet's SIGKILL."""
    docs = render(REPO / "k8s" / "overlays" / overlay)
    pod = by_kind(docs, "Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    config = by_kind(docs, "ConfigMap")["data"]
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pre_stop >= 3  # endpoints and proxies drop a terminating pod asynchronously
    assert pre_stop + int(config["DIALSCORE_GRACEFUL_TIMEOUT"]) + 5 <= pod["terminationGracePeriodSeconds"]


@pytest.mark.parametrize("overlay", ["cpu", "gpu"])
def test_the_token_secret_is_required_and_open_access_is_not_the_default(overlay):
    """A pod without the Secret must not start: optional, it served every endpoint open."""
    docs = render(REPO / "k8s" / "overlays" / overlay)
    [container] = by_kind(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    ref = env["DIALSCORE_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert (ref["name"], ref["key"], ref.get("optional", False)) == ("dialscore-api-token", "token", False)
    config = by_kind(docs, "ConfigMap")["data"]
    assert config.get("DIALSCORE_OPEN_ACCESS", "false") == "false"


def test_the_documented_open_access_overlay_renders_open(tmp_path):
    """docs/deploy.md's overlay for open access removes the token and says so explicitly."""
    docs_text = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```yaml\n# k8s/overlays/open-access/kustomization.yaml\n(.*?)```", docs_text, re.S)
    k8s = Path(shutil.copytree(REPO / "k8s", tmp_path / "k8s"))
    (k8s / "overlays" / "open-access").mkdir()
    (k8s / "overlays" / "open-access" / "kustomization.yaml").write_text(block)
    result = lint("k8s", str(k8s / "overlays" / "open-access"))
    assert result.returncode == 0, result.stdout + result.stderr
    docs = render(k8s / "overlays" / "open-access")
    [container] = by_kind(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert "DIALSCORE_API_TOKEN" not in {e["name"] for e in container["env"]}
    assert by_kind(docs, "ConfigMap")["data"]["DIALSCORE_OPEN_ACCESS"] == "true"


@pytest.mark.parametrize("overlay", ["cpu", "gpu"])
def test_service_pods_are_probed_and_hardened(overlay):
    docs = render(REPO / "k8s" / "overlays" / overlay)
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ConfigMap",
            "NetworkPolicy"} <= kinds
    pod = by_kind(docs, "Deployment")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["startupProbe"]["httpGet"]["path"] == "/readyz"
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    assert pod["securityContext"]["runAsNonRoot"] and security["capabilities"]["drop"] == ["ALL"]
    env = {e["name"]: e for e in container["env"]}
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert env["PROMETHEUS_MULTIPROC_DIR"]["value"] in mounts
    config = by_kind(docs, "ConfigMap")["data"]
    # The probes are answered off the scoring threads: liveness gives a hang half a minute at least and
    # answers a few seconds each, readiness follows within seconds.
    live, ready = container["livenessProbe"], container["readinessProbe"]
    assert 2 <= live["timeoutSeconds"] <= 5 and live["periodSeconds"] * live["failureThreshold"] >= 30
    assert ready["periodSeconds"] <= 5 and ready["timeoutSeconds"] < ready["periodSeconds"]
    # Threads: workers x intra-op threads must not exceed the CPU limit (containers see all node cores).
    assert int(config["DIALSCORE_WORKERS"]) * int(config["DIALSCORE_INTRA_OP_THREADS"]) <= int(
        container["resources"]["limits"]["cpu"])
    assert 1 <= int(config["DIALSCORE_ENCODER_THREADS"]) <= int(container["resources"]["limits"]["cpu"])
    for key in ("DIALSCORE_MAX_BODY_BYTES", "DIALSCORE_MAX_ITEMS", "DIALSCORE_MAX_CANDIDATES",
                "DIALSCORE_MAX_TURNS", "DIALSCORE_MAX_DIALOGUE_TURNS", "DIALSCORE_MAX_CHARS"):
        assert int(config[key]) > 0
    # the public benchmarks score with the pod's limits too (API.md): DSTC9's 630-turn dialogues, 3,414-character turns
    assert int(config["DIALSCORE_MAX_DIALOGUE_TURNS"]) >= 630 and int(config["DIALSCORE_MAX_CHARS"]) >= 3414
    assert container["envFrom"][0]["configMapRef"]["name"] == by_kind(docs, "ConfigMap")["metadata"]["name"]
    if overlay == "gpu":
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
        # the GPU request alone places the pod; a gpu.present selector left it Pending without GPU feature discovery
        assert "nodeSelector" not in pod and pod["tolerations"][0]["key"] == "nvidia.com/gpu"
        assert container["image"].split("/")[-1].startswith("dialscore-gpu:")
    else:
        assert "nvidia.com/gpu" not in container["resources"]["limits"]


def test_bulk_job_shards_match_completions():
    docs = render(REPO / "k8s" / "bulk")
    job = by_kind(docs, "Job")
    config = by_kind(docs, "ConfigMap")["data"]
    assert job["spec"]["completionMode"] == "Indexed"
    assert int(config["DIALSCORE_SHARD_COUNT"]) == job["spec"]["completions"]
    assert "{index}" in config["BULK_OUTPUT"]
    [container] = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "service.bulk"]
    assert container["securityContext"]["readOnlyRootFilesystem"]


# Every pod that runs the CPU image: (kustomization under k8s/, the kind that holds its pod).
IMAGE_PODS = [("overlays/cpu", "Deployment"), ("kserve", "ServingRuntime"), ("bulk", "Job")]


def pod_spec(path: str, kind: str) -> dict:
    doc = by_kind(render(REPO / "k8s" / path), kind)
    return doc["spec"] if kind == "ServingRuntime" else doc["spec"]["template"]["spec"]


@pytest.mark.parametrize("path, kind", IMAGE_PODS)
def test_every_pod_of_the_image_gives_openvinos_cache_a_volume_and_bounds_its_scratch_space(path, kind):
    """The image's DIALSCORE_OPENVINO_CACHE_DIR is on its read-only root: without a volume there each worker
    compiled MiniLM for itself through /tmp (90 MB a start; the bulk Job's /tmp holds 64Mi). An emptyDir
    without a size limit may fill the node's disk."""
    [cache] = re.findall(r"DIALSCORE_OPENVINO_CACHE_DIR=(\S+)", (REPO / "Dockerfile").read_text(encoding="utf-8"))
    pod = pod_spec(path, kind)
    [container] = pod["containers"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert cache in mounts and not any(m.get("readOnly") for m in container["volumeMounts"] if m["mountPath"] == cache)
    assert volumes[mounts[cache]]["emptyDir"]["sizeLimit"] == "768Mi"  # MiniLM's 180 MB, mpnet-base's 440 MB
    for volume in volumes.values():
        if "emptyDir" in volume:
            assert volume["emptyDir"].get("sizeLimit"), volume["name"]


def test_the_documented_docker_run_gives_openvinos_cache_a_volume():
    """docs/deploy.md's `docker run --read-only` mounts what the pods mount: /tmp and the compiled-model cache."""
    [cache] = re.findall(r"DIALSCORE_OPENVINO_CACHE_DIR=(\S+)", (REPO / "Dockerfile").read_text(encoding="utf-8"))
    [command] = re.findall(r"docker run [^\n]*--read-only.*?\n\s*-e [^\n]*", (REPO / "docs" / "deploy.md").read_text(
        encoding="utf-8"), re.S)
    assert "--tmpfs /tmp" in command and f":{cache}" in command


# The fields of KServe's CRDs the example uses (serving.kserve.io ServingRuntime v1alpha1 and
# InferenceService v1beta1, as KServe's API reference documents them): kubernetes-validate has no schema
# for custom kinds, so the example's KServe fields are held to these, and its pod parts to the
# Kubernetes Pod schema below.
_KSERVE = {
    "ServingRuntime": {"supportedModelFormats", "protocolVersions", "multiModel", "containers", "volumes"},
    "InferenceService": {"predictor"},
}
_PREDICTOR = {"minReplicas", "maxReplicas", "scaleMetric", "scaleTarget", "terminationGracePeriodSeconds",
              "automountServiceAccountToken", "model"}
_MODEL = {"modelFormat", "runtime", "protocolVersion"}


def test_the_kserve_example_validates_and_probes_the_v2_paths():
    from kubernetes_validate.utils import validate

    docs = render(REPO / "k8s" / "kserve")
    runtime, service = by_kind(docs, "ServingRuntime"), by_kind(docs, "InferenceService")
    for doc in (runtime, service):
        assert set(doc["spec"]) <= _KSERVE[doc["kind"]], doc["kind"]
    # The runtime's pod template, as the Pod KServe makes of it: Kubernetes' own strict schema.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dialscore"},
           "spec": {"containers": runtime["spec"]["containers"], "volumes": runtime["spec"]["volumes"]}}
    for version in ("1.30.0", "1.37.0"):
        validate(pod, version, strict=True)
    predictor = service["spec"]["predictor"]
    assert set(predictor) <= _PREDICTOR and set(predictor["model"]) <= _MODEL
    format_ = runtime["spec"]["supportedModelFormats"][0]
    assert predictor["model"]["modelFormat"] == {"name": format_["name"], "version": format_["version"]}
    assert predictor["model"]["runtime"] == runtime["metadata"]["name"]
    assert predictor["model"]["protocolVersion"] in runtime["spec"]["protocolVersions"] == ["v2"]

    [container] = runtime["spec"]["containers"]
    assert container["name"] == "kserve-container"
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    [port] = container["ports"]
    assert int(env["DIALSCORE_PORT"]) == port["containerPort"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["readinessProbe"]["httpGet"]["path"] == container["startupProbe"]["httpGet"]["path"] == (
        "/v2/health/ready")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] == port["containerPort"]
    ref = env["DIALSCORE_API_TOKEN"]["secretKeyRef"]
    assert (ref["name"], ref["key"], ref.get("optional", False)) == ("dialscore-api-token", "token", False)
    assert container["lifecycle"]["preStop"]["sleep"]["seconds"] + int(env["DIALSCORE_GRACEFUL_TIMEOUT"]) + 5 <= (
        predictor["terminationGracePeriodSeconds"])
    assert int(env["DIALSCORE_WORKERS"]) * int(env["DIALSCORE_INTRA_OP_THREADS"]) <= int(
        container["resources"]["limits"]["cpu"])
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] and security["runAsNonRoot"] and security["capabilities"]["drop"] == [
        "ALL"]
    assert env["PROMETHEUS_MULTIPROC_DIR"] in {m["mountPath"] for m in container["volumeMounts"]}


def test_the_kserve_runtime_has_the_settings_of_the_base_configmap():
    """docs/deploy.md: the runtime's threads, memory and limits are the Deployment's. Its 4Gi is sized on
    recycling a worker past DIALSCORE_MAX_WORKER_MEMORY_MIB, which the runtime once lacked. Only the
    port differs (KServe's 8080)."""
    config = by_kind(render(REPO / "k8s" / "overlays" / "cpu"), "ConfigMap")["data"]
    [container] = by_kind(render(REPO / "k8s" / "kserve"), "ServingRuntime")["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert {k: env.get(k) for k in config if k != "DIALSCORE_PORT"} == {k: v for k, v in config.items()
                                                                         if k != "DIALSCORE_PORT"}
    assert env["DIALSCORE_MAX_WORKER_MEMORY_MIB"] == "1800" and container["resources"]["limits"]["memory"] == "4Gi"


def test_a_kserve_pod_part_that_breaks_the_kubernetes_schema_fails(tmp_path):
    from kubernetes_validate.utils import ValidationError, validate

    k8s = Path(shutil.copytree(REPO / "k8s", tmp_path / "k8s"))
    runtime_file = k8s / "kserve" / "servingruntime.yaml"
    runtime_file.write_text(runtime_file.read_text().replace("containerPort: 8080", "containerPort: eighty"))
    runtime = by_kind(render(k8s / "kserve"), "ServingRuntime")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": runtime["spec"][
        "containers"]}}
    with pytest.raises(ValidationError):
        validate(pod, "1.37.0", strict=True)


def test_the_kserve_pods_get_the_bases_network_rules_and_disruption_budget():
    """KServe's pods carry its label naming their InferenceService, which the base's policies (selecting
    app.kubernetes.io/name) never match: their egress was open and a drain could take every pod."""
    from kubernetes_validate.utils import validate

    docs = render(REPO / "k8s" / "kserve")
    service, [runtime_port] = by_kind(docs, "InferenceService"), by_kind(docs, "ServingRuntime")["spec"]["containers"][
        0]["ports"]
    selector = {"serving.kserve.io/inferenceservice": service["metadata"]["name"]}
    policy, budget = by_kind(docs, "NetworkPolicy"), by_kind(docs, "PodDisruptionBudget")
    base = render(REPO / "k8s" / "overlays" / "cpu")
    assert policy["spec"]["podSelector"]["matchLabels"] == budget["spec"]["selector"]["matchLabels"] == selector
    assert policy["spec"]["egress"] == [] and set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    [rule] = policy["spec"]["ingress"]
    assert [p["port"] for p in rule["ports"]] == [runtime_port["containerPort"]]
    assert budget["spec"]["maxUnavailable"] == by_kind(base, "PodDisruptionBudget")["spec"]["maxUnavailable"]
    for doc in (policy, budget):
        validate(doc, "1.37.0", strict=True)
