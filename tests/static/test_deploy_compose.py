"""docker compose (deploy/compose) wires every part together, checked without Docker.

No Docker engine runs in the test environment, so this reads the files: the services and
their commands, build targets, start-up order, host ports, the database roles, and the
Prometheus and Grafana configuration that must agree with the services' ports. The owner
website (console) sits behind a compose profile; its settings are also read the way
compose interpolates them and handed to the console's own settings check.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from pydantic import ValidationError

from grove_api.settings import ApiSettings
from grove_auth.identity import check_identity
from grove_auth.keys import share_token_secret
from grove_console.settings import ConsoleSettings
from grove_contracts.errors import settings_problems
from grove_mcp.settings import McpSettings

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
    "share": ["grove-share"],
    "console": ["grove-console"],
}
TARGETS = {
    "migrate": "runtime",
    "api": "runtime",
    "mcp": "runtime",
    "worker": "runtime",
    "share": "runtime",
    "console": "runtime",
    "ask": "ask",
}
SCRAPED = ("api", "mcp", "share", "console", "ask", "worker")
DATABASE_CLIENTS = ("migrate", "api", "mcp", "worker")
RUNTIME_ROLE = "grove_app"
# grove-share's own role: no table privileges, only the share functions.
SHARE_ROLE = "grove_share"
# grove-console's own role: no table privileges, only its session functions.
CONSOLE_ROLE = "grove_console"
CONSOLE_PROFILE = "console"
# What compose substitutes: ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ...
INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)((?::?[-?+])([^}]*))?\}")
LOCKED_DOWN = {"LOGIN", "NOSUPERUSER", "NOBYPASSRLS", "NOCREATEDB", "NOCREATEROLE"}
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


def url_credentials(url: str) -> tuple[str, str]:
    """``(user, password)`` of a ``postgresql://user:password@host/db`` URL."""
    parts = urlsplit(url)
    assert parts.scheme == "postgresql" and parts.username and parts.password, url
    return parts.username, parts.password


@cache
def init_sql() -> str:
    """Every init script mounted into the postgres container, concatenated, without its
    ``--`` comments (the scripts hold no string with two hyphens in it)."""
    mounts = bind_mounts(services()["postgres"])
    scripts = [
        path for target, path in mounts.items() if target.startswith("/docker-entrypoint-initdb.d/")
    ]
    assert scripts, "no init script mounted into /docker-entrypoint-initdb.d"
    text = " ".join(path.read_text(encoding="utf-8") for path in scripts)
    return re.sub(r"--[^\n]*", " ", text)


def role_statement(role: str) -> str:
    """The options of ``CREATE ROLE <role> ...;`` in the init script."""
    statement = re.search(rf"CREATE ROLE {role}\b([^;]*);", init_sql(), re.IGNORECASE)
    assert statement, f"the init script does not create {role}"
    return statement.group(1)


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
    ("name", "variable"),
    [
        ("api", "GROVE_API_PORT"),
        ("mcp", "GROVE_MCP_PORT"),
        ("share", "GROVE_SHARE_PORT"),
        ("console", "GROVE_CONSOLE_PORT"),
    ],
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
    for name in ("api", "mcp", "worker", "share", "console"):
        condition = every[name]["depends_on"]["migrate"]["condition"]
        assert condition == "service_completed_successfully", name
    assert every["ask"].get("healthcheck"), "the worker waits for ask to be healthy"
    assert every["worker"]["depends_on"]["ask"]["condition"] == "service_healthy"
    # share reads PostgreSQL only; it must not wait for (or depend on) the model.
    assert set(every["share"]["depends_on"]) == {"migrate"}
    assert every["share"].get("healthcheck"), "share needs a healthcheck like api and mcp"
    # console calls the api, never ask.
    assert set(every["console"]["depends_on"]) == {"migrate", "api"}
    assert every["console"].get("healthcheck"), "console needs a healthcheck like api and mcp"


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


def test_console_is_behind_its_profile_and_nothing_else_is() -> None:
    every = services()
    assert every["console"].get("profiles") == [CONSOLE_PROFILE]
    # A plain `docker compose up` starts everything else, and nothing waits for console.
    for name, service in every.items():
        if name == "console":
            continue
        assert not service.get("profiles"), f"{name} is behind a profile"
        assert "console" not in (service.get("depends_on") or {}), f"{name} waits for console"


