"""Retrieval quality on LoCoMo: turn-level evidence recall@k and MRR, three search modes.

Each sample becomes a fresh account; each dialogue turn one note saved through the
REST API as an agent would save it (``"<speaker>: <text>"``, plus
`` [shared a photo: <blip_caption>]`` when the turn carries an image; source
``locomo:<sample>:<dia_id>``, the session's date in the provenance), embedded by the
real worker with MiniLM. Each question runs through ``POST /v1/memories/search``
(relevance, limit 50) lexical-only, semantic-only and hybrid; we score the share of gold
evidence turns in the top k, overall and per category, beside the LoCoMo paper's DRAGON
baseline (Table 3). Then ``bench.crossval`` chooses the tuned constants leaving one
conversation out, and reports the cross-validated figures beside the all-five ones.

Data: ../shared/data/locomo-dev.json (CC BY-NC 4.0, evaluation only, never shipped).
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

KS = (5, 10, 25, 50)
PAGE = 50  # results scored per question
RETRIES = 5  # a question asked again after a 503 or a degraded answer
MODES = ("lexical", "semantic", "hybrid")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: LoCoMo paper, Table 3, DRAGON retriever, all categories (turn-level evidence recall).
BASELINE = {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7}
RESULTS = Path(__file__).resolve().parent / "results"
SESSION = re.compile(r"session_(\d+)")
EVIDENCE_SPLIT = re.compile(r"[;,]")


@dataclass(frozen=True)
class Turn:
    """One dialogue turn, as the note it becomes."""

    dia_id: str
    content: str
    date: str


@dataclass(frozen=True)
class Question:
    """One question with its usable gold evidence (turn IDs that exist)."""

    text: str
    category: int
    evidence: frozenset[str]


def turns_of(sample: dict[str, Any], sessions: int | None = None) -> list[Turn]:
    """The sample's turns in order (the first ``sessions`` sessions if given)."""
    conversation = sample["conversation"]
    numbers = sorted(int(m.group(1)) for k in conversation if (m := SESSION.fullmatch(k)))
    found = []
    for number in numbers[:sessions] if sessions else numbers:
        date = conversation.get(f"session_{number}_date_time", "")
        for turn in conversation[f"session_{number}"]:
            content = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                content += f" [shared a photo: {turn['blip_caption']}]"
            found.append(Turn(turn["dia_id"], content, date))
    return found


def questions_of(sample: dict[str, Any], known: Iterable[str]) -> list[Question]:
    """Questions whose evidence names at least one existing turn (malformed IDs dropped)."""
    ids = set(known)
    found = []
    for qa in sample["qa"]:
        evidence = {
            part.strip()
            for item in qa.get("evidence", [])
            for part in EVIDENCE_SPLIT.split(item)
            if part.strip() in ids
        }
        if evidence:
            found.append(Question(qa["question"], int(qa["category"]), frozenset(evidence)))
    return found


def session(local: threading.local, key: str) -> requests.Session:
    """This thread's HTTP session carrying the API key."""
    http: requests.Session | None = getattr(local, "http", None)
    if http is None:
        http = local.http = requests.Session()
        http.headers["Authorization"] = f"Bearer {key}"
    return http


def ingest(api_url: str, key: str, sample_id: str, turns: list[Turn], threads: int = 8) -> None:
    """Save every turn as a note through the REST API, as an agent in the conversation
    would: each session's turns in order, its session as the source agent (sessions
    saved side by side, one per thread)."""
    local = threading.local()
    sessions: dict[str, list[Turn]] = {}
    for turn in turns:
        sessions.setdefault(turn.date, []).append(turn)

    def save(session_turns: list[Turn]) -> None:
        http = session(local, key)
        for turn in session_turns:
            body: dict[str, Any] = {
                "content": turn.content,
                "kind": "fact",
                "provenance": {
                    "sourceRef": f"locomo:{sample_id}:{turn.dia_id}",
                    "sourceAgent": f"locomo session of {turn.date}"[:100],
                },
            }
            response = http.post(f"{api_url}/v1/memories", json=body, timeout=60)
            response.raise_for_status()

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(save, sessions.values()))


