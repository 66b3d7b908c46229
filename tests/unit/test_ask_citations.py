"""The api's side of ask: the citation verifier and how ``Answer`` failures are told."""

from __future__ import annotations

import pytest

from grove_contracts.errors import ERROR_STATUS
from grove_memory.ask.ask import (
    CITATIONS_DROPPED,
    InferenceTimeout,
    InferenceUnavailable,
    generate,
    verify_citations,
)
from grove_memory.inference import EvidenceText, Generated, InferenceError, QuotedSpan
from grove_telemetry import metrics

NOTE = "7f9c1e9e-1111-4a4a-9a9a-000000000001"
CONTENT = "We deploy with Argo CD every Tuesday. Rollbacks use argo rollback."
EVIDENCE = [EvidenceText(NOTE, 2, CONTENT)]


def dropped(reason: str) -> float:
    return CITATIONS_DROPPED.labels(metrics.service(), reason)._value.get()  # type: ignore[no-any-return]


def test_an_exact_quote_of_an_evidence_revision_is_kept_with_its_revision_id() -> None:
    quote = "Rollbacks use argo rollback."
    start = CONTENT.index(quote)
    kept = verify_citations([QuotedSpan(NOTE, 2, quote, start, start + len(quote))], EVIDENCE)
    assert kept == [
        {
            "noteId": NOTE,
            "revisionId": f"{NOTE}:2",
            "version": 2,
            "quote": quote,
            "start": start,
            "end": start + len(quote),
        }
    ]


def test_citations_of_other_revisions_or_with_wrong_quotes_or_offsets_are_dropped() -> None:
    good = QuotedSpan(NOTE, 2, "We deploy", 0, 9)
    unknown_before = dropped("unknown_revision")
    mismatch_before = dropped("quote_mismatch")
    bad = [
        QuotedSpan(NOTE, 1, "We deploy", 0, 9),  # an older revision: not in the evidence
        QuotedSpan("7f9c1e9e-1111-4a4a-9a9a-000000000002", 2, "We deploy", 0, 9),  # other note
        QuotedSpan(NOTE, 2, "We deploy", 1, 10),  # offsets off by one
        QuotedSpan(NOTE, 2, "we deploy", 0, 9),  # not verbatim (case)
        QuotedSpan(NOTE, 2, "We deploy", -9, 0),  # negative offsets
        QuotedSpan(NOTE, 2, CONTENT + "!", 0, len(CONTENT) + 1),  # past the end
        QuotedSpan(NOTE, 2, "", 3, 3),  # empty
    ]
    kept = verify_citations([*bad, good], EVIDENCE)
    assert [c["quote"] for c in kept] == ["We deploy"]
    assert dropped("unknown_revision") - unknown_before == 2
    assert dropped("quote_mismatch") - mismatch_before == 5


class Failing:
    """An answerer whose ``Answer`` call fails with one ``InferenceError`` reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def answer(self, *args: object, **kwargs: object) -> Generated:
        raise InferenceError(self.reason, "details")

    def describe(self, *, timeout: float) -> str:
        raise InferenceError(self.reason, "details")


def test_answer_failures_become_disabled_503_or_504() -> None:
    question = "when do we deploy?"
    assert generate(Failing("disabled"), question, [], EVIDENCE, False, 1.0) is None
    with pytest.raises(InferenceTimeout) as timeout:
        generate(Failing("inference_timeout"), question, [], EVIDENCE, False, 1.0)
    assert (timeout.value.status, timeout.value.code) == (504, "inference_timeout")
    for reason in ("inference_unavailable", "provider_unreachable", "inference_error"):
        with pytest.raises(InferenceUnavailable) as unavailable:
            generate(Failing(reason), question, [], EVIDENCE, False, 1.0)
        assert (unavailable.value.status, unavailable.value.code) == (503, "inference_unavailable")
    assert ERROR_STATUS["inference_unavailable"] == 503
    assert ERROR_STATUS["inference_timeout"] == 504
