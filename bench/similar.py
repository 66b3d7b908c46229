"""The near-duplicate warning on save: what finding ``similar`` costs as an account grows.

``remember`` looks for notes like the one it saves inside the save's transaction, before
it writes (``grove_memory.notes.notes.similar_notes``), so its cost is added to every save. For
accounts holding 1,000 and 100,000 notes (bench.bulk's varied texts, bulk-loaded) plus the 249
notes of the labelled near-duplicate set (``bench/data/near_duplicates.json``), each
labelled note that has a cluster-mate above ``SAVE_LEXICAL_THRESHOLD`` is looked up as
if just saved, by a caller who sees the whole account and by one granted personal
notes only (the candidates of ``notes.SIMILAR``, read from the caller's scope): the time
of the lookup and how many of those cluster-mates it names (the candidates' recall; the
threshold's own precision and recall are ``bench.duplicates``'). Then the same for 200
chat turns (LoCoMo), whose words are common in the bulk texts (time only), and for each
of them saved again with a few words appended: how many of the turns it names. Last,
100 of those turns corrected (``update_memory``, a new content): what an edit costs,
the bands' trigger rewriting the note's bands (migration 0036).

Run: ``python -m bench.similar``. ``--saves``: instead, what the warning adds to a save,
``remember`` alone in accounts of 1,000 and 100,000 notes, with the lookup and the bands
(the ``note_bands_inserts`` trigger) and without either, in alternating phases of
``SAVES_A_PHASE`` saves each started after a ``CHECKPOINT``: chat turns with a short tag
appended, so nearly every save has near-duplicates to find and score (the expensive
path). The save path end to end: ``python -m bench.ingest --saves-at 1000 100000``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from bench import bulk
from bench.stack import stack, turns
from grove_auth.principal import Principal
from grove_cli import admin
from grove_contracts.notes import RememberRequest, SavedMemory, UpdateRequest
from grove_db.pool import open_pool, transaction
from grove_memory.notes import duplicates, notes
from grove_memory.store import Store

LABELLED = Path(__file__).resolve().parent / "data" / "near_duplicates.json"
SIZES = (1000, 100_000)
CHAT_TURNS = 200
EDITS = 100
#: What a chat turn saved again ends with ("chat re-saved": is the turn itself named?).
RESAVED = "(saved again)"
#: ``--saves``: saves timed in each phase, and phases with the warning and without.
SAVES_A_PHASE = 400
PHASES = 6


def principal(account: uuid.UUID, whole: bool) -> Principal:
    return Principal(
        account_id=account,
        connection_id=uuid.uuid4(),
        personal=True,
        all_notebooks=whole,
        can_write=True,
    )


def lookups(
    pool: Any, who: Principal, probes: list[tuple[dict[str, Any], set[uuid.UUID]]]
) -> tuple[list[float], int, int]:
    """Milliseconds per lookup, and how many of the expected notes were named."""
    times, named, expected = [], 0, 0
    for row, mates in probes:
        with transaction(pool, who.account_id) as conn:
            start = time.perf_counter()
            found = {
                s.id
                for s in notes.similar_notes(
                    conn, who, row["content"], row["project_id"], row["id"]
                )
            }
            times.append((time.perf_counter() - start) * 1000)
        named += len(mates & found)
        expected += len(mates)
    return times, named, expected


def edits(pool: Any, who: Principal, rows: list[dict[str, Any]]) -> list[float]:
    """Milliseconds per correction of each note's content (a few words appended)."""
    store = Store(pool=pool, cursor_secret=b"-" * 32)
    times = []
    for row in rows:
        start = time.perf_counter()
        notes.update_memory(
            store, who, row["id"], UpdateRequest(content=f"{row['content']} (edited)")
        )
        times.append((time.perf_counter() - start) * 1000)
    return times