def ranked_turns(http: requests.Session, api_url: str, query: str, mode: str) -> list[str]:
    """The dia_ids of the top ``PAGE`` search results, best first."""
    return [dia_id(ref) for ref in ranked_sources(http, api_url, query, mode)]


def ranked_sources(http: requests.Session, api_url: str, query: str, mode: str) -> list[str]:
    """The ``sourceRef`` of each of the top ``PAGE`` search results, best first."""
    body: dict[str, Any] = {"query": query, "limit": PAGE, "sort": "relevance", "mode": mode}
    for _ in range(RETRIES):
        response = http.post(f"{api_url}/v1/memories/search", json=body, timeout=60)
        if response.status_code == 503:
            # Overloaded (a statement over its timeout on a busy machine): as a client
            # would, wait as told and ask again; the figures are of answers, not of load.
            time.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        response.raise_for_status()
        data = response.json()["data"]
        if mode == "lexical" or data["retrieval"]["semantic"]:
            break
        time.sleep(1)  # the query embedding timed out: lexical alone is not this mode
    else:
        raise RuntimeError(f"{mode} search failed {RETRIES} times for {query!r}")
    return [item["memory"]["provenance"]["sourceRef"] for item in data["items"]]


def dia_id(source_ref: str) -> str:
    """``D1:3`` from a note's source ``locomo:<sample>:D1:3``."""
    return ":".join(source_ref.rsplit(":", 2)[-2:])


def recall_at(ranked: list[str], gold: frozenset[str]) -> dict[int, float]:
    """The share of ``gold`` in the top k of ``ranked``, for each k of ``KS``."""
    return {k: len(gold & set(ranked[:k])) / len(gold) for k in KS}


def evaluate(
    api_url: str, key: str, questions: list[Question], modes: Iterable[str] = MODES
) -> dict[str, list[dict[str, Any]]]:
    """Per mode, per question: category, recall at each k, reciprocal rank."""
    local = threading.local()

    def one(args: tuple[str, Question]) -> tuple[str, dict[str, Any]]:
        mode, question = args
        http = session(local, key)
        ranked = ranked_turns(http, api_url, question.text, mode)
        gold = question.evidence
        recall = recall_at(ranked, gold)
        first = next((rank for rank, turn in enumerate(ranked, 1) if turn in gold), None)
        return mode, {
            "category": question.category,
            "recall": recall,
            "rr": 1 / first if first else 0.0,
        }

    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    with ThreadPoolExecutor(4) as pool:
        for mode, scored in pool.map(one, [(m, q) for m in modes for q in questions]):
            results[mode].append(scored)
    return results


