"""What the deploy files ask of the services: metric names in dashboards and alerts.

The Grafana dashboards (``deploy/grafana/dashboards/*.json``) and the Prometheus alerts
(``deploy/compose/prometheus/rules.yml``) name metrics in PromQL. A test compares those
names with the metrics the services export, so a rename on either side is caught here and
not by an empty panel or an alert that can never fire.

PromQL is read loosely, not parsed: string literals, label matchers (``{...}``), grouping
clauses (``by (...)``, ``on (...)``, ...), range selectors and Grafana variables are cut
out, and what remains is searched for identifiers that start with ``grove_`` or are
``up``. That is enough for the expressions we write and errs towards reporting a name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "deploy" / "grafana" / "dashboards"
RULES = ROOT / "deploy" / "compose" / "prometheus" / "rules.yml"
PROMETHEUS_RULE = ROOT / "deploy" / "k8s" / "base" / "prometheusrule.yaml"
OPERATIONS = ROOT / "docs" / "operations.md"

_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_GROUPING = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE
)
_RANGE = re.compile(r"\[[^\]]*\]")
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+")
_IDENTIFIER = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()")


def dashboards() -> dict[str, dict[str, Any]]:
    """Every dashboard JSON model under deploy/grafana/dashboards, by file name."""
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(DASHBOARDS.glob("*.json"))
    }


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel of a dashboard, including those nested in (collapsed) rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def dashboard_exprs() -> list[str]:
    """PromQL of every panel target and of every query variable, in all dashboards."""
    exprs: list[str] = []
    for dashboard in dashboards().values():
        for panel in panels(dashboard):
            exprs.extend(t["expr"] for t in panel.get("targets", []) if t.get("expr"))
        for variable in dashboard.get("templating", {}).get("list", []):
            if variable.get("type") != "query":
                continue
            query = variable.get("query")
            text = query.get("query") if isinstance(query, dict) else query
            if text:
                exprs.append(str(text))
    return exprs


def alert_groups() -> list[dict[str, Any]]:
    """The rule groups of deploy/compose/prometheus/rules.yml."""
    document = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    groups: list[dict[str, Any]] = document["groups"]
    return groups


def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of rules.yml, in file order (one alert may have several)."""
    return [rule for group in alert_groups() for rule in group["rules"] if "alert" in rule]


def metric_names(expr: str) -> set[str]:
    """Metric names (``grove_*`` and ``up``) that one PromQL expression selects."""
    text = _STRING.sub(" ", expr)
    text = _VARIABLE.sub(" ", text)
    text = _RANGE.sub(" ", text)
    previous = None
    while previous != text:  # matchers and groupings never nest, but be safe
        previous = text
        text = _MATCHERS.sub(" ", _GROUPING.sub(" ", text))
    return {name for name in _IDENTIFIER.findall(text) if name.startswith("grove_") or name == "up"}


def deploy_metric_names() -> set[str]:
    """Every metric name the dashboards' targets and the alert expressions reference."""
    exprs = dashboard_exprs() + [str(rule["expr"]) for rule in alert_rules()]
    return set().union(*(metric_names(expr) for expr in exprs))
