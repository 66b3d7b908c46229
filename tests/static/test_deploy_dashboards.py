"""The Grafana dashboards and Prometheus alerts under deploy/ hold together.

Fast and offline: the files parse, every panel queries something, every alert is complete
and links to a runbook that exists, the Kubernetes copy of the alerts equals the compose
one, and every metric they name is one the services export. Debian's ``promtool`` (CI
installs it; elsewhere these skip without it) also checks the rules and the dashboards'
PromQL, and runs the alerts against synthetic series.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.deploy_names import (
    OPERATIONS,
    PROMETHEUS_RULE,
    RULES,
    alert_groups,
    alert_rules,
    dashboard_exprs,
    dashboards,
    deploy_metric_names,
    metric_names,
    panels,
)
from tests.support.tools import require_tool

#: The contract: every metric family the services export (libs/telemetry and the
#: services' own metrics), by type. Dashboards and alerts may use nothing else.
METRIC_FAMILIES: dict[str, str] = {
    # every service
    "grove_build_info": "gauge",
    "grove_db_pool_size": "gauge",
    "grove_db_pool_in_use": "gauge",
    "grove_db_pool_waiting": "gauge",
    # HTTP services (api, mcp, share, console)
    "grove_http_requests_total": "counter",
    "grove_http_request_duration_seconds": "histogram",
    "grove_http_requests_in_flight": "gauge",
    "grove_http_request_body_bytes": "histogram",
    "grove_http_rate_limited_total": "counter",
    # callers of ask (api, mcp, worker)
    "grove_inference_client_requests_total": "counter",
    # worker
    "grove_jobs": "gauge",
    "grove_jobs_oldest_queued_age_seconds": "gauge",
    "grove_job_duration_seconds": "histogram",
    "grove_job_attempts": "histogram",
    "grove_job_lease_expirations_reclaimed_total": "counter",
    "grove_job_stale_completions_total": "counter",
    "grove_sweep_notes_expired_total": "counter",
    "grove_sweep_notes_soft_deleted_total": "counter",
    "grove_sweep_file_bytes_purged_total": "counter",
    "grove_enrichment_runs_total": "counter",
    "grove_enrichment_artifacts_total": "counter",
    "grove_enrichment_brief_fallbacks_total": "counter",
    # ask
    "grove_grpc_server_requests_total": "counter",
    "grove_grpc_server_request_duration_seconds": "histogram",
    "grove_ask_batch_size": "histogram",
    "grove_ask_model_latency_seconds": "histogram",
    "grove_ask_queue_wait_seconds": "histogram",
    "grove_ask_model_loaded": "gauge",
    "grove_ask_answer_invalid_replies_total": "counter",
    "grove_ask_answer_fallbacks_total": "counter",
    "grove_ask_answer_proposals_total": "counter",
    "grove_ask_answer_proposals_dropped_total": "counter",
    # ask's callers that answer (api, mcp)
    "grove_ask_citations_dropped_total": "counter",
    # api: proposals on conversation turns
    "grove_proposals_total": "counter",
    "grove_proposal_actions_total": "counter",
    # share (no `service` label of their own: the scrape target's applies)
    "grove_share_views_total": "counter",
    "grove_share_not_found_total": "counter",
    "grove_share_rate_limited_total": "counter",
}


def _series_types() -> dict[str, str]:
    """Every exported series name with its type; histograms expand to their three series."""
    types: dict[str, str] = {}
    for name, kind in METRIC_FAMILIES.items():
        if kind == "histogram":
            types.update({f"{name}_{part}": "counter" for part in ("bucket", "sum", "count")})
        else:
            types[name] = kind
    return types


KNOWN_SERIES = _series_types()
DASHBOARD_FILES = {
    "overview.json",
    "api.json",
    "mcp.json",
    "share.json",
    "console.json",
    "ask.json",
    "worker.json",
}
ALERTS = {
    "GroveHighErrorRatio",
    "GroveHighLatencyP95",
    "GroveOldestQueuedJobAge",
    "GroveFailedJobs",
    "GroveInferenceUnavailable",
    "GroveAnswerFailures",
    "GroveAskCitationsDropped",
    "GroveDatabasePoolSaturation",
    "GroveShareNotFoundSurge",
    "GroveShareRateLimited",
}
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
RANGE_FUNCTION = re.compile(r"\b(rate|irate|increase|delta|idelta|deriv)\s*\(\s*([A-Za-z_:][\w:]*)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _runbook_anchors() -> set[str]:
    lines = OPERATIONS.read_text(encoding="utf-8").splitlines()
    return {_anchor(line[4:]) for line in lines if line.startswith("### ")}


def _all_exprs() -> list[str]:
    return dashboard_exprs() + [str(rule["expr"]) for rule in alert_rules()]


# --- dashboards ---------------------------------------------------------------------------


def test_every_service_has_its_dashboard() -> None:
    assert set(dashboards()) == DASHBOARD_FILES


def test_dashboards_have_unique_uids_and_titles() -> None:
    boards = dashboards().values()
    uids = [board["uid"] for board in boards]
    titles = [board["title"] for board in boards]
    assert all(uids) and all(titles)
    assert len(set(uids)) == len(uids), uids
    assert len(set(titles)) == len(titles), titles


@pytest.mark.parametrize("name", sorted(DASHBOARD_FILES))
def test_dashboard_uses_a_current_schema_and_the_datasource_variable(name: str) -> None:
    board = dashboards()[name]
    assert board["schemaVersion"] >= 38
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in panels(board):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


@pytest.mark.parametrize("name", sorted(DASHBOARD_FILES))
def test_every_panel_has_a_promql_target(name: str) -> None:
    board = dashboards()[name]
    ids = []
    for panel in panels(board):
        if panel["type"] == "row":
            continue
        ids.append(panel["id"])
        exprs = [t.get("expr", "") for t in panel.get("targets", [])]
        assert exprs and all(e.strip() for e in exprs), panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(set(refs)) == len(refs), panel["title"]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("name", sorted(DASHBOARD_FILES))
def test_panels_fit_the_grid_without_overlapping(name: str) -> None:
    taken: set[tuple[int, int]] = set()
    for panel in panels(dashboards()[name]):
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["w"] > 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        cells = {
            (x, y)
            for x in range(pos["x"], pos["x"] + pos["w"])
            for y in range(pos["y"], pos["y"] + pos["h"])
        }
        assert not cells & taken, panel["title"]
        taken |= cells


def test_histogram_quantiles_keep_the_le_label() -> None:
    for expr in _all_exprs():
        if "histogram_quantile" in expr:
            assert re.search(r"by \(([^)]*\b)?le\)", expr), expr
            assert "_bucket" in expr, expr


# --- alerts -------------------------------------------------------------------------------


def test_rules_have_one_group_named_grove_with_the_requested_alerts() -> None:
    assert [group["name"] for group in alert_groups()] == ["grove"]
    assert {rule["alert"] for rule in alert_rules()} == ALERTS


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: str(rule["alert"]))
def test_every_alert_is_complete(rule: dict[str, Any]) -> None:
    assert rule["alert"] and str(rule["expr"]).strip()
    assert DURATION.match(str(rule["for"])), rule["for"]
    assert rule["labels"]["severity"] in {"warning", "critical"}
    annotations = rule["annotations"]
    assert annotations["summary"].strip() and annotations["description"].strip()
    assert annotations["runbook_url"].startswith("docs/operations.md#")


def test_every_runbook_url_points_at_a_runbook_heading() -> None:
    anchors = _runbook_anchors()
    for rule in alert_rules():
        anchor = rule["annotations"]["runbook_url"].split("#", 1)[1]
        assert anchor in anchors, (rule["alert"], anchor)
        assert anchor == _anchor(rule["alert"])


def test_runbooks_sit_in_the_alerts_section() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text.split("\n## Alerts and runbooks\n", 1)[1].split("\n## ", 1)[0]
    headings = {line[4:].strip() for line in section.splitlines() if line.startswith("### ")}
    assert headings >= ALERTS


def test_prometheus_rule_carries_the_same_groups() -> None:
    resource = yaml.safe_load(PROMETHEUS_RULE.read_text(encoding="utf-8"))
    assert resource["apiVersion"] == "monitoring.coreos.com/v1"
    assert resource["kind"] == "PrometheusRule"
    assert resource["metadata"]["name"] == "grove"
    assert resource["metadata"]["labels"]["app.kubernetes.io/name"] == "grove"
    assert resource["spec"]["groups"] == alert_groups()


# --- metric names -------------------------------------------------------------------------


def test_metric_names_are_read_from_promql_loosely() -> None:
    expr = (
        'sum by (grove_label) (rate(grove_a_total{grove_l="grove_s", route=~"$route"}'
        "[$__rate_interval])) / on (service) group_left (grove_x) grove_b"
        " or histogram_quantile(0.95, sum by (le) (rate(grove_c_bucket[5m]))) and up"
    )
    assert metric_names(expr) == {"grove_a_total", "grove_b", "grove_c_bucket", "up"}
    assert metric_names('label_values(grove_jobs{service="worker"}, kind)') == {"grove_jobs"}


def test_deploy_files_use_only_exported_metrics() -> None:
    names = deploy_metric_names()
    assert names, "no metric found: the parser or the files are broken"
    unknown = sorted(name for name in names - {"up"} if name not in KNOWN_SERIES)
    assert not unknown, f"not exported by any service: {unknown}"


def test_every_alert_uses_a_known_metric() -> None:
    for rule in alert_rules():
        assert metric_names(str(rule["expr"])) & set(KNOWN_SERIES), rule["alert"]


def test_rates_apply_to_counters_and_deltas_to_gauges() -> None:
    for expr in _all_exprs():
        for function, name in RANGE_FUNCTION.findall(expr):
            wanted = "gauge" if function in {"delta", "idelta", "deriv"} else "counter"
            assert KNOWN_SERIES.get(name) == wanted, f"{function}({name}) in {expr}"


# --- promtool ---------------------------------------------------------------------------


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run Debian's promtool (package prometheus; .ci/run installs it): skipped without it
    outside CI, a failure under CI."""
    promtool = require_tool("promtool", "checks the alert rules and dashboard queries")
    return subprocess.run([promtool, *args], capture_output=True, text=True, timeout=120)


