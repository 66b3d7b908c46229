"""The extractive generator: verbatim sentences, exact offsets, floors and ordering."""

from __future__ import annotations

import pytest

from grove_ask.answer import Evidence, Extractive, sentence_spans, stem, terms
from grove_ask.settings import AskSettings

DEPLOY = Evidence("n1", 3, "We deploy with Argo CD every Tuesday. The office plant needs water.")
RELEASE = Evidence("n2", 1, "# Releases\n\n- Release notes go to #releases after each deploy.")
TEA = Evidence("n3", 1, "Alice prefers green tea in the morning.")


class Keywords:
    """An in-memory embedder: one dimension per keyword, so similarity is predictable."""

    WORDS = ("deploy", "tea", "release")

    def embed(self, texts: list[str], timeout: float | None) -> list[list[float]]:
        vectors = []
        for text in texts:
            raw = [1.0 if word in text.lower() else 0.0 for word in self.WORDS]
            norm = sum(x * x for x in raw) ** 0.5 or 1.0
            vectors.append([x / norm for x in raw])
        return vectors


def test_sentences_are_split_trimmed_and_stripped_of_list_and_heading_markers() -> None:
    content = "  First one.  Second one? Third!\n\n- a bullet\n## Heading\n1. numbered item"
    spans = sentence_spans(content)
    assert [content[s:e] for s, e in spans] == [
        "First one.",
        "Second one?",
        "Third!",
        "a bullet",
        "Heading",
        "numbered item",
    ]


def test_terms_drop_stop_words_and_share_stems() -> None:
    assert terms("When do we deploy?") == {"deploy"}
    assert stem("deploys") == stem("deployed") == stem("deploying") == "deploy"


@pytest.mark.parametrize("embedder", [Keywords(), None], ids=["similarity", "overlap-only"])
def test_answer_sentences_are_verbatim_and_cited_at_exact_offsets(
    embedder: Keywords | None,
) -> None:
    evidence = [DEPLOY, RELEASE, TEA]
    answer = Extractive(embedder).answer("When do we deploy?", [], evidence, False, 5)
    assert answer.citations
    assert "We deploy with Argo CD every Tuesday." in answer.text
    assert "plant" not in answer.text and "tea" not in answer.text
    contents = {(e.note_id, e.version): e.content for e in evidence}
    for citation in answer.citations:
        content = contents[(citation.note_id, citation.version)]
        assert content[citation.start : citation.end] == citation.quote
        assert citation.quote in answer.text
    # Reading order: the best-ranked evidence first.
    assert answer.citations[0].note_id == "n1"


def test_nothing_above_the_floor_gives_an_empty_answer() -> None:
    answer = Extractive(Keywords()).answer("capital of France", [], [DEPLOY, TEA], False, 5)
    assert answer.text == "" and answer.citations == []


def test_markdown_answers_are_one_bullet_per_cited_sentence() -> None:
    answer = Extractive(None).answer("green tea", [], [TEA], True, 5)
    assert answer.text == "- Alice prefers green tea in the morning."


def test_a_question_without_content_words_borrows_the_previous_questions() -> None:
    previous = ["what does Alice drink?"]
    assert Extractive(None).answer("and then?", [], [TEA], False, 5).text == ""
    answer = Extractive(None).answer("and then?", previous, [TEA], False, 5)
    assert answer.text == TEA.content


def test_the_openai_generator_needs_its_endpoint_and_model_at_start_up() -> None:
    with pytest.raises(ValueError) as caught:
        AskSettings(answer_generator="openai")
    assert (
        "the openai answer generator needs GROVE_ANSWER_OPENAI_BASE_URL,"
        " GROVE_ANSWER_OPENAI_MODEL" in str(caught.value)
    )
    with pytest.raises(ValueError, match="must start with http"):
        AskSettings(
            answer_generator="openai",
            answer_openai_base_url="localhost:8000/v1",
            answer_openai_model="m",
        )
    configured = AskSettings(
        answer_generator="openai",
        answer_openai_base_url="http://127.0.0.1:8000/v1",
        answer_openai_model="m",
    )
    assert configured.answer_openai_api_key is None  # a key is optional (local servers)
    assert AskSettings().answer_generator == "extractive"


@pytest.mark.parametrize("embedder", [Keywords(), None], ids=["similarity", "overlap-only"])
def test_near_duplicate_sources_are_said_once_and_both_cited(embedder: Keywords | None) -> None:
    first = Evidence("n1", 2, "We deploy billing with Argo CD every Tuesday.")
    again = Evidence("n2", 1, "Every Tuesday we deploy billing with Argo CD.")
    evidence = [first, again, TEA]
    answer = Extractive(embedder).answer("When do we deploy billing?", [], evidence, False, 5)
    assert answer.text == "We deploy billing with Argo CD every Tuesday."
    assert [(c.note_id, c.quote) for c in answer.citations] == [
        ("n1", first.content),
        ("n2", again.content),
    ]
    for citation in answer.citations:
        assert citation.start == 0 and citation.end == len(citation.quote)


def test_a_different_fact_in_similar_words_is_still_said() -> None:
    # The same template with another value is no duplicate (duplicates.py's hard negatives).
    tuesday = Evidence("n1", 1, "We deploy billing with Argo CD every Tuesday at 10:00.")
    friday = Evidence("n2", 1, "We deploy search with Argo CD every Friday at 15:00.")
    answer = Extractive(None).answer(
        "When do we deploy with Argo CD?", [], [tuesday, friday], False, 5
    )
    assert answer.text == f"{tuesday.content} {friday.content}"
    assert len(answer.citations) == 2
