"""Which Ask questions are clean-up requests for the whole scope (``grove_memory.ask.cleanup``)."""

from __future__ import annotations

import pytest

from grove_memory.ask.cleanup import is_cleanup


@pytest.mark.parametrize(
    "question",
    [
        "find duplicates",
        "Find duplicates",
        "What's stale?",
        "what is stale",
        "Clean up my notes",
        "clean-up please",
        "Are there any near-duplicate notes?",
        "Can you tidy up my memory?",
        "show me outdated notes",
        "any dupes?",
    ],
)
def test_a_question_naming_no_topic_asks_for_a_cleanup(question: str) -> None:
    assert is_cleanup(question)


@pytest.mark.parametrize(
    "question",
    [
        "When do we deploy the billing service?",
        "Find duplicates about the billing deploy",
        "What's stale in the staging runbook?",
        "clean up the kubernetes notes",
        "What notes do I have?",
        "",
    ],
)
def test_a_topical_question_is_not_a_cleanup(question: str) -> None:
    assert not is_cleanup(question)