def test_promtool_accepts_the_rules() -> None:
    result = _promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_parses_every_dashboard_query(tmp_path: Path) -> None:
    """Each panel's PromQL, with Grafana's variables filled in, as a recording rule."""
    substitutes = {"$__rate_interval": "5m", "$route": ".*", "$kind": ".*"}
    rules: list[dict[str, str]] = []
    for board in dashboards().values():
        for panel in panels(board):
            for target in panel.get("targets", []):
                expr = target["expr"]
                for variable, value in substitutes.items():
                    expr = expr.replace(variable, value)
                assert "$" not in expr, f"unknown variable in {expr}"
                rules.append({"record": f"grove:dashboard_check:{len(rules)}", "expr": expr})
    path = tmp_path / "dashboards.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = _promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def _series(name: str, values: str, **labels: str) -> dict[str, str]:
    selector = ", ".join(f'{key}="{value}"' for key, value in labels.items())
    return {"series": f"{name}{{{selector}}}", "values": values}


def _bucket_series(name: str, counts: dict[str, str], **labels: str) -> list[dict[str, str]]:
    return [_series(f"{name}_bucket", values, le=le, **labels) for le, values in counts.items()]


def _alert_cases() -> list[dict[str, Any]]:
    """Synthetic series at one sample a minute, and which alerts fire when."""
    http = "grove_http_requests_total"
    slow = {"0.5": "0x40", "1": "0x40", "2.5": "0+10x40", "+Inf": "0+10x40"}
    fast = {"0.5": "0+10x40", "1": "0+10x40", "2.5": "0+10x40", "+Inf": "0+10x40"}
    duration = "grove_http_request_duration_seconds"
    inference = "grove_inference_client_requests_total"
    not_found = "grove_share_not_found_total"
    dropped = "grove_ask_citations_dropped_total"
    limited = "grove_share_rate_limited_total"
    return [
        {
            "input_series": [
                _series(
                    http, "0+90x40", service="api", route="/v1/recall", method="POST", status="200"
                ),
                _series(
                    http, "0+10x40", service="api", route="/v1/recall", method="POST", status="500"
                ),
                _series(http, "0+99x40", service="mcp", route="/mcp", method="POST", status="200"),
                _series(http, "0+1x40", service="mcp", route="/mcp", method="POST", status="503"),
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "GroveHighErrorRatio", "exp_alerts": []},
                {
                    "eval_time": "16m",
                    "alertname": "GroveHighErrorRatio",
                    "exp_alerts": [{"exp_labels": {"service": "api", "severity": "critical"}}],
                },
            ],
        },
        {
            "input_series": [
                *_bucket_series(duration, slow, service="api", route="/v1/recall", method="POST"),
                *_bucket_series(duration, slow, service="mcp", route="/v1/export", method="GET"),
                *_bucket_series(duration, fast, service="mcp", route="/mcp", method="POST"),
            ],
            "alert_rule_test": [
                {
                    "eval_time": "16m",
                    "alertname": "GroveHighLatencyP95",
                    "exp_alerts": [{"exp_labels": {"service": "api", "severity": "warning"}}],
                },
            ],
        },
        {
            "input_series": [
                _series(
                    "grove_jobs_oldest_queued_age_seconds",
                    "600x40",
                    service="worker",
                    instance="w1",
                ),
                _series(
                    "grove_jobs_oldest_queued_age_seconds",
                    "600x40",
                    service="worker",
                    instance="w2",
                ),
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "GroveOldestQueuedJobAge", "exp_alerts": []},
                {
                    "eval_time": "16m",
                    "alertname": "GroveOldestQueuedJobAge",
                    "exp_alerts": [{"exp_labels": {"service": "worker", "severity": "warning"}}],
                },
            ],
        },
        {
            "input_series": [
                _series(
                    "grove_job_duration_seconds_count",
                    "0x5 1x35",
                    service="worker",
                    kind="embed_revision",
                    outcome="failed",
                ),
                _series(
                    "grove_jobs", "2x20 3x20", service="worker", kind="expire_note", state="failed"
                ),
            ],
            "alert_rule_test": [
                {"eval_time": "3m", "alertname": "GroveFailedJobs", "exp_alerts": []},
                {
                    "eval_time": "10m",
                    "alertname": "GroveFailedJobs",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "service": "worker",
                                "kind": "embed_revision",
                                "severity": "warning",
                            }
                        }
                    ],
                },
                {
                    "eval_time": "30m",
                    "alertname": "GroveFailedJobs",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "service": "worker",
                                "kind": "expire_note",
                                "severity": "warning",
                            }
                        }
                    ],
                },
            ],
        },
        {
            "input_series": [
                _series(inference, "0+80x40", service="api", method="Embed", outcome="ok"),
                _series(inference, "0+20x40", service="api", method="Embed", outcome="unavailable"),
                _series(inference, "0+100x40", service="worker", method="Embed", outcome="ok"),
                _series(inference, "0+5x40", service="worker", method="Embed", outcome="timeout"),
                _series("grove_ask_model_loaded", "0x40", service="ask", instance="ask-1"),
                _series("grove_ask_model_loaded", "1x40", service="ask", instance="ask-2"),
            ],
            "alert_rule_test": [
                {"eval_time": "3m", "alertname": "GroveInferenceUnavailable", "exp_alerts": []},
                {
                    "eval_time": "10m",
                    "alertname": "GroveInferenceUnavailable",
                    "exp_alerts": [
                        {"exp_labels": {"service": "api", "severity": "critical"}},
                        {
                            "exp_labels": {
                                "service": "ask",
                                "instance": "ask-1",
                                "severity": "critical",
                            }
                        },
                    ],
                },
            ],
        },
        {
            # Answer: 20 of 100 calls time out (cancelled calls are left out of the ratio,
            # else 20 of 300). Embed's healthy volume does not hide it.
            "input_series": [
                _series(inference, "0+80x40", service="api", method="Answer", outcome="ok"),
                _series(inference, "0+20x40", service="api", method="Answer", outcome="timeout"),
                _series(inference, "0+200x40", service="api", method="Answer", outcome="cancelled"),
                _series(inference, "0+1000x40", service="api", method="Embed", outcome="ok"),
                _series(inference, "0+100x40", service="mcp", method="Answer", outcome="ok"),
                _series(inference, "0+5x40", service="mcp", method="Answer", outcome="timeout"),
            ],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": "GroveAnswerFailures", "exp_alerts": []},
                {
                    "eval_time": "15m",
                    "alertname": "GroveAnswerFailures",
                    "exp_alerts": [{"exp_labels": {"service": "api", "severity": "warning"}}],
                },
                {"eval_time": "15m", "alertname": "GroveInferenceUnavailable", "exp_alerts": []},
            ],
        },
        {
            # Pre-created at 0; quote mismatches from minute 6 on, never an unknown revision.
            "input_series": [
                _series(dropped, "0x40", service="api", reason="unknown_revision"),
                _series(dropped, "0x5 1+1x34", service="api", reason="quote_mismatch"),
            ],
            "alert_rule_test": [
                {"eval_time": "15m", "alertname": "GroveAskCitationsDropped", "exp_alerts": []},
                {
                    "eval_time": "25m",
                    "alertname": "GroveAskCitationsDropped",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "service": "api",
                                "reason": "quote_mismatch",
                                "severity": "warning",
                            }
                        }
                    ],
                },
            ],
        },
        {
            "input_series": [
                _series("grove_db_pool_waiting", "0x5 2x40", service="api", instance="a1"),
                _series("grove_db_pool_in_use", "1x40", service="api", instance="a1"),
                _series("grove_db_pool_size", "4x40", service="api", instance="a1"),
                _series("grove_db_pool_waiting", "0x40", service="mcp", instance="m1"),
                _series("grove_db_pool_in_use", "4x40", service="mcp", instance="m1"),
                _series("grove_db_pool_size", "4x40", service="mcp", instance="m1"),
            ],
            "alert_rule_test": [
                {"eval_time": "8m", "alertname": "GroveDatabasePoolSaturation", "exp_alerts": []},
                {
                    "eval_time": "15m",
                    "alertname": "GroveDatabasePoolSaturation",
                    "exp_alerts": [
                        {
                            "exp_labels": {
                                "service": "api",
                                "condition": "waiting",
                                "severity": "warning",
                            }
                        },
                        {
                            "exp_labels": {
                                "service": "mcp",
                                "condition": "utilisation",
                                "severity": "warning",
                            }
                        },
                    ],
                },
            ],
        },
        {
            # 2 a second from one replica and 0.5 from another: 2.5/s in all, above 1/s.
            # A 10-minute rate of a series born at 0 reaches its value only after about
            # 10 minutes, so the alert fires after 15 more.
            "input_series": [
                _series(not_found, "0+120x40", service="share", instance="s1"),
                _series(not_found, "0+30x40", service="share", instance="s2"),
            ],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GroveShareNotFoundSurge", "exp_alerts": []},
                {
                    "eval_time": "25m",
                    "alertname": "GroveShareNotFoundSurge",
                    "exp_alerts": [{"exp_labels": {"service": "share", "severity": "warning"}}],
                },
            ],
        },
        {
            # Background noise: half a 404 a second never fires.
            "input_series": [_series(not_found, "0+30x40", service="share", instance="s1")],
            "alert_rule_test": [
                {"eval_time": "30m", "alertname": "GroveShareNotFoundSurge", "exp_alerts": []},
            ],
        },
        {
            # One refusal a second by the per-address limit, one every ten by the per-link.
            "input_series": [
                _series(limited, "0+60x40", service="share", instance="s1", limit="ip"),
                _series(limited, "0+6x40", service="share", instance="s1", limit="link"),
            ],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GroveShareRateLimited", "exp_alerts": []},
                {
                    "eval_time": "25m",
                    "alertname": "GroveShareRateLimited",
                    "exp_alerts": [
                        {"exp_labels": {"service": "share", "limit": "ip", "severity": "warning"}}
                    ],
                },
            ],
        },
    ]


def test_alerts_fire_on_synthetic_series(tmp_path: Path) -> None:
    """promtool's rule unit tests; annotations are left out here (their templates are
    checked by ``promtool check rules``), so the cases state only labels."""
    groups = alert_groups()
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump({"groups": groups}))
    cases = [{"interval": "1m", **case} for case in _alert_cases()]
    tests = tmp_path / "tests.yml"
    tests.write_text(
        json.dumps({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": cases})
    )
    result = _promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr
