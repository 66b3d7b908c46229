"""docker compose (deploy/compose) wires every part together, checked without Docker.

No Docker engine runs in the test environment, so this reads the files: the services and
their commands, build targets, start-up order, host ports, the database roles, and the
Prometheus and Grafana configuration that must agree with the services' ports.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_DIR = ROOT / "deploy" / "compose"
COMPOSE_FILE = COMPOSE_DIR / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"

COMMANDS = {
    "migrate": ["grove", "migrate"],
    "api": ["grove-api"],
    "mcp": ["grove-mcp"],
    "ask": ["grove-ask"],
    "worker": ["grove-worker"],
}
TARGETS = {
    "migrate": "runtime",
    "api": "runtime",
    "mcp": "runtime",
    "worker": "runtime",
    "ask": "ask",
}
SCRAPED = ("api", "mcp", "ask", "worker")
DATABASE_CLIENTS = ("migrate", "api", "mcp", "worker")
RUNTIME_ROLE = "grove_app"
RULES_IN_CONTAINER = "/etc/prometheus/rules.yml"
DASHBOARDS_IN_CONTAINER = "/var/lib/grafana/dashboards"
# In a container a service must listen beyond loopback to be reachable.
ALL_INTERFACES = "0.0.0.0"  # noqa: S104

Service = dict[str, Any]


@cache
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    return document


def services() -> dict[str, Service]:
    found: dict[str, Service] = compose()["services"]
    return found


@cache
def console_scripts() -> frozenset[str]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return frozenset(tomllib.load(handle)["project"]["scripts"])


def environment(service: Service) -> dict[str, str]:
    """A service's environment, whether written as a mapping or as KEY=VALUE lines."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(line.split("=", 1) for line in env)
    return {key: str(value) for key, value in env.items()}


def command(service: Service) -> list[str]:
    value = service.get("command")
    assert value, "every Grove service names its command"
    return value.split() if isinstance(value, str) else list(value)


def bind_mounts(service: Service) -> dict[str, Path]:
    """Container path -> host path of every bind mount (short or long syntax)."""
    mounts = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts[volume["target"]] = (COMPOSE_DIR / volume["source"]).resolve()
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            mounts[target] = (COMPOSE_DIR / source).resolve()
    return mounts


def published_ports(service: Service) -> list[tuple[int, int]]:
    """``(host port, container port)`` of every published port."""
    found = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            if port.get("published"):
                found.append((int(port["published"]), int(port["target"])))
            continue
        parts = str(port).split("/")[0].split(":")
        if len(parts) >= 2:  # "container" alone publishes on a random host port
            found.append((int(parts[-2]), int(parts[-1])))
    return found


def dockerfile_stages() -> set[str]:
    pattern = re.compile(r"^FROM\s+(?:--\S+\s+)*\S+\s+AS\s+(\S+)", re.IGNORECASE | re.MULTILINE)
    return set(pattern.findall(DOCKERFILE.read_text(encoding="utf-8")))


def prometheus_config() -> dict[str, Any]:
    mounts = bind_mounts(services()["prometheus"])
    path = mounts["/etc/prometheus/prometheus.yml"]
    config: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return config


# --- services -------------------------------------------------------------------------