def summarize(scored: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean recall@k (percent) and MRR, overall and per category."""

    def mean(rows: list[dict[str, Any]]) -> dict[str, Any]:
        if not rows:
            return {"questions": 0}
        return {
            "questions": len(rows),
            **{f"recall@{k}": 100 * sum(r["recall"][k] for r in rows) / len(rows) for k in KS},
            "mrr": sum(r["rr"] for r in rows) / len(rows),
        }

    return {
        "all": mean(scored),
        **{
            name: mean([r for r in scored if r["category"] == number])
            for number, name in CATEGORIES.items()
        },
    }


def table(summary: dict[str, dict[str, Any]]) -> str:
    """The figures as a fixed-width table, with the published baseline."""
    head = f"{'mode':<10}{'category':<13}{'n':>5}" + "".join(f"{'R@' + str(k):>8}" for k in KS)
    lines = [head + f"{'MRR':>8}", "-" * (len(head) + 8)]
    for mode, by_category in summary.items():
        for name, row in by_category.items():
            if not row["questions"]:
                continue
            cells = "".join(f"{row[f'recall@{k}']:>8.1f}" for k in KS)
            lines.append(f"{mode:<10}{name:<13}{row['questions']:>5}{cells}{row['mrr']:>8.3f}")
    cells = "".join(f"{BASELINE[k]:>8.1f}" for k in KS)
    lines.append(f"{'DRAGON':<10}{'all (paper)':<13}{'':>5}{cells}")
    return "\n".join(lines)


def chart(summary: dict[str, dict[str, Any]], path: Path) -> bool:
    """Recall@k curves of the three modes and the baseline, as a PNG (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axes = plt.subplots(figsize=(6, 4))
    for mode, by_category in summary.items():
        axes.plot(KS, [by_category["all"][f"recall@{k}"] for k in KS], marker="o", label=mode)
    axes.plot(KS, [BASELINE[k] for k in KS], linestyle="--", marker="x", label="DRAGON (paper)")
    axes.set(xlabel="k", ylabel="evidence recall@k (%)", title="LoCoMo turn retrieval")
    axes.set_xticks(list(KS), [str(k) for k in KS])
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def run(
    api_url: str,
    new_key: Any,
    wait_ready: Any,
    samples: list[dict[str, Any]],
    sessions: int | None = None,
    modes: Iterable[str] = MODES,
) -> dict[str, dict[str, Any]]:
    """Ingest each sample into its own account, wait for embeddings, score every mode.

    ``new_key(sample_id)`` creates an account and returns its API key;
    ``wait_ready(key, count)`` blocks until that many of its notes are embedded.
    """
    keys = save_samples(api_url, new_key, wait_ready, samples, sessions)
    return score_samples(api_url, keys, samples, sessions, modes)


def save_samples(
    api_url: str,
    new_key: Any,
    wait_ready: Any,
    samples: list[dict[str, Any]],
    sessions: int | None = None,
) -> dict[str, str]:
    """Ingest each sample into its own account and wait for its embeddings; the keys by
    sample ID."""
    keys = {}
    for sample in samples:
        turns = turns_of(sample, sessions)
        keys[sample["sample_id"]] = key = new_key(sample["sample_id"])
        ingest(api_url, key, sample["sample_id"], turns)
        wait_ready(key, len(turns))
    return keys


def score_samples(
    api_url: str,
    keys: dict[str, str],
    samples: list[dict[str, Any]],
    sessions: int | None = None,
    modes: Iterable[str] = MODES,
) -> dict[str, dict[str, Any]]:
    """Every question of the saved samples asked in every mode and scored: the summary."""
    modes = list(modes)
    scored: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for sample in samples:
        questions = questions_of(sample, (t.dia_id for t in turns_of(sample, sessions)))
        for mode, rows in evaluate(api_url, keys[sample["sample_id"]], questions, modes).items():
            scored[mode] += rows
    return {mode: summarize(rows) for mode, rows in scored.items()}


def cross_validation(
    runtime_url: str,
    ask_address: str,
    samples: list[dict[str, Any]],
    sessions: int | None,
    summary: dict[str, dict[str, Any]],
    account_of: dict[str, str],
    grid: dict[str, tuple[Any, ...]] | None = None,
) -> dict[str, Any] | None:
    """``bench.crossval`` on the accounts just scored (``account_of`` maps sample IDs to
    them); None with fewer than two samples. ``grid`` defaults to ``crossval.GRID``.

    Exits non-zero if its in-process search at the shipped constants strays from the HTTP
    hybrid figures by more than 0.5 at any k (then it would not be tuning the service)."""
    from bench import crossval

    if len(samples) < 2:
        print("\ncross-validation needs two samples or more: skipped")
        return None
    asked = crossval.locomo_asked(samples, sessions, account_of)
    return crossval.tune(
        runtime_url,
        ask_address,
        [crossval.Asked("LoCoMo", crossval.LOCOMO_METRICS, asked, True)],
        {"LoCoMo": crossval.locomo_over_http(summary)},
        crossval.GRID if grid is None else grid,
    )


def main() -> None:
    from bench import longmemeval
    from bench.stack import DATA, locomo, stack

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--dataset",
        choices=("locomo", "longmemeval"),
        default="locomo",
        help="LoCoMo (default) or LongMemEval_S (bench.longmemeval)",
    )
    parser.add_argument(
        "--data", type=Path, help="the dataset's file (default: the one in ../shared/data)"
    )
    parser.add_argument("--samples", nargs="*", help="LoCoMo sample IDs (default: all)")
    parser.add_argument("--sessions", type=int, help="LoCoMo: only the first N sessions of each")
    parser.add_argument(
        "--questions",
        type=int,
        help=f"LongMemEval: the first N questions shuffled with seed {longmemeval.SEED}"
        " (default: all)",
    )
    parser.add_argument(
        "--no-crossval",
        action="store_true",
        help="the HTTP figures only (minutes, not a quarter hour)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    with stack("minilm") as running:
        running.start_worker()
        made = Accounts(running, args.dataset)
        new_key, wait_ready, account_of = made.new_key, made.wait_ready, made.account_of
        if args.dataset == "longmemeval":
            raw = longmemeval.load(args.data or longmemeval.DATA)
            questions = longmemeval.chosen(raw, args.questions)
            report = longmemeval.run(running.api_url, new_key, wait_ready, questions)
            # Measured once the worker is idle, on the same machine, for the ratio.
            report["ingest"]["modelSample"] = min(
                longmemeval.MODEL_SAMPLE, report["ingest"]["notes"]
            )
            report["ingest"]["modelNotesPerSecond"] = round(longmemeval.model_rate(questions), 1)
            print(longmemeval.table(report))
            write(
                "longmemeval.json",
                {"seed": longmemeval.SEED, "seconds": elapsed(started), **report},
            )
            return
        data = locomo(args.data or DATA)
        samples = [s for s in data if not args.samples or s["sample_id"] in args.samples]
        summary = run(running.api_url, new_key, wait_ready, samples, args.sessions)
        print(table(summary))
        tuned = (
            None
            if args.no_crossval
            else cross_validation(
                running.db.runtime_url,
                running.env["GROVE_ASK_ADDRESS"],
                samples,
                args.sessions,
                summary,
                account_of,
            )
        )
    write(
        "quality.json",
        {
            "samples": [s["sample_id"] for s in samples],
            "sessions": args.sessions,
            "seconds": elapsed(started),
            "baseline": BASELINE,
            "summary": summary,
            "crossValidation": tuned,
        },
    )
    if chart(summary, RESULTS / "quality.png"):
        print(f"and {RESULTS / 'quality.png'}")


class Accounts:
    """Benchmark accounts on a bench stack, for ``run``: ``new_key`` creates one,
    ``key_of`` issues a key of an existing one (a kept store's), ``wait_ready`` polls
    until an account's notes are embedded. ``account_of`` maps names to account IDs."""

    def __init__(self, running: Any, dataset: str):
        self.running = running
        self.dataset = dataset
        self.account_of: dict[str, str] = {}
        self._accounts: dict[str, str] = {}  # key -> account ID

    def new_key(self, name: str) -> str:
        """A key of a new account named for the dataset and ``name``."""
        from grove_cli import admin

        account = admin.create_account(self.running.db.migration_url, f"{self.dataset} {name}")
        return self.key_of(name, str(account))

    def key_of(self, name: str, account: str) -> str:
        """A new key of the existing ``account``, recorded under ``name``."""
        from bench.stack import SECRET
        from grove_cli import admin

        issued = admin.create_key(self.running.db.migration_url, SECRET, uuid.UUID(account), name)
        self.account_of[name] = account
        self._accounts[issued.key] = account
        return issued.key

    def wait_ready(self, key: str, count: int) -> None:
        """Return once ``count`` notes of the key's account are embedded."""
        import psycopg

        with psycopg.connect(self.running.db.grove_superuser_url, autocommit=True) as conn:
            while True:
                row = conn.execute(
                    "SELECT count(*) FROM memories WHERE account_id = %s AND indexing = 'ready'",
                    (self._accounts[key],),
                ).fetchone()
                if row and row[0] >= count:
                    return
                time.sleep(0.2)


def elapsed(started: float) -> float:
    """Seconds since ``started`` (a ``perf_counter`` reading), to a tenth."""
    return round(time.perf_counter() - started, 1)


def write(name: str, report: dict[str, Any]) -> None:
    """The report as ``bench/results/<name>``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_text(json.dumps(report, indent=2))
    print(f"\nwrote {RESULTS / name}")


if __name__ == "__main__":
    main()
