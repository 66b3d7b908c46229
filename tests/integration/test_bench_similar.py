"""A small run of ``python -m bench.similar --saves`` (what the near-duplicate warning adds
to a save): it starts its own throwaway stack, since it switches a trigger on and off."""

from __future__ import annotations

import re

import pytest

from bench import bulk, similar
from tests.support.sentences import SENTENCES


def test_the_save_cost_benchmark_times_saves_with_and_without_the_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bulk, "turns", lambda: SENTENCES)
    # Saved again as they were bulk-loaded (bench.bulk joins two or three), so the
    # phases with the warning name the notes they repeat.
    monkeypatch.setattr(similar, "turns", lambda: bulk.texts(12))
    monkeypatch.setattr(similar, "SAVES_A_PHASE", 6)
    monkeypatch.setattr(similar, "PHASES", 2)
    similar.save_cost(12)
    line = capsys.readouterr().out
    found = re.search(
        r"12 notes: a save ([\d.]+) ms with the warning, ([\d.]+) without .*; (\d+)/12 saves", line
    )
    assert found, line
    assert float(found[1]) > 0 and float(found[2]) > 0
    assert int(found[3]) > 0  # the lookup ran, and found the copies