def test_compose_defines_the_whole_stack() -> None:
    assert set(COMMANDS) | {"postgres", "prometheus", "grafana"} <= set(services())
    assert services()["postgres"]["image"].startswith("pgvector/pgvector:")
    assert services()["prometheus"]["image"].startswith("prom/prometheus")
    assert services()["grafana"]["image"].startswith("grafana/grafana")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_grove_services_run_their_console_script(name: str) -> None:
    words = command(services()[name])
    assert words[0] in console_scripts(), f"{name}: {words[0]} is not in [project.scripts]"
    assert words == COMMANDS[name]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_grove_services_build_from_the_root_dockerfile(name: str) -> None:
    build = services()[name]["build"]
    assert (COMPOSE_DIR / build["context"]).resolve() == ROOT
    assert (ROOT / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE
    assert build["target"] == TARGETS[name]
    assert build["target"] in dockerfile_stages()


def test_published_host_ports_do_not_collide() -> None:
    seen: dict[int, str] = {}
    for name, service in services().items():
        for host, _ in published_ports(service):
            assert host not in seen, f"host port {host}: {seen.get(host)} and {name}"
            seen[host] = name
    assert seen, "nothing is published"


@pytest.mark.parametrize(
    ("name", "variable"), [("api", "GROVE_API_PORT"), ("mcp", "GROVE_MCP_PORT")]
)
def test_http_services_publish_the_port_they_listen_on(name: str, variable: str) -> None:
    service = services()[name]
    env = environment(service)
    prefix = variable.removesuffix("_PORT")
    assert env[f"{prefix}_HOST"] == ALL_INTERFACES
    assert int(env[variable]) in {target for _, target in published_ports(service)}


def test_start_up_order_waits_for_the_database_and_the_migration() -> None:
    every = services()
    assert every["postgres"].get("healthcheck"), "postgres needs a healthcheck to wait on"
    assert every["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert every["migrate"].get("restart") == "no"
    for name in ("api", "mcp", "worker"):
        condition = every[name]["depends_on"]["migrate"]["condition"]
        assert condition == "service_completed_successfully", name
    assert every["ask"].get("healthcheck"), "the worker waits for ask to be healthy"
    assert every["worker"]["depends_on"]["ask"]["condition"] == "service_healthy"


def test_services_use_the_runtime_role_and_migrate_uses_the_owner() -> None:
    for name in DATABASE_CLIENTS:
        env = environment(services()[name])
        assert re.match(rf"postgresql://{RUNTIME_ROLE}:", env["GROVE_DATABASE_URL"]), name
        if name != "worker":  # the worker signs nothing
            assert len(env["GROVE_SECRET_KEY"]) >= 32, name
    migration = environment(services()["migrate"])["GROVE_MIGRATION_DATABASE_URL"]
    owner = re.match(r"postgresql://([^:@]+)", migration)
    assert owner and owner.group(1) != RUNTIME_ROLE
    assert "GROVE_DATABASE_URL" not in environment(services()["ask"])


def test_postgres_init_script_creates_a_runtime_role_that_cannot_bypass_rls() -> None:
    mounts = bind_mounts(services()["postgres"])
    scripts = [
        path for target, path in mounts.items() if target.startswith("/docker-entrypoint-initdb.d/")
    ]
    assert scripts, "no init script mounted into /docker-entrypoint-initdb.d"
    sql = " ".join(path.read_text(encoding="utf-8") for path in scripts)
    statement = re.search(rf"CREATE ROLE {RUNTIME_ROLE}\b([^;]*);", sql, re.IGNORECASE)
    assert statement, f"the init script does not create {RUNTIME_ROLE}"
    options = statement.group(1).upper().split()
    assert {"LOGIN", "NOSUPERUSER", "NOBYPASSRLS"} <= set(options)
    assert re.search(r"CREATE EXTENSION (IF NOT EXISTS )?vector", sql, re.IGNORECASE)


def test_every_bind_mounted_file_exists() -> None:
    for name, service in services().items():
        for target, source in bind_mounts(service).items():
            assert source.exists(), f"{name}: {source} (mounted at {target}) is missing"


# --- monitoring -----------------------------------------------------------------------


def test_prometheus_scrapes_every_grove_service_metrics_port() -> None:
    config = prometheus_config()
    targets: dict[str, str] = {}
    for job in config["scrape_configs"]:
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                targets[target.split(":")[0]] = target
                if target.split(":")[0] in SCRAPED:
                    assert static.get("labels", {}).get("service") == target.split(":")[0]
    for name in SCRAPED:
        env = environment(services()[name])
        assert env.get("GROVE_METRICS_HOST") == ALL_INTERFACES, f"{name}: metrics bound locally"
        port = env[f"GROVE_{name.upper()}_METRICS_PORT"]
        assert targets.get(name) == f"{name}:{port}", f"{name} is not scraped on :{port}"


def test_prometheus_loads_the_mounted_alert_rules() -> None:
    assert RULES_IN_CONTAINER in prometheus_config()["rule_files"]
    mounts = bind_mounts(services()["prometheus"])
    assert mounts[RULES_IN_CONTAINER] == COMPOSE_DIR / "prometheus" / "rules.yml"


def test_grafana_provisions_prometheus_and_the_dashboards() -> None:
    mounts = bind_mounts(services()["grafana"])
    provisioning = mounts["/etc/grafana/provisioning"]
    assert mounts[DASHBOARDS_IN_CONTAINER] == (ROOT / "deploy" / "grafana" / "dashboards")
    sources = [
        source
        for path in sorted((provisioning / "datasources").glob("*.y*ml"))
        for source in yaml.safe_load(path.read_text(encoding="utf-8"))["datasources"]
    ]
    (prometheus,) = [s for s in sources if s["type"] == "prometheus"]
    assert prometheus["url"] == "http://prometheus:9090"
    providers = [
        provider
        for path in sorted((provisioning / "dashboards").glob("*.y*ml"))
        for provider in yaml.safe_load(path.read_text(encoding="utf-8"))["providers"]
    ]
    assert [p["options"]["path"] for p in providers] == [DASHBOARDS_IN_CONTAINER]
