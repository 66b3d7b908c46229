"""The Kubernetes manifests as ``kubectl kustomize`` renders each kustomization of
deploy/k8s (offline), and the lookups the manifest tests share: objects by kind and name,
containers and their ports and settings, label selectors and network policy rules."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.support.tools import require_tool

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUSTOMIZATIONS = {
    "base": K8S / "base",
    "dev": K8S / "overlays" / "dev",
    "prod": K8S / "overlays" / "prod",
    "citus": K8S / "overlays" / "citus",
}
COMPONENT = "app.kubernetes.io/component"
Manifest = dict[str, Any]


@cache
def render(name: str) -> tuple[Manifest, ...]:
    """Every object of one kustomization, as ``kubectl kustomize`` renders it."""
    kubectl = require_tool("kubectl", "renders deploy/k8s with kustomize")
    result = subprocess.run(
        [kubectl, "kustomize", str(KUSTOMIZATIONS[name])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"kubectl kustomize {name} failed:\n{result.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def of_kind(objects: tuple[Manifest, ...], kind: str) -> list[Manifest]:
    return [obj for obj in objects if obj["kind"] == kind]


def by_name(objects: tuple[Manifest, ...], kind: str) -> dict[str, Manifest]:
    return {obj["metadata"]["name"]: obj for obj in of_kind(objects, kind)}


def pod_templates(objects: tuple[Manifest, ...]) -> Iterator[tuple[str, Manifest]]:
    """``(kind/name, pod template)`` of every Deployment, Job and CronJob."""
    for obj in objects:
        if obj["kind"] in ("Deployment", "Job"):
            yield f"{obj['kind']}/{obj['metadata']['name']}", obj["spec"]["template"]
        if obj["kind"] == "CronJob":
            template = obj["spec"]["jobTemplate"]["spec"]["template"]
            yield f"CronJob/{obj['metadata']['name']}", template


def containers(template: Manifest) -> list[Manifest]:
    spec = template["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def selects(selector: Manifest, labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels and matchExpressions) matches ``labels``."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        matched = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not matched:
            return False
    return True


def template_labels(objects: tuple[Manifest, ...]) -> dict[str, dict[str, str]]:
    """Pod labels of every Deployment, Job, CronJob and StatefulSet, by ``kind/name``."""
    labels = {name: t["metadata"].get("labels", {}) for name, t in pod_templates(objects)}
    for name, workload in by_name(objects, "StatefulSet").items():
        labels[f"StatefulSet/{name}"] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def workloads(objects: tuple[Manifest, ...]) -> dict[str, Manifest]:
    """The Deployments and StatefulSets (the Citus nodes), by name."""
    return {**by_name(objects, "Deployment"), **by_name(objects, "StatefulSet")}


def container_ports(container: Manifest) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}


def env_value(container: Manifest, name: str) -> str | None:
    for variable in container.get("env", []):
        if variable["name"] == name:
            return str(variable.get("value"))
    return None


def ingress_rules_for(objects: tuple[Manifest, ...], labels: dict[str, str]) -> list[Manifest]:
    rules: list[Manifest] = []
    for policy in of_kind(objects, "NetworkPolicy"):
        spec = policy["spec"]
        if "Ingress" in spec.get("policyTypes", ["Ingress"]) and selects(
            spec["podSelector"], labels
        ):
            rules.extend(spec.get("ingress", []))
    return rules
