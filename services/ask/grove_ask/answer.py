"""The ``extractive`` answer generator: the evidence's own best sentences, cited exactly.

No text is written: the answer is at most ``MAX_ANSWER_SENTENCES`` sentences taken
verbatim from the evidence, each cited with its note, version and character offsets
(``quote == content[start:end]``, Python string indices). A sentence is scored against
the question by MiniLM cosine similarity (when the model is loaded) plus the share of
the question's content words it contains (lowercase, stop words dropped, light suffix
stemming). Sentences under ``SCORE_FLOOR`` or far below the best one never answer; when
none is left the answer is empty, and the caller reports that there is no evidence.
Near-duplicate sentences (say, the same fact saved twice in other words) are said once
and each cited.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from grove_ask.cancel import Cancellation
from grove_contracts.proposals import ProposalDraft
from grove_memory.notes import duplicates

#: At most this many sentences make an answer.
MAX_ANSWER_SENTENCES = 3
#: Sentences considered per call (in evidence order); the rest are not scored.
MAX_CANDIDATE_SENTENCES = 256
#: The absolute relevance floor (scores run from 0 to 1).
SCORE_FLOOR = 0.3
#: A sentence must also score at least this share of the best sentence's score.
RELATIVE_FLOOR = 0.6
#: Weight of semantic similarity against term overlap when the model is loaded.
SEMANTIC_WEIGHT = 0.6
#: Without the model, overlap alone must reach this share of the question's words.
OVERLAP_ONLY_FLOOR = 0.5

WORD = re.compile(r"\w+", re.UNICODE)
# A sentence ends at . ! ? (with any closing quotes or brackets) before white space.
SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)")
LINE = re.compile(r"[^\n]+")
# Markdown list and heading markers are left out of the quote.
LEADING_MARKUP = re.compile(r"(?:[-*+>#]+|\d+[.)])\s+")
SUFFIXES = ("ing", "ied", "ies", "ed", "es", "ly", "s")
STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would
    you your yours yourself yourselves tell know""".split()
)


class Embedder(Protocol):
    """Unit vectors for texts within ``timeout`` seconds (the service's ``Batcher``)."""

    def embed(self, texts: list[str], timeout: float | None) -> list[list[float]]:
        """One normalized vector per text, in order."""
        ...


@dataclass(frozen=True)
class Evidence:
    """One revision of a note offered as evidence."""

    note_id: str
    version: int
    content: str


@dataclass(frozen=True)
class Citation:
    """A verbatim span of one evidence revision: ``content[start:end] == quote``."""

    note_id: str
    version: int
    quote: str
    start: int
    end: int


@dataclass(frozen=True)
class NotebookRef:
    """A notebook in the conversation's scope that a proposal may name."""

    id: str
    name: str


@dataclass(frozen=True)
class Answer:
    """Answer text (empty when the evidence does not answer), its citations, its writer,
    and the changes to the notes it offers (each valid against the contract), with how
    many the writer offered that were invalid and dropped."""

    text: str
    citations: list[Citation]
    generator: str = "extractive"
    proposals: list[ProposalDraft] = field(default_factory=list)
    proposals_dropped: int = 0


class Generator(Protocol):
    """Writes an answer from evidence, every citation a verbatim span of it."""

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[Evidence],
        markdown: bool,
        timeout: float | None,
        cancellation: Cancellation | None = None,
        notebooks: Sequence[NotebookRef] = (),
    ) -> Answer:
        """The answer; ``TimeoutError`` past ``timeout``; ``cancellation`` stops it early.

        ``notebooks`` are the ones its proposals may file notes into.
        """
        ...


@dataclass(frozen=True)
class _Sentence:
    rank: int  # the evidence item's position: best evidence first
    start: int
    end: int
    text: str


def stem(word: str) -> str:
    """A crude English stem: enough to match ``deploys``/``deployed``/``deploying``."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """The stems of the text's content words (lowercase, stop words dropped)."""
    words = (w for w in WORD.findall(text.lower()) if w not in STOP_WORDS)
    return {stem(w) for w in words}


