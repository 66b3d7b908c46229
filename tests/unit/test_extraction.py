"""A file's text split into passages (grove_memory.files.extraction): bounded passages whose
byte spans are exactly their text in the original, whatever the spacing between
sentences; HTML's visible text only; unreadable input named as such."""

from __future__ import annotations

import pytest

from grove_memory.files.extraction import MAX_PASSAGE_CHARS, Unreadable, extract, split


def passages_of(data: bytes, media: str = "text/plain") -> list[tuple[str, bytes]]:
    """Each passage's text, and the bytes its span names in ``data``."""
    found = []
    for passage in split(extract(media, data)):
        start, end = passage.span["bytes"]
        found.append((passage.text, data[start:end]))
    return found


def test_a_long_paragraph_is_cut_between_sentences_whatever_their_spacing() -> None:
    # Two spaces after a full stop and single line breaks: one paragraph of 2,700 chars.
    data = ("Restart the gateway first.  Then the worker.\n" * 60).encode()
    passages = split(extract("text/plain", data))
    assert len(passages) == 3
    covered = 0
    for passage in passages:
        start, end = passage.span["bytes"]
        assert 0 < len(passage.text) <= MAX_PASSAGE_CHARS
        assert data[start:end].decode() == passage.text
        assert passage.text[0].isupper() and passage.text.endswith(".")  # whole sentences
        assert not data[covered:start].strip()  # nothing but spacing left out
        covered = end
    assert not data[covered:].strip()


def test_a_word_longer_than_a_passage_is_cut_at_the_limit() -> None:
    data = ("é" * 3000).encode()  # two bytes a character
    found = passages_of(data)
    assert [len(text) for text, _ in found] == [MAX_PASSAGE_CHARS, MAX_PASSAGE_CHARS, 600]
    assert all(span.decode() == text for text, span in found)


def test_html_passages_hold_the_visible_text_and_span_its_source() -> None:
    data = (
        b"<html><head><title>Hidden</title><script>var x = 1;</script></head><body>"
        b"<p>Restart the <b>gateway</b> &amp; the worker.</p></body></html>"
    )
    ((text, span),) = passages_of(data, "text/html")
    assert text == "Restart the gateway & the worker."
    assert span.startswith(b"Restart the <b>gateway</b> &amp;") and b"script" not in span


def test_unreadable_input_is_named() -> None:
    with pytest.raises(Unreadable, match="not UTF-8"):
        extract("text/plain", b"caf\xe9")
    with pytest.raises(Unreadable, match="the PDF cannot be read"):
        extract("application/pdf", b"%PDF-1.4 not really")
