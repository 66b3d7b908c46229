"""The Citus set-up for Kubernetes (deploy/k8s/components/citus, deploy/citus) holds together.

``deploy/k8s/overlays/citus`` (the base plus the component) also runs every check of
test_deploy_k8s.py; these are the Citus parts': the nodes as StatefulSets of the image
built here, the worker count the same in every place that names it, the migration
distributing only once the workers are registered, the names Citus registers being the
pods' DNS names, workers reachable only from the cluster's own nodes, and an image
recipe building the Citus release the tests run.
"""

from __future__ import annotations

import hashlib
import re

import yaml

from grove_db import citus
from tests.support.dockerfiles import COMPILERS, logical_lines
from tests.support.manifests import (
    COMPONENT,
    K8S,
    ROOT,
    Manifest,
    by_name,
    container_ports,
    env_value,
    ingress_rules_for,
    render,
    selects,
)
from tests.support.tools import missing

NODES = ("citus-coordinator", "citus-worker")
CITUS_IMAGE = "grove-citus"
DOCKERFILE = ROOT / "deploy" / "citus" / "Dockerfile"
SCRIPT = K8S / "components" / "citus" / "register-nodes.sh"
POSTGRES_UID = 999  # the postgres image's own user


def objects() -> tuple[Manifest, ...]:
    return render("citus")


def node(name: str) -> Manifest:
    return by_name(objects(), "StatefulSet")[name]


def node_container(name: str) -> Manifest:
    (container,) = node(name)["spec"]["template"]["spec"]["containers"]
    found: Manifest = container
    return found


def citus_version() -> str:
    """The Citus release of the shared tools folder's build, from its file name."""
    match = re.fullmatch(r"citus-([\d.]+)-pg18-linux-x86_64\.tar\.gz", citus.TARBALL)
    assert match, citus.TARBALL
    return match.group(1)


def dockerfile_args() -> dict[str, str]:
    return dict(
        line.split(None, 1)[1].split("=", 1)
        for line in logical_lines(DOCKERFILE.read_text())
        if line.startswith("ARG ") and "=" in line
    )


def test_the_nodes_are_statefulsets_of_the_citus_image_with_volumes_probes_and_limits() -> None:
    assert set(by_name(objects(), "StatefulSet")) == set(NODES)
    for name in NODES:
        spec = node(name)["spec"]
        assert spec["serviceName"] == name
        (claim,) = spec["volumeClaimTemplates"]
        assert claim["spec"]["resources"]["requests"]["storage"]
        container = node_container(name)
        assert container["image"] == f"{CITUS_IMAGE}:{citus_version()}-pg18", name
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert mounts["/var/lib/postgresql/data"] == claim["metadata"]["name"]
        assert env_value(container, "PGDATA") == "/var/lib/postgresql/data/pgdata"
        assert env_value(container, "POSTGRES_DB") == "grove"
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["exec"]["command"][0] == "pg_isready", (name, probe)
        for bound in ("requests", "limits"):
            for resource in ("cpu", "memory"):
                assert container["resources"][bound][resource], (name, bound, resource)
        assert container_ports(container) == {"postgres": 5432}
    assert node("citus-coordinator")["spec"]["replicas"] == 1
    budgets = by_name(objects(), "PodDisruptionBudget")
    for name in NODES:  # a database node is never evicted behind the operator's back
        assert budgets[name]["spec"]["maxUnavailable"] == 0


def test_every_citus_node_runs_unprivileged_with_a_read_only_root() -> None:
    for name in NODES:
        template = node(name)["spec"]["template"]
        pod = template["spec"]["securityContext"]
        assert template["spec"]["automountServiceAccountToken"] is False
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] == POSTGRES_UID
        assert pod["seccompProfile"]["type"] == "RuntimeDefault"
        own = node_container(name)["securityContext"]
        assert own["readOnlyRootFilesystem"] is True
        assert own["allowPrivilegeEscalation"] is False
        assert own["capabilities"]["drop"] == ["ALL"]
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in node_container(name)["volumeMounts"]}
        for writable in ("/var/run/postgresql", "/tmp", "/dev/shm"):  # noqa: S108 (emptyDirs)
            assert "emptyDir" in volumes[mounts[writable]], (name, writable)
        # The superuser's password from the Secret, never a literal.
        (password,) = [v for v in node_container(name)["env"] if v["name"] == "POSTGRES_PASSWORD"]
        assert password["valueFrom"]["secretKeyRef"]["key"] == "citus-postgres-password"