def sentence_spans(content: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence: lines split after . ! ?, trimmed, markup left out."""
    spans = []
    for line in LINE.finditer(content):
        start = _after_markup(content, line.start(), line.end())
        for boundary in [*SENTENCE_END.finditer(content, start, line.end()), None]:
            end = boundary.end() if boundary else line.end()
            span = _trimmed(content, start, end)
            if span:
                spans.append(span)
            if boundary:
                start = boundary.end()
    return spans


def _after_markup(content: str, start: int, end: int) -> int:
    """Where a line's text begins after indentation and a list or heading marker."""
    while start < end and content[start].isspace():
        start += 1
    markup = LEADING_MARKUP.match(content, start, end)
    return markup.end() if markup else start


def _trimmed(content: str, start: int, end: int) -> tuple[int, int] | None:
    """The span without surrounding white space; None if it holds no word."""
    text = content[start:end]
    start += len(text) - len(text.lstrip())
    end -= len(text) - len(text.rstrip())
    return (start, end) if WORD.search(content, start, end) else None


class Extractive:
    """Picks the evidence sentences that best answer the question and cites them."""

    name = "extractive"

    def __init__(self, embedder: Embedder | None) -> None:
        self._embedder = embedder

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[Evidence],
        markdown: bool,
        timeout: float | None,
        cancellation: Cancellation | None = None,
        notebooks: Sequence[NotebookRef] = (),
    ) -> Answer:
        """The answer; raises ``TimeoutError`` if the model misses ``timeout``.

        It runs on the CPU for milliseconds, so ``cancellation`` is not consulted. It
        proposes no changes, so ``notebooks`` is not either.
        """
        candidates = self._sentences(evidence)
        if not candidates:
            return Answer("", [])
        scores, vectors = self._scores(question, previous, candidates, timeout)
        chosen = _choose(candidates, scores, vectors)
        texts = [group[0].text for group in chosen]
        text = "\n".join(f"- {t}" for t in texts) if markdown else " ".join(texts)
        citations = [
            Citation(evidence[s.rank].note_id, evidence[s.rank].version, s.text, s.start, s.end)
            for group in chosen
            for s in group
        ]
        return Answer(text, citations)

    def _sentences(self, evidence: Sequence[Evidence]) -> list[_Sentence]:
        found: list[_Sentence] = []
        for rank, item in enumerate(evidence):
            for start, end in sentence_spans(item.content):
                found.append(_Sentence(rank, start, end, item.content[start:end]))
        return found[:MAX_CANDIDATE_SENTENCES]

    def _scores(
        self,
        question: str,
        previous: Sequence[str],
        candidates: list[_Sentence],
        timeout: float | None,
    ) -> tuple[list[float], list[list[float]] | None]:
        """Each candidate's score, and the candidates' vectors (None without the model)."""
        wanted = terms(question)
        if len(wanted) < 2 and previous:
            # "and the second one?": borrow the words of the latest earlier question.
            wanted |= terms(previous[-1])
        overlap = [_overlap(wanted, s.text) for s in candidates]
        if self._embedder is None:
            return [o if o >= OVERLAP_ONLY_FLOOR else 0.0 for o in overlap], None
        vectors = self._embedder.embed([question, *(s.text for s in candidates)], timeout)
        query = vectors[0]
        similarity = [sum(a * b for a, b in zip(query, v, strict=True)) for v in vectors[1:]]
        scores = [
            SEMANTIC_WEIGHT * max(sim, 0.0) + (1 - SEMANTIC_WEIGHT) * over
            for sim, over in zip(similarity, overlap, strict=True)
        ]
        return scores, vectors[1:]


def _overlap(wanted: set[str], sentence: str) -> float:
    """The share of the question's content words the sentence contains."""
    if not wanted:
        return 0.0
    return len(wanted & terms(sentence)) / len(wanted)


def _choose(
    candidates: list[_Sentence], scores: list[float], vectors: list[list[float]] | None
) -> list[list[_Sentence]]:
    """The best few above both floors, in reading order, each with the near-duplicates
    that say the same (first the sentence the answer says, then the others it cites).

    Reading order: evidence rank (best note first), then position within the note. A
    sentence that says what a chosen one says (``grove_memory.notes.duplicates``' rules: the
    proposer's with both vectors, the save warning's wording alone without them) takes
    no place of its own: the answer says it once and cites both.
    """
    best = max(scores, default=0.0)
    floor = max(SCORE_FLOOR, best * RELATIVE_FLOOR)
    ranked = sorted(
        (i for i, score in enumerate(scores) if score >= floor and score > 0),
        key=lambda i: -scores[i],
    )
    groups: list[list[int]] = []
    for index in ranked:
        same = next((g for g in groups if _says_the_same(candidates, vectors, g[0], index)), None)
        if same is not None:
            same.append(index)
        elif len(groups) < MAX_ANSWER_SENTENCES:
            groups.append([index])
    groups.sort(key=lambda g: (candidates[g[0]].rank, candidates[g[0]].start))
    return [[candidates[i] for i in group] for group in groups]


def _says_the_same(
    candidates: list[_Sentence], vectors: list[list[float]] | None, first: int, second: int
) -> bool:
    """Whether two candidate sentences are near-duplicates (``grove_memory.notes.duplicates``)."""
    a, b = candidates[first].text, candidates[second].text
    if a.casefold() == b.casefold():
        return True
    lexical = duplicates.lexical_similarity(a, b)
    if vectors is None:
        return lexical >= duplicates.SAVE_LEXICAL_THRESHOLD
    cosine = sum(x * y for x, y in zip(vectors[first], vectors[second], strict=True))
    return duplicates.is_near_duplicate(cosine, lexical)
