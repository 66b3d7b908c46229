"""The Kubernetes manifests (deploy/k8s) render, validate, and keep Grove's promises.

Each kustomization (the base and both overlays) is rendered with ``kubectl kustomize``
(offline) and every object is checked against the Kubernetes 1.37 schemas in strict mode.
The Prometheus Operator's custom resources have no bundled schema, so their shape is
checked here. The rest are the rules a reviewer would otherwise check by eye: probes,
resources and a locked-down security context on every pod, credentials only from the
Secret, commands that exist, selectors that select something, and network policies that
keep ask private, the public share service confined to PostgreSQL and the owner website
(console) to PostgreSQL, the api and its identity provider.
"""

from __future__ import annotations

import tomllib
from functools import cache
from urllib.parse import urlsplit

import kubernetes_validate
import pytest

from grove_memory.files.sandbox import MIN_MEMORY_BYTES, memory_cap
from tests.support.manifests import (
    COMPONENT,
    KUSTOMIZATIONS,
    ROOT,
    Manifest,
    by_name,
    container_ports,
    containers,
    env_value,
    ingress_rules_for,
    of_kind,
    pod_templates,
    render,
    selects,
    template_labels,
    workloads,
)

KUBERNETES_VERSION = "1.37"
CUSTOM_KINDS = {"ServiceMonitor", "PrometheusRule"}
MONITORING_API = "monitoring.coreos.com/v1"

SERVICES = ("api", "mcp", "share", "console", "ask", "worker")
COMMANDS = {
    "api": "grove-api",
    "mcp": "grove-mcp",
    "share": "grove-share",
    "console": "grove-console",
    "ask": "grove-ask",
    "worker": "grove-worker",
}
AUTOSCALED = ("api", "mcp", "share", "console", "worker")
PUBLIC_HTTP = ("api", "mcp", "share", "console")
ASK_CALLERS = frozenset({"api", "mcp", "worker"})
DNS_AND_POSTGRES = frozenset({("UDP", 53), ("TCP", 53), ("TCP", 5432)})
# grove-share faces the internet: DNS and PostgreSQL are all it may reach.
SHARE_EGRESS = DNS_AND_POSTGRES
HTTPS = ("TCP", 443)  # the identity provider
# The services that connect as a role of their own, which the migration Job grants.
OWN_ROLES = {
    "share": ("GROVE_SHARE_ROLE", "grove_share"),
    "console": ("GROVE_CONSOLE_ROLE", "grove_console"),
}
# Read by api, mcp and console alike (grove-config): they must agree.
IDENTITY_SETTINGS = (
    "GROVE_OIDC_ISSUER",
    "GROVE_OIDC_AUDIENCE",
    "GROVE_WEBSITE_ORIGIN",
    "GROVE_CONSOLE_CLIENT_ID",
    "GROVE_OIDC_AUTHORIZED_PARTY",
)
NAME = "app.kubernetes.io/name"

SECRET_NAME = "grove-secrets"
SECRET_KEYS = frozenset(
    {
        "database-url",
        "migration-database-url",
        "share-database-url",
        "console-database-url",
        "secret-key",
        "share-token-secret",
        "console-secret-key",
        "console-client-secret",
        "citus-postgres-password",  # the Citus nodes' superuser (components/citus)
    }
)
SENSITIVE_WORDS = ("SECRET", "PASSWORD", "DATABASE_URL", "TOKEN", "API_KEY")
RUN_AS_USER = 10001
# In a container a service must listen beyond loopback to be reachable.
ALL_INTERFACES = "0.0.0.0"  # noqa: S104
TMP = "/tmp"  # noqa: S108  (the writable emptyDir under a read-only root)