def strings(node: object) -> Iterator[str]:
    """Every string (keys and values) of a parsed YAML document; comments are not in it."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def interpolations() -> list[tuple[str, str, str]]:
    """``(variable, operator, default)`` of every ``${...}`` compose substitutes."""
    found = []
    for text in strings(compose()):
        text = text.replace("$$", "")  # `$$` is a literal dollar sign
        matches = list(INTERPOLATION.finditer(text))
        assert text.count("${") == len(matches), f"compose cannot read {text!r}"
        found += [(m.group(1), m.group(2) or "", m.group(3) or "") for m in matches]
    return found


def test_interpolated_variables_all_have_defaults() -> None:
    # `${VAR:?}` or `${VAR?}` would stop compose from reading the file at all, profile or
    # not; a bare `${VAR}` warns on every command. Each one names its default.
    found = interpolations()
    assert found, "the console reads its identity settings from the environment"
    for variable, operator, _ in found:
        assert operator.startswith((":-", "-")), f"${{{variable}{operator}}} has no default"


def interpolated(env: dict[str, str]) -> dict[str, str]:
    """A service's environment as compose resolves it with nothing set in the shell."""

    def default(match: re.Match[str]) -> str:
        return match.group(3) or ""

    return {key: INTERPOLATION.sub(default, value) for key, value in env.items()}


