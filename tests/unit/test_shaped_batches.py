"""MiniLM's model batches shaped by length, and the setting that bounds them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from grove_ask.providers import shaped_batches
from grove_ask.settings import DEFAULT_BATCH_TOKENS, MAX_BATCH_TOKENS, AskSettings


def test_texts_are_sorted_by_length_into_batches_padding_to_at_most_the_budget() -> None:
    lengths = [256, 12, 40, 256, 9, 41, 256, 100]
    batches = shaped_batches(lengths, 256)
    assert batches == [[4, 1, 2, 5], [7], [0], [3], [6]]
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) * max(lengths[i] for i in batch) <= 256


def test_a_batch_fills_to_exactly_the_budget_and_one_token_more_starts_the_next() -> None:
    assert shaped_batches([64] * 4, 256) == [[0, 1, 2, 3]]
    assert shaped_batches([64, 64, 64, 65], 256) == [[0, 1, 2], [3]]
    assert shaped_batches([64] * 4, 255) == [[0, 1, 2], [3]]


def test_a_text_longer_than_the_budget_is_a_batch_of_its_own() -> None:
    assert shaped_batches([300, 5, 300], 256) == [[1], [0], [2]]
    assert shaped_batches([3, 3, 3], 1) == [[0], [1], [2]]  # 1: every text alone


def test_equal_lengths_keep_their_order() -> None:
    assert shaped_batches([7] * 10, 35) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert shaped_batches([], DEFAULT_BATCH_TOKENS) == []


@pytest.mark.parametrize("tokens", [1, DEFAULT_BATCH_TOKENS, MAX_BATCH_TOKENS])
def test_the_batch_token_budget_is_accepted_within_its_bounds(
    monkeypatch: pytest.MonkeyPatch, tokens: int
) -> None:
    monkeypatch.setenv("GROVE_EMBED_BATCH_TOKENS", str(tokens))
    assert AskSettings().embed_batch_tokens == tokens


@pytest.mark.parametrize("tokens", ["0", str(MAX_BATCH_TOKENS + 1), "many"])
def test_a_batch_token_budget_out_of_bounds_stops_the_service(
    monkeypatch: pytest.MonkeyPatch, tokens: str
) -> None:
    monkeypatch.setenv("GROVE_EMBED_BATCH_TOKENS", tokens)
    with pytest.raises(ValidationError, match="embed_batch_tokens"):
        AskSettings()