@cache
def console_scripts() -> frozenset[str]:
    """The console scripts the package installs ([project.scripts] of pyproject.toml)."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return frozenset(tomllib.load(handle)["project"]["scripts"])


@pytest.fixture(params=sorted(KUSTOMIZATIONS))
def rendered(request: pytest.FixtureRequest) -> tuple[Manifest, ...]:
    return render(request.param)


# --- helpers --------------------------------------------------------------------------


def is_grove_image(image: str) -> bool:
    """Whether a container runs one of Grove's own images (not the Citus nodes')."""
    return image.rsplit("/", 1)[-1].split(":")[0] in ("grove", "grove-ask")


def deployment_container(objects: tuple[Manifest, ...], service: str) -> Manifest:
    deployment = by_name(objects, "Deployment")[service]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    found: Manifest = container
    return found


def is_sensitive(name: str) -> bool:
    return any(word in name.upper() for word in SENSITIVE_WORDS)


# --- rendering and schemas ------------------------------------------------------------


def test_each_kustomization_renders_every_part(rendered: tuple[Manifest, ...]) -> None:
    kinds = [obj["kind"] for obj in rendered]
    assert set(by_name(rendered, "Deployment")) == set(SERVICES)
    assert kinds.count("ServiceMonitor") == len(SERVICES)
    for kind in (
        "ConfigMap",
        "Job",
        "CronJob",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "Service",
        "PrometheusRule",
        "ServiceAccount",
    ):
        assert kind in kinds, f"no {kind} rendered"
    assert "Secret" not in kinds, "credentials must not live in the manifests"


def test_every_object_validates_against_the_kubernetes_schemas(
    rendered: tuple[Manifest, ...],
) -> None:
    problems = []
    for obj in rendered:
        label = f"{obj['kind']}/{obj['metadata']['name']}"
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            if obj["kind"] not in CUSTOM_KINDS:
                problems.append(f"{label}: no schema for {obj['apiVersion']}")
        except kubernetes_validate.ValidationError as ex:
            problems.append(f"{label}: {ex.message}")
    assert not problems, "\n".join(problems)


def test_service_monitors_scrape_the_metrics_port_of_existing_services(
    rendered: tuple[Manifest, ...],
) -> None:
    services = of_kind(rendered, "Service")
    monitored = set()
    for monitor in of_kind(rendered, "ServiceMonitor"):
        name = monitor["metadata"]["name"]
        assert monitor["apiVersion"] == MONITORING_API, name
        targets = [
            svc
            for svc in services
            if selects(monitor["spec"]["selector"], svc["metadata"].get("labels", {}))
        ]
        assert len(targets) == 1, f"ServiceMonitor {name} selects {len(targets)} Services"
        (target,) = targets
        endpoints = monitor["spec"]["endpoints"]
        assert endpoints and all(e.get("port") == "metrics" for e in endpoints), name
        assert "metrics" in {p.get("name") for p in target["spec"]["ports"]}, name
        monitored.add(target["metadata"]["name"])
    # The Operator's `service` label is the Service name; rules and dashboards use these.
    assert monitored == set(SERVICES)


def test_prometheus_rule_has_the_operator_shape(rendered: tuple[Manifest, ...]) -> None:
    (rule,) = of_kind(rendered, "PrometheusRule")
    assert rule["apiVersion"] == MONITORING_API
    assert rule["metadata"]["name"] == "grove"
    groups = rule["spec"]["groups"]
    assert isinstance(groups, list)
    for group in groups:
        assert isinstance(group.get("name"), str) and group["name"], group
        assert isinstance(group.get("rules"), list) and group["rules"], group["name"]
        for entry in group["rules"]:
            assert isinstance(entry.get("expr"), str) and entry["expr"].strip(), entry
            if "record" in entry:
                continue
            assert entry.get("alert"), entry
            assert entry.get("labels", {}).get("severity"), entry["alert"]
            assert isinstance(entry.get("annotations"), dict), entry["alert"]
            assert entry["annotations"], entry["alert"]


# --- pods -----------------------------------------------------------------------------


def test_every_deployment_has_probes_resources_and_a_metrics_port(
    rendered: tuple[Manifest, ...],
) -> None:
    for name, deployment in by_name(rendered, "Deployment").items():
        spec = deployment["spec"]["template"]["spec"]
        assert isinstance(spec.get("terminationGracePeriodSeconds"), int), name
        for container in spec["containers"]:
            where = f"{name}/{container['name']}"
            assert container.get("readinessProbe"), f"{where}: no readiness probe"
            assert container.get("livenessProbe"), f"{where}: no liveness probe"
            resources = container.get("resources", {})
            for bound in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    assert resources.get(bound, {}).get(resource), f"{where}: {bound}.{resource}"
            assert "metrics" in container_ports(container), f"{where}: no port named metrics"


#: Kubernetes memory quantities the manifests use, in bytes.
MEMORY_UNITS = {"Mi": 1 << 20, "Gi": 1 << 30}


def test_the_workers_file_reading_fits_its_memory_limit(rendered: tuple[Manifest, ...]) -> None:
    """A worker reads files in a child process capped by what its container's memory
    limit leaves beside the worker (``sandbox.memory_cap``, which stops a worker whose
    configured cap does not fit): every worker's limit must leave that room."""
    config = {
        key: value
        for config_map in of_kind(rendered, "ConfigMap")
        for key, value in (config_map.get("data") or {}).items()
    }
    workers = [
        container
        for _, template in pod_templates(rendered)
        for container in containers(template)
        if container.get("command") == ["grove-worker"]
    ]
    assert workers
    for container in workers:
        limit = container["resources"]["limits"]["memory"]
        number, unit = limit[:-2], limit[-2:]
        env = {**config, **{e["name"]: e.get("value") for e in container.get("env", [])}}
        configured = env.get("GROVE_EXTRACT_MEMORY_MB")
        cap = memory_cap(
            None if configured is None else int(configured) << 20,
            int(number) * MEMORY_UNITS[unit],
        )
        assert cap >= MIN_MEMORY_BYTES, limit