def console_refusal(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The line grove-console stops with on these settings (its settings check)."""
    for key in [key for key in os.environ if key.startswith("GROVE_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError) as refused:
        ConsoleSettings()  # type: ignore[call-arg]
    return settings_problems(refused.value)


def test_console_refuses_the_compose_defaults_naming_what_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = environment(services()["console"])
    assert env["GROVE_ENV"] == "production"
    identity = ("GROVE_OIDC_ISSUER", "GROVE_OIDC_AUDIENCE", "GROVE_CONSOLE_CLIENT_ID")
    for name in (*identity, "GROVE_CONSOLE_CLIENT_SECRET", "GROVE_WEBSITE_ORIGIN"):
        read = INTERPOLATION.fullmatch(env[name])
        assert read and read.group(1) == name, f"{name} is not read from the environment"
    defaults = interpolated(env)
    # The default origin is the published port's, which production refuses by name ...
    origin = urlsplit(defaults["GROVE_WEBSITE_ORIGIN"])
    console = services()["console"]
    assert (origin.port, int(env["GROVE_CONSOLE_PORT"])) in published_ports(console)
    assert "GROVE_WEBSITE_ORIGIN must be https" in console_refusal(defaults, monkeypatch)
    # ... and with an https origin, the provider settings still to set, all of them.
    https = {**defaults, "GROVE_WEBSITE_ORIGIN": "https://console.example.com"}
    refusal = console_refusal(https, monkeypatch)
    for name in (*identity, "GROVE_CONSOLE_CLIENT_SECRET"):
        assert name in refusal, refusal


@pytest.mark.parametrize("name", ["api", "mcp"])
def test_api_and_mcp_accept_their_compose_identity_settings(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Production without a provider (keys only): nothing in the identity settings may
    # stop them at start-up (the check they run before serving).
    env = interpolated(environment(services()[name]))
    assert env["GROVE_ENV"] == "production"
    for key in [key for key in os.environ if key.startswith(("GROVE_", "OIDC"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = ApiSettings() if name == "api" else McpSettings()  # type: ignore[call-arg]
    assert settings.mcp_public_url is not None
    assert check_identity(settings, settings.mcp_public_url, owners=name == "api") == []


def test_console_reaches_the_api_over_the_compose_network() -> None:
    url = urlsplit(environment(services()["console"])["GROVE_CONSOLE_API_URL"])
    assert url.scheme == "http" and url.hostname == "api", url
    assert url.port == int(environment(services()["api"])["GROVE_API_PORT"])


def test_console_uses_its_own_role_and_never_the_runtime_roles_url() -> None:
    env = environment(services()["console"])
    user, _ = url_credentials(env["GROVE_CONSOLE_DATABASE_URL"])
    assert user == CONSOLE_ROLE
    assert "GROVE_DATABASE_URL" not in env
    leaked = [key for key, value in env.items() if RUNTIME_ROLE in value]
    assert not leaked, f"console is given the runtime role in {leaked}"
    # The sessions' tokens are sealed with a key derived from a secret of its own, never
    # the server secret (which it refuses in production).
    assert "GROVE_SECRET_KEY" not in env
    own = env["GROVE_CONSOLE_SECRET_KEY"]
    assert len(own) >= 32 and own != environment(services()["api"])["GROVE_SECRET_KEY"]
    # The migration grants the session functions to that role.
    assert environment(services()["migrate"])["GROVE_CONSOLE_ROLE"] == CONSOLE_ROLE


def test_share_gets_the_key_api_hashes_links_with_and_never_the_server_secret() -> None:
    share, api = environment(services()["share"]), environment(services()["api"])
    assert "GROVE_SECRET_KEY" not in share
    assert share["GROVE_SHARE_TOKEN_SECRET"] == share_token_secret(api["GROVE_SECRET_KEY"])


def test_share_uses_its_own_role_and_never_the_runtime_roles_url() -> None:
    env = environment(services()["share"])
    user, _ = url_credentials(env["GROVE_SHARE_DATABASE_URL"])
    assert user == SHARE_ROLE
    assert "GROVE_DATABASE_URL" not in env
    leaked = [key for key, value in env.items() if RUNTIME_ROLE in value]
    assert not leaked, f"share is given the runtime role in {leaked}"
    # The migration grants the share functions to that role.
    assert environment(services()["migrate"])["GROVE_SHARE_ROLE"] == SHARE_ROLE


def test_api_links_to_the_published_share_port() -> None:
    base = urlsplit(environment(services()["api"])["GROVE_SHARE_PUBLIC_URL"])
    assert base.scheme == "http" and base.hostname in {"localhost", "127.0.0.1"}, base
    assert base.path in {"", "/"}, "share links are <base>/public/shares/<token>"
    share = services()["share"]
    assert (base.port, int(environment(share)["GROVE_SHARE_PORT"])) in published_ports(share)


def test_postgres_init_script_creates_a_runtime_role_that_cannot_bypass_rls() -> None:
    options = role_statement(RUNTIME_ROLE).upper().split()
    assert {"LOGIN", "NOSUPERUSER", "NOBYPASSRLS"} <= set(options)
    assert re.search(r"CREATE EXTENSION (IF NOT EXISTS )?vector", init_sql(), re.IGNORECASE)


@pytest.mark.parametrize("role", [SHARE_ROLE, CONSOLE_ROLE])
def test_postgres_init_script_creates_the_own_roles_with_no_rights(role: str) -> None:
    options = set(role_statement(role).upper().split())
    assert options >= LOCKED_DOWN
    assert not options & {"SUPERUSER", "BYPASSRLS", "CREATEDB", "CREATEROLE"}
    # No membership either: IN ROLE grove_app would hand it the runtime role's privileges.
    assert not options & {"IN", "ROLE", "GROUP", "ADMIN", "USER"}
    # `grove migrate` grants it its functions; nothing else may.
    assert not re.search(rf"\bGRANT\b[^;]*\bTO\s+{role}\b", init_sql(), re.IGNORECASE)
    assert not re.search(rf"\bGRANT\s+{role}\b", init_sql(), re.IGNORECASE)


@pytest.mark.parametrize(
    ("name", "variable"),
    [
        ("api", "GROVE_DATABASE_URL"),
        ("migrate", "GROVE_MIGRATION_DATABASE_URL"),
        ("share", "GROVE_SHARE_DATABASE_URL"),
        ("console", "GROVE_CONSOLE_DATABASE_URL"),
    ],
)
def test_database_urls_use_the_passwords_the_init_script_sets(name: str, variable: str) -> None:
    user, password = url_credentials(environment(services()[name])[variable])
    options = role_statement(user)
    assert re.search(rf"PASSWORD\s+'{re.escape(password)}'", options, re.IGNORECASE), user


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