def save_cost(size: int) -> None:
    """``--saves``: median ms a save with the warning and without, phase by phase."""
    chat = turns()
    with stack("disabled") as running:
        pool = open_pool(running.db.runtime_url)
        superuser = running.db.grove_superuser_url
        account = admin.create_account(running.db.migration_url, f"holds {size}")
        bulk.load(superuser, str(account), bulk.texts(size), None)
        store = Store(pool=pool, cursor_secret=b"-" * 32)
        who = principal(account, True)
        medians: dict[bool, list[float]] = {True: [], False: []}
        named = saved = 0
        for phase in range(PHASES):
            for on in (True, False) if phase % 2 == 0 else (False, True):
                with psycopg.connect(superuser, autocommit=True) as conn:
                    switch = "ENABLE" if on else "DISABLE"
                    conn.execute(f"ALTER TABLE memories {switch} TRIGGER note_bands_inserts")
                    conn.execute("CHECKPOINT")
                times = []
                for i in range(SAVES_A_PHASE):
                    text = (
                        f"{chat[(phase * SAVES_A_PHASE + i) % len(chat)]} ({uuid.uuid4().hex[:6]})"
                    )
                    request = RememberRequest(content=text, kind="fact")
                    start = time.perf_counter()
                    result = notes.remember(store, who, request, similar=on)
                    times.append((time.perf_counter() - start) * 1000)
                    if on:
                        saved += 1
                        memory = result.memory
                        named += isinstance(memory, SavedMemory) and bool(memory.similar)
                medians[on].append(statistics.median(times))
        pool.close()
    with_it, without = statistics.median(medians[True]), statistics.median(medians[False])
    print(
        f"{size:>7} notes: a save {with_it:.2f} ms with the warning, {without:.2f} without"
        f" (+{with_it - without:.2f} ms); phase medians {[round(m, 2) for m in medians[True]]}"
        f" vs {[round(m, 2) for m in medians[False]]}; {named}/{saved} saves named a note"
    )


def show(label: str, times: list[float], named: int, expected: int) -> None:
    times.sort()
    p95 = times[int(len(times) * 0.95)]
    found = f"named {named}/{expected} near-duplicates" if expected else ""
    print(f"{label:<44} median {statistics.median(times):5.1f} ms  p95 {p95:5.1f} ms  {found}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--saves", action="store_true", help="what the warning adds to a save")
    if parser.parse_args().saves:
        for size in SIZES:
            save_cost(size)
        return
    labelled = json.loads(LABELLED.read_text())
    texts = bulk.texts(max(SIZES))
    chat = turns()[:CHAT_TURNS]
    with stack("disabled") as running:
        pool = open_pool(running.db.runtime_url)
        for size in SIZES:
            account = admin.create_account(running.db.migration_url, f"holds {size}")
            loaded = texts[:size] + [n["text"] for n in labelled] + chat
            bulk.load(running.db.grove_superuser_url, str(account), loaded, None)
            with transaction(pool, account) as conn:
                rows = conn.execute("SELECT id, content, project_id FROM memories").fetchall()
            by_text = {r["content"]: r for r in rows}
            probes = []
            for note in labelled:
                mates = {
                    by_text[m["text"]]["id"]
                    for m in labelled
                    if m is not note
                    and (m["group"], m["cluster"]) == (note["group"], note["cluster"])
                    and duplicates.lexical_similarity(note["text"], m["text"])
                    >= duplicates.SAVE_LEXICAL_THRESHOLD
                }
                if mates:
                    probes.append((by_text[note["text"]], mates))
            chats: list[tuple[dict[str, Any], set[uuid.UUID]]] = [
                (by_text[text], set()) for text in dict.fromkeys(chat)
            ]
            resaved = [
                (
                    {"content": f"{text} {RESAVED}", "project_id": None, "id": None},
                    {by_text[text]["id"]},
                )
                for text in dict.fromkeys(chat)
                if duplicates.lexical_similarity(f"{text} {RESAVED}", text)
                >= duplicates.SAVE_LEXICAL_THRESHOLD
            ]
            for whole in (True, False):
                who = principal(account, whole)
                kind = "whole account" if whole else "personal only"
                show(f"{size:>7} notes, labelled, {kind}", *lookups(pool, who, probes))
                show(f"{size:>7} notes, chat turns, {kind}", *lookups(pool, who, chats))
                show(f"{size:>7} notes, chat re-saved, {kind}", *lookups(pool, who, resaved))
            corrected = edits(pool, principal(account, True), [r for r, _ in chats[:EDITS]])
            show(f"{size:>7} notes, chat turns edited", corrected, 0, 0)
        pool.close()


if __name__ == "__main__":
    main()
