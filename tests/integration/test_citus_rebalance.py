"""Growing a Citus cluster while it serves (``bench.rebalance`` at a tiny size).

The benchmark starts its own cluster (a coordinator and two workers; it moves shards,
so it never uses the run's shared one), the real grove-api and grove-mcp on it, and a
mixed load of saves with operationIds (REST and MCP), searches and recalls over several
accounts; meanwhile a third worker is started and registered (``citus.add_worker``) and
``citus_rebalance_start()`` moves shard groups to it. Checked: the move finished and put
shards on the new worker, requests ran during it, every acknowledged save is stored
exactly once, and no answer was a 500 (a 503 must carry ``Retry-After``).
"""

from __future__ import annotations

from pathlib import Path

from bench import rebalance
from grove_db import citus
from tests.support.tools import missing

#: Made-up notes (the shared LoCoMo data may be absent), with words to search for.
SENTENCES = [
    f"{name} {deed} on day {day}."
    for day in range(6)
    for name, deed in (
        ("Ana", "baked sourdough bread"),
        ("Ben", "repaired an old bicycle"),
        ("Caro", "hiked up the mountain trail"),
        ("Dev", "painted the garden fence"),
    )
]


def test_growing_the_cluster_under_load_loses_nothing_duplicates_nothing_and_never_fails() -> None:
    why = citus.missing(citus.tools_folder(Path(__file__).resolve().parents[2]))
    if why:
        missing(f"Citus is not available: {why}")
    figures = rebalance.run(SENTENCES, accounts=4, notes=0, clients=3, before=2, after=1, shards=4)
    move = figures["move"]
    assert move["state"] == "finished"
    assert move["shardGroupsMoved"] >= 1  # 4 shard groups over 3 workers: one moves
    assert figures["requestsDuring"] > 0, figures["outcomes"]
    assert figures["acknowledged saves"] > 0
    assert figures["lost"] == 0
    assert figures["duplicated"] == 0
    assert figures["errors"] == 0, figures["bad"]
    answered = {outcome.split(": ")[1] for outcome in figures["outcomes"]}
    assert answered <= {"200", "201", "503", "unavailable"}, figures["outcomes"]
