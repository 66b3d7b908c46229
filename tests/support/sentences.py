"""Thirty distinct sentences in the "<speaker>: <text>" shape of LoCoMo turns, the same
every run, for the benchmarks' smoke runs."""

from __future__ import annotations

NAMES = ("Ana", "Ben", "Caro", "Dev", "Eli")
DEEDS = (
    "baked sourdough bread",
    "repaired an old bicycle",
    "hiked up the mountain trail",
    "painted the garden fence",
    "practised the cello",
    "planted tomatoes on the balcony",
)
#: Thirty distinct sentences, in the "<speaker>: <text>" shape of LoCoMo turns.
SENTENCES = [f"{NAMES[i % len(NAMES)]}: I {DEEDS[i % len(DEEDS)]} on day {i}." for i in range(30)]
