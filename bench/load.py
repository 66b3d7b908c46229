"""A bounded load run with locust: 16 clients for 60 s against the api, then the mcp.

The mix is 70% recall, 20% save, 10% list (``bench/locustfile.py``), on one account
preloaded with 1,000 LoCoMo turns embedded by the real worker. We report throughput,
median and p95 latency and the error count (which must be 0), and fail when the api
serves under ``MIN_API_RATIO`` of the mcp's throughput on the same mix: both run the same
operations on the same data, so a gap means REST costs more per request (0022 fixed one:
a full index scan per recall candidate that took the api from 48 to 17 req/s). The
per-credential rate limits are off and the MCP per-credential concurrency is raised to
the client count: all clients share one key, and the run measures the service, not its
limits.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.stack import save_all, stack, turns, wait_ready

RESULTS = Path(__file__).resolve().parent / "results"
LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
#: The api's throughput must be at least this share of the mcp's on the same mix.
MIN_API_RATIO = 0.8


def locust(host: str, user: str, key: str, texts: Path, users: int, seconds: int) -> dict[str, Any]:
    """Run locust headless; the aggregated figures and one row per request name."""
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "run"
        command = [
            str(Path(sys.executable).with_name("locust")),
            "-f", str(LOCUSTFILE), user,
            "--headless", "--only-summary",
            "-u", str(users), "-r", str(users), "-t", f"{seconds}s",
            "--host", host, "--csv", str(prefix),
        ]  # fmt: skip
        env = {"GROVE_BENCH_KEY": key, "GROVE_BENCH_TEXTS": str(texts)}
        subprocess.run(command, env={**_environ(), **env}, check=False, capture_output=True)
        with open(f"{prefix}_stats.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
    return {row["Name"]: _figures(row) for row in rows}


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def _figures(row: dict[str, str]) -> dict[str, float]:
    return {
        "requests": int(row["Request Count"]),
        "failures": int(row["Failure Count"]),
        "rps": round(float(row["Requests/s"]), 1),
        "p50_ms": float(row["50%"] or 0),
        "p95_ms": float(row["95%"] or 0),
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    """One line per target and request name."""
    lines = [f"{'target':<7}{'request':<16}{'requests':>9}{'req/s':>8}{'p50 ms':>8}"
             f"{'p95 ms':>8}{'errors':>8}"]  # fmt: skip
    for target, rows in results.items():
        for name, row in rows.items():
            lines.append(
                f"{target:<7}{name:<16}{row['requests']:>9}{row['rps']:>8}"
                f"{row['p50_ms']:>8.0f}{row['p95_ms']:>8.0f}{row['failures']:>8}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--notes", type=int, default=1000)
    args = parser.parse_args()
    texts = turns()
    with stack("minilm") as running, tempfile.NamedTemporaryFile("w", suffix=".json") as pool:
        json.dump(texts, pool)
        pool.flush()
        running.start_worker()
        save_all(running, texts[: args.notes])
        wait_ready(running, args.notes)
        mcp = running.start_mcp(
            GROVE_MCP_RATE_LIMIT_PER_MINUTE="0",
            GROVE_MCP_PER_CREDENTIAL_CONCURRENCY=str(args.users),
        )
        path = Path(pool.name)
        results = {
            "api": locust(running.api_url, "ApiUser", running.key, path, args.users, args.seconds),
            "mcp": locust(mcp, "McpUser", running.key, path, args.users, args.seconds),
        }
    print(table(results))
    RESULTS.mkdir(exist_ok=True)
    report = {"users": args.users, "seconds": args.seconds, "results": results}
    (RESULTS / "load.json").write_text(json.dumps(report, indent=2))
    print(f"\nwrote {RESULTS / 'load.json'}")
    errors = sum(row["failures"] for rows in results.values() for row in rows.values())
    if errors:
        sys.exit(f"bench: {errors} errors under load")
    ratio = results["api"]["Aggregated"]["rps"] / max(results["mcp"]["Aggregated"]["rps"], 0.1)
    print(f"api/mcp throughput: {ratio:.2f} (must be >= {MIN_API_RATIO})")
    if ratio < MIN_API_RATIO:
        sys.exit(f"bench: the api serves {ratio:.2f}x the mcp's throughput on the same mix")


if __name__ == "__main__":
    main()