def test_probes_use_ports_the_container_declares(rendered: tuple[Manifest, ...]) -> None:
    for name, template in pod_templates(rendered):
        for container in containers(template):
            ports = container_ports(container)
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = container.get(kind)
                if not probe:
                    continue
                handler = probe.get("httpGet") or probe.get("grpc") or probe.get("tcpSocket")
                assert handler, f"{name}: {kind} has no httpGet, grpc or tcpSocket"
                port = handler["port"]
                assert port in ports or port in ports.values(), f"{name}: {kind} port {port}"


def test_every_pod_runs_locked_down(rendered: tuple[Manifest, ...]) -> None:
    for name, template in pod_templates(rendered):
        pod = template["spec"].get("securityContext", {})
        assert template["spec"].get("automountServiceAccountToken") is False, name
        volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
        for container in containers(template):
            where = f"{name}/{container['name']}"
            own = container.get("securityContext", {})
            merged = {**pod, **own}
            assert merged.get("runAsNonRoot") is True, f"{where}: runAsNonRoot"
            assert merged.get("runAsUser") == RUN_AS_USER, f"{where}: runAsUser"
            assert own.get("readOnlyRootFilesystem") is True, f"{where}: read-only root"
            assert own.get("allowPrivilegeEscalation") is False, f"{where}: escalation"
            assert own.get("privileged") is not True, where
            assert "ALL" in own.get("capabilities", {}).get("drop", []), f"{where}: caps"
            assert not own.get("capabilities", {}).get("add"), f"{where}: added caps"
            seccomp = merged.get("seccompProfile", {}).get("type")
            assert seccomp == "RuntimeDefault", f"{where}: seccomp {seccomp}"
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            assert TMP in mounts, f"{where}: /tmp must be writable (read-only root)"
            assert "emptyDir" in volumes[mounts[TMP]], f"{where}: /tmp is not an emptyDir"


def test_credentials_come_only_from_the_secret(rendered: tuple[Manifest, ...]) -> None:
    for config in of_kind(rendered, "ConfigMap"):
        leaked = [key for key in config.get("data", {}) if is_sensitive(key)]
        assert not leaked, f"ConfigMap {config['metadata']['name']} holds {leaked}"
    for name, template in pod_templates(rendered):
        for container in containers(template):
            where = f"{name}/{container['name']}"
            for source in container.get("envFrom", []):
                assert "secretRef" not in source, f"{where}: use secretKeyRef per variable"
            for variable in container.get("env", []):
                reference = variable.get("valueFrom", {}).get("secretKeyRef")
                if is_sensitive(variable["name"]):
                    assert "value" not in variable, f"{where}: literal {variable['name']}"
                    assert reference, f"{where}: {variable['name']} must use secretKeyRef"
                if reference:
                    assert reference["name"] == SECRET_NAME, where
                    assert reference["key"] in SECRET_KEYS, f"{where}: key {reference['key']}"


def secret_keys_of(container: Manifest) -> dict[str, str]:
    return {
        v["name"]: v["valueFrom"]["secretKeyRef"]["key"]
        for v in container.get("env", [])
        if "secretKeyRef" in v.get("valueFrom", {})
    }


def test_each_service_gets_exactly_the_credentials_it_needs(
    rendered: tuple[Manifest, ...],
) -> None:
    expected = {
        "api": {"GROVE_DATABASE_URL": "database-url", "GROVE_SECRET_KEY": "secret-key"},
        "mcp": {"GROVE_DATABASE_URL": "database-url", "GROVE_SECRET_KEY": "secret-key"},
        "worker": {"GROVE_DATABASE_URL": "database-url"},
        # Its own role, never the runtime role's URL; only the key its links are hashed
        # with, never the server secret itself.
        "share": {
            "GROVE_SHARE_DATABASE_URL": "share-database-url",
            "GROVE_SHARE_TOKEN_SECRET": "share-token-secret",
        },
        # Its own role too; its own secret seals the sessions' tokens (never the api's
        # secret-key); the website's client secret at the identity provider.
        "console": {
            "GROVE_CONSOLE_DATABASE_URL": "console-database-url",
            "GROVE_CONSOLE_SECRET_KEY": "console-secret-key",
            "GROVE_CONSOLE_CLIENT_SECRET": "console-client-secret",
        },
        "ask": {},  # no database access at all
    }
    for service, keys in expected.items():
        assert secret_keys_of(deployment_container(rendered, service)) == keys, service
    job = by_name(rendered, "Job")["grove-migrate"]
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert secret_keys_of(migrate) == {
        "GROVE_MIGRATION_DATABASE_URL": "migration-database-url",
        "GROVE_DATABASE_URL": "database-url",
    }