def test_the_worker_count_is_the_same_everywhere() -> None:
    workers = node("citus-worker")["spec"]["replicas"]
    assert workers >= 2
    jobs = by_name(objects(), "Job")
    (register,) = jobs["grove-citus-nodes"]["spec"]["template"]["spec"]["containers"]
    (wait,) = jobs["grove-migrate"]["spec"]["template"]["spec"]["initContainers"]
    assert env_value(register, "CITUS_WORKERS") == str(workers)
    assert env_value(wait, "CITUS_WORKERS") == str(workers)


def test_the_migration_distributes_only_once_the_workers_are_registered() -> None:
    job = by_name(objects(), "Job")["grove-migrate"]["spec"]["template"]["spec"]
    (migrate,) = job["containers"]
    assert migrate["command"] == ["grove", "migrate", "--citus"]
    (wait,) = job["initContainers"]
    assert wait["image"].startswith(f"{CITUS_IMAGE}:")
    script = wait["command"][-1]
    assert "pg_dist_node" in script and "$CITUS_WORKERS" in script
    (url,) = [v for v in wait["env"] if v["name"] == "GROVE_MIGRATION_DATABASE_URL"]
    assert url["valueFrom"]["secretKeyRef"]["key"] == "migration-database-url"


def test_the_nodes_citus_registers_are_the_pods_dns_names() -> None:
    text = SCRIPT.read_text()
    services = by_name(objects(), "Service")
    for name in NODES:
        assert services[name]["spec"]["clusterIP"] == "None", name  # a name per pod
    assert "citus_set_coordinator_host('citus-coordinator-0.citus-coordinator', 5432)" in text
    assert "citus_add_node('citus-worker-$i.citus-worker', 5432)" in text
    (register,) = by_name(objects(), "Job")["grove-citus-nodes"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert env_value(register, "PGHOST") == "citus-coordinator"
    assert register["command"] == ["sh", "/scripts/register-nodes.sh"]


def test_workers_admit_postgres_only_from_the_cluster_nodes() -> None:
    rendered = objects()
    labels = node("citus-worker")["spec"]["template"]["metadata"]["labels"]
    # The base's scraping rule selects every Grove pod; the nodes have no metrics port.
    rules = [r for r in ingress_rules_for(rendered, labels) if r["ports"][0]["port"] != "metrics"]
    assert rules
    for rule in rules:
        assert rule.get("from"), f"a worker admits anyone: {rule}"
        assert [p["port"] for p in rule["ports"]] == ["postgres"]
        for peer in rule["from"]:
            admitted = {
                labels.get(COMPONENT)
                for labels in (
                    {COMPONENT: component, "app.kubernetes.io/name": "grove"}
                    for component in ("api", "mcp", "worker", "share", "console", *NODES)
                )
                if selects(peer["podSelector"], labels)
            }
            assert admitted == set(NODES), admitted
    coordinator = node("citus-coordinator")["spec"]["template"]["metadata"]["labels"]
    (rule,) = [
        r for r in ingress_rules_for(rendered, coordinator) if r["ports"][0]["port"] != "metrics"
    ]
    (peer,) = rule["from"]
    assert peer == {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "grove"}}}


def test_the_services_are_the_same_as_on_one_postgresql() -> None:
    """Pointing Grove at the coordinator changes the Secret's URLs, not the services."""
    base = render("base")
    for kind in ("Deployment", "CronJob", "HorizontalPodAutoscaler", "ServiceMonitor"):
        assert by_name(objects(), kind) == by_name(base, kind), kind


def test_the_image_builds_the_citus_release_the_tests_run_with_pgvector() -> None:
    args = dockerfile_args()
    assert args["CITUS_VERSION"] == citus_version()
    tag = {i["name"]: i["newTag"] for i in _component()["images"]}[CITUS_IMAGE]
    assert tag == f"{citus_version()}-pg18"
    assert args["POSTGRES_IMAGE"].startswith("postgres:18")
    text = DOCKERFILE.read_text()
    assert '"postgresql-${PG_MAJOR}-pgvector"' in text
    assert "shared_preload_libraries = 'citus'" in text and "wal_level = logical" in text
    # Compilers only in the build stage.
    final = text.rsplit("\nFROM ", 1)[1]
    assert not COMPILERS.search(final), final
    initdb = (DOCKERFILE.parent / "initdb" / "001-grove-extensions.sql").read_text()
    assert initdb.index("EXTENSION IF NOT EXISTS citus") < initdb.index(
        "EXTENSION IF NOT EXISTS vector"
    )
    source = citus.tools_folder(ROOT) / f"citus-{citus_version()}.tar.gz"
    if not source.is_file():
        missing(f"the Citus source is not available: {source} is missing")
    assert hashlib.sha256(source.read_bytes()).hexdigest() == args["CITUS_SHA256"]


def _component() -> Manifest:
    loaded: Manifest = yaml.safe_load(
        (K8S / "components" / "citus" / "kustomization.yaml").read_text()
    )
    return loaded
