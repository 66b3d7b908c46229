"""The Helm chart (deploy/helm/grove) stays in step with the kustomize manifests.

``helm template`` of the chart with its default values must render exactly the objects of
``kubectl kustomize deploy/k8s/base`` (kinds, names, images, commands, env settings,
ports, probes, resources, policies: everything), and with ``database=citus`` those of
``deploy/k8s/overlays/citus`` (the base plus the Citus component), less what each tool
adds of its own: Helm's labels and the config checksum on pod templates, kustomize's hash
suffix on generated ConfigMap names. The values that change what is rendered (images,
worker count, settings) are checked to reach the objects, and bad values to be refused.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.manifests import ROOT, Manifest, by_name, env_value, render
from tests.support.tools import require_tool

CHART = ROOT / "deploy" / "helm" / "grove"
#: Labels Helm's charts carry and kustomize's manifests do not.
HELM_LABELS = frozenset(
    {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"}
)
#: kustomize's generated ConfigMaps get a hash of their content as a name suffix.
GENERATED = re.compile(r"^(grove-config|grove-citus-scripts)-[a-z0-9]{10}$")


@cache
def helm_template(*settings: str) -> tuple[Manifest, ...]:
    """Every object of the chart, as ``helm template`` renders it with ``--set`` settings."""
    result = helm("template", "grove", str(CHART), *(f"--set={s}" for s in settings))
    assert result.returncode == 0, f"helm template failed:\n{result.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    binary = require_tool("helm", "renders the Helm chart deploy/helm/grove")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, check=False)


def normal(value: Any) -> Any:
    """An object as both tools should render it: no Helm labels or checksum, no hash suffix."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "labels" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k not in HELM_LABELS}
            if key == "annotations" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k != "checksum/config"}
                if not item:
                    continue
            out[key] = normal(item)
        return out
    if isinstance(value, list):
        return [normal(item) for item in value]
    if isinstance(value, str):
        match = GENERATED.match(value)
        return match.group(1) if match else value
    return value


def keyed(objects: tuple[Manifest, ...]) -> dict[tuple[str, str], Manifest]:
    found = {(o["kind"], normal(o["metadata"]["name"])): normal(o) for o in objects}
    assert len(found) == len(objects), "two objects of one kind and name"
    return found


def assert_same(chart: tuple[Manifest, ...], kustomized: tuple[Manifest, ...]) -> None:
    ours, theirs = keyed(chart), keyed(kustomized)
    assert sorted(ours) == sorted(theirs)
    for key, expected in theirs.items():
        assert ours[key] == expected, f"{key[0]}/{key[1]} differs from the kustomize base"


def test_the_chart_renders_the_kustomize_base() -> None:
    assert_same(helm_template(), render("base"))


def test_the_chart_with_citus_renders_the_citus_overlay() -> None:
    assert_same(helm_template("database=citus"), render("citus"))


def test_the_chart_lints() -> None:
    for settings in ([], ["--set=database=citus"]):
        result = helm("lint", "--strict", str(CHART), *settings)
        assert result.returncode == 0, result.stdout + result.stderr


def test_the_images_and_the_worker_count_come_from_the_values() -> None:
    objects = helm_template(
        "image.repository=registry.example.com/grove",
        "image.tag=1.2.3",
        "askImage.repository=registry.example.com/grove-ask",
        "askImage.tag=1.2.3",
        "database=citus",
        "citus.workers=3",
        "citus.image.tag=14.0.1-pg18-b",
    )
    images = {
        container["image"]
        for obj in objects
        for template in _templates(obj)
        for container in [
            *template["spec"].get("initContainers", []),
            *template["spec"]["containers"],
        ]
    }
    assert images == {
        "registry.example.com/grove:1.2.3",
        "registry.example.com/grove-ask:1.2.3",
        "grove-citus:14.0.1-pg18-b",
    }
    assert by_name(objects, "StatefulSet")["citus-worker"]["spec"]["replicas"] == 3
    jobs = by_name(objects, "Job")
    (register,) = jobs["grove-citus-nodes"]["spec"]["template"]["spec"]["containers"]
    (wait,) = jobs["grove-migrate"]["spec"]["template"]["spec"]["initContainers"]
    assert env_value(register, "CITUS_WORKERS") == env_value(wait, "CITUS_WORKERS") == "3"


def test_a_setting_reaches_grove_config_and_rolls_the_pods() -> None:
    before = helm_template()
    after = helm_template("config.GROVE_ENV=development")
    assert by_name(after, "ConfigMap")["grove-config"]["data"]["GROVE_ENV"] == "development"
    checksum = "checksum/config"
    for name in ("api", "mcp", "share", "console", "worker"):
        old = by_name(before, "Deployment")[name]["spec"]["template"]["metadata"]
        new = by_name(after, "Deployment")[name]["spec"]["template"]["metadata"]
        assert old["annotations"][checksum] != new["annotations"][checksum], name


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("database=mysql", "database"),
        ("citus.workers=0", "workers"),
        ("image.repository=", "repository"),
    ],
)
def test_bad_values_are_refused(setting: str, complaint: str) -> None:
    result = helm("template", "grove", str(CHART), f"--set={setting}")
    assert result.returncode != 0
    assert complaint in result.stderr, result.stderr


def test_the_citus_script_is_the_components() -> None:
    component = ROOT / "deploy" / "k8s" / "components" / "citus" / "register-nodes.sh"
    assert (CHART / "files" / "register-nodes.sh").read_bytes() == component.read_bytes()


def _templates(obj: Manifest) -> list[Manifest]:
    if obj["kind"] in ("Deployment", "Job", "StatefulSet"):
        return [obj["spec"]["template"]]
    if obj["kind"] == "CronJob":
        return [obj["spec"]["jobTemplate"]["spec"]["template"]]
    return []


def test_chart_files_are_yaml_templates_only() -> None:
    """Every template renders (none is skipped by a typo in its name)."""
    names = {p.name for p in (CHART / "templates").iterdir()}
    assert all(n.endswith((".yaml", ".tpl")) or n == "NOTES.txt" for n in names), names
    assert Path(CHART / "values.schema.json").is_file()