def test_the_nightly_indexes_job_runs_alone_as_the_schema_owner(
    rendered: tuple[Manifest, ...],
) -> None:
    (cron,) = of_kind(rendered, "CronJob")
    assert cron["metadata"]["name"] == "grove-indexes"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"  # two builds would race
    (indexes,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert indexes["command"] == ["grove", "indexes"]
    # CREATE INDEX needs the tables' owner; nothing else.
    assert secret_keys_of(indexes) == {"GROVE_MIGRATION_DATABASE_URL": "migration-database-url"}


@pytest.mark.parametrize("service", sorted(OWN_ROLES))
def test_the_migration_grants_each_own_role_and_it_never_sees_the_runtime_role(
    rendered: tuple[Manifest, ...], service: str
) -> None:
    setting, role = OWN_ROLES[service]
    job = by_name(rendered, "Job")["grove-migrate"]
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert env_value(migrate, setting) == role
    container = deployment_container(rendered, service)
    names = {variable["name"] for variable in container.get("env", [])}
    assert "GROVE_DATABASE_URL" not in names
    assert "database-url" not in secret_keys_of(container).values()
    for source in container.get("envFrom", []):
        config = by_name(rendered, "ConfigMap")[source["configMapRef"]["name"]]
        assert "GROVE_DATABASE_URL" not in config.get("data", {})


def test_every_command_is_an_installed_console_script(rendered: tuple[Manifest, ...]) -> None:
    scripts = console_scripts()
    for name, template in pod_templates(rendered):
        for container in containers(template):
            if not is_grove_image(container["image"]):
                continue  # the Citus nodes' image: psql and the shell
            command = container.get("command")
            assert command, f"{name}: set the command; the image default is only grove-api"
            assert command[0] in scripts, f"{name}: {command[0]} is not in [project.scripts]"
    for service, script in COMMANDS.items():
        assert deployment_container(rendered, service)["command"] == [script]
    job = by_name(rendered, "Job")["grove-migrate"]
    migrate = job["spec"]["template"]["spec"]["containers"][0]["command"]
    citus = "grove-citus-nodes" in by_name(rendered, "Job")
    assert migrate == ["grove", "migrate", *(["--citus"] if citus else [])]


def test_port_settings_match_the_declared_ports(rendered: tuple[Manifest, ...]) -> None:
    for service in SERVICES:
        container = deployment_container(rendered, service)
        ports = container_ports(container)
        prefix = f"GROVE_{service.upper()}"
        assert env_value(container, f"{prefix}_METRICS_PORT") == str(ports["metrics"]), service
        serving = {name: port for name, port in ports.items() if name != "metrics"}
        if service != "worker":
            assert env_value(container, f"{prefix}_HOST") == ALL_INTERFACES, service
            assert [env_value(container, f"{prefix}_PORT")] == [
                str(port) for port in serving.values()
            ], service


def test_config_maps_exist_and_point_callers_at_the_ask_service(
    rendered: tuple[Manifest, ...],
) -> None:
    configs = by_name(rendered, "ConfigMap")
    for name, template in pod_templates(rendered):
        for container in containers(template):
            for source in container.get("envFrom", []):
                ref = source["configMapRef"]["name"]
                assert ref in configs, f"{name}: no ConfigMap {ref}"
    (config,) = [c for n, c in configs.items() if n.startswith("grove-config")]
    data = config["data"]
    assert data["GROVE_METRICS_HOST"] == ALL_INTERFACES
    assert data["OTEL_TRACES_EXPORTER"] in {"none", "otlp"}
    host, _, port = data["GROVE_ASK_ADDRESS"].partition(":")
    ask = by_name(rendered, "Service")[host]
    grpc = {p["name"]: p["port"] for p in ask["spec"]["ports"]}["grpc"]
    assert int(port) == grpc
    # api builds share links from it: <base>/public/shares/<token>.
    share_url = data["GROVE_SHARE_PUBLIC_URL"]
    assert share_url.startswith(("https://", "http://")), share_url
    assert not share_url.rstrip("/").endswith("/public/shares"), share_url
    for service in ("api", "share"):
        sources = deployment_container(rendered, service).get("envFrom", [])
        assert any(s["configMapRef"]["name"] == config["metadata"]["name"] for s in sources)


def grove_config(objects: tuple[Manifest, ...]) -> Manifest:
    (config,) = [
        c for n, c in by_name(objects, "ConfigMap").items() if n.startswith("grove-config")
    ]
    return config


def test_identity_settings_are_shared_by_api_mcp_and_console(
    rendered: tuple[Manifest, ...],
) -> None:
    config = grove_config(rendered)
    data = config["data"]
    for name in IDENTITY_SETTINGS:
        assert data.get(name), f"grove-config has no {name}"
    # One copy: a Deployment that set its own would disagree with the others one day.
    for service in ("api", "mcp", "console"):
        container = deployment_container(rendered, service)
        sources = {s["configMapRef"]["name"] for s in container.get("envFrom", [])}
        assert config["metadata"]["name"] in sources, service
        own = {variable["name"] for variable in container.get("env", [])}
        assert not own & set(IDENTITY_SETTINGS), (
            f"{service} overrides {own & set(IDENTITY_SETTINGS)}"
        )
    # The console's checks at start-up: an origin (no path), https in production.
    origin = urlsplit(data["GROVE_WEBSITE_ORIGIN"])
    assert origin.scheme in ("http", "https") and origin.netloc and not origin.path, origin
    production = data["GROVE_ENV"] == "production"
    if production:
        assert origin.scheme == "https", "the console refuses a non-https origin in production"
    assert urlsplit(data["GROVE_OIDC_ISSUER"]).scheme == "https"
    # Owner tokens must name the website's client: the api requires the console's id.
    assert data["GROVE_OIDC_AUTHORIZED_PARTY"] == data["GROVE_CONSOLE_CLIENT_ID"]
    # Owner tokens (the console's) and agent tokens (MCP) must not share an audience.
    assert data["GROVE_OIDC_AUDIENCE"] != data["GROVE_MCP_PUBLIC_URL"]
    # Development sign-in is refused in production; never shipped on.
    for name, template in pod_templates(rendered):
        for container in containers(template):
            assert env_value(container, "GROVE_DEV_AUTH") is None, name
    assert "GROVE_DEV_AUTH" not in data


def test_console_reaches_the_api_service_on_its_http_port(
    rendered: tuple[Manifest, ...],
) -> None:
    url = env_value(deployment_container(rendered, "console"), "GROVE_CONSOLE_API_URL")
    assert url, "GROVE_CONSOLE_API_URL is not set (its default is 127.0.0.1)"
    parts = urlsplit(url)
    assert parts.scheme == "http" and parts.path in ("", "/"), url
    api = by_name(rendered, "Service")[str(parts.hostname)]
    http = {p["name"]: p["port"] for p in api["spec"]["ports"]}["http"]
    assert parts.port == http, url


def test_services_select_pods_and_target_their_named_ports(
    rendered: tuple[Manifest, ...],
) -> None:
    deployments = workloads(rendered)
    for service in of_kind(rendered, "Service"):
        name = service["metadata"]["name"]
        matches = [
            d
            for d in deployments.values()
            if selects(
                {"matchLabels": service["spec"]["selector"]},
                d["spec"]["template"]["metadata"]["labels"],
            )
        ]
        assert len(matches) == 1, f"Service {name} selects {len(matches)} workloads"
        (container,) = matches[0]["spec"]["template"]["spec"]["containers"]
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in container_ports(container), f"{name}: {port}"


# --- scaling and disruption -----------------------------------------------------------


def test_autoscalers_target_existing_deployments(rendered: tuple[Manifest, ...]) -> None:
    deployments = by_name(rendered, "Deployment")
    targets = set()
    for hpa in of_kind(rendered, "HorizontalPodAutoscaler"):
        assert hpa["apiVersion"] == "autoscaling/v2"
        target = hpa["spec"]["scaleTargetRef"]
        assert target["kind"] == "Deployment" and target["name"] in deployments, target
        assert 1 <= hpa["spec"].get("minReplicas", 1) <= hpa["spec"]["maxReplicas"]
        deployment = deployments[target["name"]]
        # kubectl apply would reset an autoscaled replica count on every apply.
        assert "replicas" not in deployment["spec"], f"{target['name']}: HPA owns replicas"
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["resources"]["requests"]["cpu"]  # utilisation needs a request
        targets.add(target["name"])
    assert targets == set(AUTOSCALED)


def test_each_disruption_budget_selects_one_workload(rendered: tuple[Manifest, ...]) -> None:
    deployments = workloads(rendered)
    covered = set()
    for pdb in of_kind(rendered, "PodDisruptionBudget"):
        matches = [
            name
            for name, d in deployments.items()
            if selects(pdb["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])
        ]
        assert len(matches) == 1, f"PDB {pdb['metadata']['name']} selects {matches}"
        covered.update(matches)
    assert covered == set(deployments)


# --- network policies -----------------------------------------------------------------


def components_matched(objects: tuple[Manifest, ...], selector: Manifest) -> set[str]:
    return {
        labels.get(COMPONENT, name)
        for name, labels in template_labels(objects).items()
        if selects(selector, labels)
    }


def test_default_deny_isolates_every_grove_pod(rendered: tuple[Manifest, ...]) -> None:
    deny = [
        p
        for p in of_kind(rendered, "NetworkPolicy")
        if set(p["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    ]
    assert deny, "no default-deny NetworkPolicy"
    for name, labels in template_labels(rendered).items():
        assert any(selects(p["spec"]["podSelector"], labels) for p in deny), name


def test_ask_admits_ingress_only_from_api_mcp_and_worker(rendered: tuple[Manifest, ...]) -> None:
    ask = deployment_container(rendered, "ask")
    ports = container_ports(ask)
    metrics = {"metrics", ports["metrics"]}
    labels = by_name(rendered, "Deployment")["ask"]["spec"]["template"]["metadata"]["labels"]
    rules = ingress_rules_for(rendered, labels)
    admitted: set[str] = set()
    for rule in rules:
        peers = rule.get("from")
        assert peers, f"ask admits ingress from anywhere: {rule}"
        rule_ports = {p.get("port") for p in rule.get("ports", [])}
        if rule_ports and rule_ports <= metrics:
            # Scraping only: Prometheus from another namespace.
            assert all("namespaceSelector" in peer for peer in peers), rule
            continue
        for peer in peers:
            assert set(peer) == {"podSelector"}, f"ask admits a non-Grove peer: {peer}"
            matched = components_matched(rendered, peer["podSelector"])
            assert matched and matched <= ASK_CALLERS, f"ask admits {matched}"
            admitted |= matched
        assert rule_ports and rule_ports <= {"grpc", ports["grpc"]}, rule
    assert admitted == ASK_CALLERS


@pytest.mark.parametrize("service", PUBLIC_HTTP)
def test_public_services_accept_ingress_on_their_http_port_only(
    rendered: tuple[Manifest, ...], service: str
) -> None:
    deployment = by_name(rendered, "Deployment")[service]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    open_rules = [r for r in ingress_rules_for(rendered, labels) if not r.get("from")]
    assert open_rules, f"{service} accepts no ingress from outside"
    for rule in open_rules:
        assert [p.get("port") for p in rule.get("ports", [])] == ["http"], rule


def test_every_pod_may_reach_dns_and_postgres(rendered: tuple[Manifest, ...]) -> None:
    policies = [
        p
        for p in of_kind(rendered, "NetworkPolicy")
        if "Egress" in p["spec"].get("policyTypes", [])
    ]
    for name, labels in template_labels(rendered).items():
        allowed = {
            (port.get("protocol", "TCP"), port.get("port"))
            for policy in policies
            if selects(policy["spec"]["podSelector"], labels)
            for rule in policy["spec"].get("egress", [])
            for port in rule.get("ports", [])
        }
        for needed in (("UDP", 53), ("TCP", 53), ("TCP", 5432)):
            assert needed in allowed, f"{name} cannot reach {needed}"


def egress_rules_for(objects: tuple[Manifest, ...], service: str) -> list[Manifest]:
    """Every egress rule of the policies that select ``service``'s pods; none may open
    every port."""
    labels = by_name(objects, "Deployment")[service]["spec"]["template"]["metadata"]["labels"]
    rules: list[Manifest] = []
    for policy in of_kind(objects, "NetworkPolicy"):
        spec = policy["spec"]
        if "Egress" not in spec.get("policyTypes", []) or not selects(spec["podSelector"], labels):
            continue
        for rule in spec.get("egress", []):
            assert rule.get("ports"), (
                f"{policy['metadata']['name']}: {service} may reach every port"
            )
            rules.append(rule)
    return rules


def rule_ports(rule: Manifest) -> set[tuple[str, object]]:
    return {(port.get("protocol", "TCP"), port.get("port")) for port in rule["ports"]}


def test_share_may_reach_only_dns_and_postgres(rendered: tuple[Manifest, ...]) -> None:
    allowed = set().union(*(rule_ports(r) for r in egress_rules_for(rendered, "share")))
    assert allowed == SHARE_EGRESS


def test_console_may_reach_only_dns_postgres_the_api_and_https(
    rendered: tuple[Manifest, ...],
) -> None:
    api_http = container_ports(deployment_container(rendered, "api"))["http"]
    rules = egress_rules_for(rendered, "console")
    allowed = set().union(*(rule_ports(rule) for rule in rules))
    # No ask, no OTLP, no other port.
    assert allowed == DNS_AND_POSTGRES | {("TCP", api_http), HTTPS}
    for rule in rules:
        if ("TCP", api_http) not in rule_ports(rule):
            continue
        # The api's port is opened towards api pods only, never anywhere.
        peers = rule.get("to")
        assert peers, f"console may reach port {api_http} anywhere: {rule}"
        assert rule_ports(rule) == {("TCP", api_http)}, rule
        for peer in peers:
            assert set(peer) == {"podSelector"}, peer
            assert components_matched(rendered, peer["podSelector"]) == {"api"}, peer


def test_api_admits_the_console_on_its_http_port(rendered: tuple[Manifest, ...]) -> None:
    api_http = container_ports(deployment_container(rendered, "api"))["http"]
    labels = by_name(rendered, "Deployment")["api"]["spec"]["template"]["metadata"]["labels"]
    # Named for console pods, not only through the open rule: narrowing that one to the
    # Ingress controller must not cut the website off.
    named = [
        rule
        for rule in ingress_rules_for(rendered, labels)
        if any(
            "console" in components_matched(rendered, peer.get("podSelector", {}))
            for peer in rule.get("from", [])
            if set(peer) == {"podSelector"}
        )
    ]
    assert named, "no rule of the api's admits console pods"
    for rule in named:
        assert {p.get("port") for p in rule.get("ports", [])} <= {"http", api_http}, rule


def test_share_trusts_the_forwarded_hops_of_one_ingress(rendered: tuple[Manifest, ...]) -> None:
    hops = env_value(deployment_container(rendered, "share"), "GROVE_SHARE_FORWARDED_HOPS")
    # The manifests expose share through an Ingress: one proxy appends X-Forwarded-For.
    assert hops == "1"


def test_metrics_ports_admit_prometheus(rendered: tuple[Manifest, ...]) -> None:
    for service in SERVICES:
        labels = by_name(rendered, "Deployment")[service]["spec"]["template"]["metadata"]["labels"]
        scrape = [
            rule
            for rule in ingress_rules_for(rendered, labels)
            if "metrics" in {p.get("port") for p in rule.get("ports", [])}
        ]
        assert scrape, f"{service}: Prometheus cannot reach its metrics port"


# --- overlays -------------------------------------------------------------------------


def test_dev_overlay_runs_one_small_replica_each() -> None:
    objects = render("dev")
    for hpa in of_kind(objects, "HorizontalPodAutoscaler"):
        assert hpa["spec"]["minReplicas"] == 1, hpa["metadata"]["name"]
    assert by_name(objects, "Deployment")["ask"]["spec"]["replicas"] == 1
    (config,) = of_kind(objects, "ConfigMap")
    assert config["data"]["GROVE_ENV"] == "development"
    base_api = deployment_container(render("base"), "api")["resources"]["requests"]
    dev_api = deployment_container(objects, "api")["resources"]["requests"]
    assert dev_api != base_api


def test_prod_overlay_pins_images_and_keeps_spare_replicas() -> None:
    objects = render("prod")
    for name, template in pod_templates(objects):
        for container in containers(template):
            image = container["image"]
            assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), name
    for hpa in of_kind(objects, "HorizontalPodAutoscaler"):
        assert hpa["spec"]["minReplicas"] >= 2, hpa["metadata"]["name"]
    assert by_name(objects, "Deployment")["ask"]["spec"]["replicas"] >= 2
    (config,) = of_kind(objects, "ConfigMap")
    assert config["data"]["GROVE_ENV"] == "production"
    assert {obj["metadata"].get("namespace") for obj in objects if obj["kind"] != "Namespace"} == {
        "grove"
    }
