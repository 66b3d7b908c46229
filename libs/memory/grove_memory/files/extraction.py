"""A file's text, and its split into passages: pure functions over the file's bytes.

``extract`` reads the text of one accepted media type as segments that know where they
came from: a PDF's text page by page (pypdf), an HTML page's visible text node by node
(the standard library's HTML tokenizer, whose positions give each node's bytes in the
source), and the paragraphs of plain text, Markdown and JSON with their exact bytes.
``split`` packs the segments into passages of at most ``MAX_PASSAGE_CHARS`` characters,
each with its span: the pages it was read from, or the bytes of the original it covers.
Anything that cannot be read raises ``Unreadable`` with a reason for the file's owner.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser

from grove_contracts.files import media_type_of
from grove_memory.errors import ServiceError

#: A passage's text at most (MiniLM reads about 256 tokens, some 1,000 characters).
MAX_PASSAGE_CHARS = 1_200
#: Passages one file version may make; a longer text fails with a clear reason.
MAX_PASSAGES = 2_000
#: Pages of a PDF read at most.
MAX_PDF_PAGES = 1_000

_PARAGRAPHS = re.compile(r"\S(?:.*?\S)??(?=\s*\n\s*\n|\s*\Z)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WHITESPACE = re.compile(r"\s+")


class Unreadable(ServiceError):
    """The file's text cannot be extracted (``reason`` says why, for its owner: it is the
    file's ``indexingError``)."""

    code = "file_unreadable"
    status = 422

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Segment:
    """A run of text and where it is: a PDF page (1-based), or the bytes
    ``[start, end)`` of the original it was read from."""

    text: str
    page: int | None = None
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Passage:
    """One passage: its text and its span (``pages`` first and last, or ``bytes``)."""

    text: str
    span: dict[str, list[int]]


def extract(media_type: str, data: bytes) -> list[Segment]:
    """The text of ``data`` as segments, in order; ``Unreadable`` if it cannot be read."""
    kind = media_type_of(media_type)
    if kind == "application/pdf":
        return _pdf(data)
    text = _decoded(data)
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # bytes before the text
    if kind == "text/html":
        return _html(text, bom, len(data))
    return _paragraphs(text, bom)


#: Between two segments of one passage (paragraphs, or blocks of a page).
JOIN = "\n\n"


def split(segments: list[Segment]) -> list[Passage]:
    """Pack ``segments`` into passages of at most ``MAX_PASSAGE_CHARS`` characters (a
    segment longer than that is cut at sentence ends, else at spaces), never across a
    PDF's pages, so each passage cites one page; ``Unreadable`` past ``MAX_PASSAGES``."""
    passages: list[Passage] = []
    pending: list[Segment] = []
    size = 0
    for segment in (piece for s in segments for piece in _pieces(s)):
        full = size + len(JOIN) + len(segment.text) > MAX_PASSAGE_CHARS
        if pending and (full or segment.page != pending[-1].page):
            passages.append(_passage(pending))
            pending, size = [], 0
        pending.append(segment)
        size += len(segment.text) + (len(JOIN) if size else 0)
        if len(passages) > MAX_PASSAGES:
            break
    if pending:
        passages.append(_passage(pending))
    if len(passages) > MAX_PASSAGES:
        raise Unreadable(f"the file's text makes more than {MAX_PASSAGES} passages")
    return passages


def _passage(segments: list[Segment]) -> Passage:
    text = JOIN.join(s.text for s in segments)
    pages = [s.page for s in segments if s.page is not None]
    if pages:
        return Passage(text, {"pages": [pages[0], pages[-1]]})
    starts = [s.start for s in segments if s.start is not None]
    ends = [s.end for s in segments if s.end is not None]
    return Passage(text, {"bytes": [min(starts), max(ends)]})


def _pieces(segment: Segment) -> Iterator[Segment]:
    """``segment`` cut to at most ``MAX_PASSAGE_CHARS`` a piece (``_cuts``). Each piece
    keeps the segment's page, or its bytes (exact when the segment's text is its source,
    as for plain text; else the whole segment's)."""
    text = segment.text
    if len(text) <= MAX_PASSAGE_CHARS:
        yield segment
        return
    exact = segment.start is not None and segment.end is not None
    exact = exact and len(text.encode()) == (segment.end or 0) - (segment.start or 0)
    chars, size = 0, segment.start or 0  # the bytes before text[chars:], counted once
    for begin, end in _cuts(text):
        piece = text[begin:end]
        if segment.page is not None or not exact:
            yield Segment(piece, segment.page, segment.start, segment.end)
            continue
        size += len(text[chars:begin].encode())
        chars = begin
        yield Segment(piece, None, size, size + len(piece.encode()))


def _cuts(text: str) -> Iterator[tuple[int, int]]:
    """``text`` as ``[start, end)`` ranges of at most ``MAX_PASSAGE_CHARS``: whole
    sentences packed together, a longer sentence cut at its last space before the limit
    (at the limit, for one enormous word). Each range is of the text as it is, its own
    spacing and line breaks kept."""
    start = end = 0
    for part_start, part_end in _bounded(text):
        if end > start and part_end - start > MAX_PASSAGE_CHARS:
            yield start, end
            start = part_start
        elif end == start:
            start = part_start
        end = part_end
    if end > start:
        yield start, end


def _bounded(text: str) -> Iterator[tuple[int, int]]:
    """The sentences of ``text`` as ranges, each cut to at most ``MAX_PASSAGE_CHARS``."""
    at = 0
    ends = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text)]
    for stop, after in [*ends, (len(text), len(text))]:
        start = at
        while stop - start > MAX_PASSAGE_CHARS:
            cut = text.rfind(" ", start, start + MAX_PASSAGE_CHARS + 1)
            cut = cut if cut > start else start + MAX_PASSAGE_CHARS
            yield start, cut
            start = cut
            while start < stop and text[start].isspace():
                start += 1
        if stop > start:
            yield start, stop
        at = after


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")
    except UnicodeDecodeError as ex:
        raise Unreadable(f"the file is not UTF-8 text (a bad byte at offset {ex.start})") from ex


def _paragraphs(text: str, offset: int) -> list[Segment]:
    """Blank-line separated paragraphs with their exact bytes in the original (whose
    text starts ``offset`` bytes in)."""
    segments = []
    chars = size = 0  # bytes before text[chars:]
    for match in _PARAGRAPHS.finditer(text):
        size += len(text[chars : match.start()].encode())
        length = len(match.group().encode())
        segments.append(Segment(match.group(), start=offset + size, end=offset + size + length))
        chars, size = match.end(), size + length
    return segments


#: Elements whose text is never shown.
_HIDDEN = {"script", "style", "template", "noscript", "head", "title", "svg", "math"}
#: Elements that start a new block of text (a new segment).
_BLOCKS = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "li",
    "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th", "pre", "blockquote", "br",
    "hr", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "form", "body",
}  # fmt: skip


class _Text(HTMLParser):
    """Visible text of an HTML page, a segment per block, each with its source bytes."""

    def __init__(self, source: str, offset: int) -> None:
        super().__init__(convert_charrefs=True)
        self.line_starts = _line_starts(source)
        self.source = source
        # The last position measured, in characters and bytes: positions only move
        # forward, so each is measured from the one before.
        self.chars, self.bytes = 0, offset
        self.segments: list[Segment] = []
        self.hidden = 0
        self.words: list[str] = []
        self.start: int | None = None

    def _position(self) -> int:
        """Byte offset in the original of the tokenizer's current position."""
        line, column = self.getpos()
        char = self.line_starts[line - 1] + column
        self.bytes += len(self.source[self.chars : char].encode())
        self.chars = char
        return self.bytes

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self.hidden += 1
        if tag in _BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN and self.hidden:
            self.hidden -= 1
        if tag in _BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.hidden or not data.strip():
            return
        if self.start is None:
            self.start = self._position()
        self.words.append(data)

    def _flush(self, end: int | None = None) -> None:
        """End the block: its text runs from its first text's position to the tag that
        ends it (``end``: the end of the page)."""
        text = _WHITESPACE.sub(" ", "".join(self.words)).strip()
        if text and self.start is not None:
            stop = self._position() if end is None else end
            self.segments.append(Segment(text, start=self.start, end=stop))
        self.words, self.start = [], None


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer("\n", text):
        starts.append(match.end())
    return starts


def _html(text: str, offset: int, size: int) -> list[Segment]:
    parser = _Text(text, offset)
    parser.feed(text)
    parser.close()
    parser._flush(end=size)
    return parser.segments


def _pdf(data: bytes) -> list[Segment]:
    """Each page's text (pypdf), a segment per paragraph; encrypted or malformed PDFs
    are ``Unreadable``, whatever pypdf raises."""
    from pypdf import PdfReader  # only the worker extracts: the api need not load it

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise Unreadable("the PDF is encrypted")
        if len(reader.pages) > MAX_PDF_PAGES:
            raise Unreadable(f"the PDF has more than {MAX_PDF_PAGES} pages")
        segments = []
        for number, page in enumerate(reader.pages, 1):
            for paragraph in _PARAGRAPHS.finditer(page.extract_text() or ""):
                text = _WHITESPACE.sub(" ", paragraph.group()).strip()
                if text:
                    segments.append(Segment(text, page=number))
    except Unreadable:
        raise
    except Exception as ex:  # a malformed PDF may raise anything from deep in the parser
        raise Unreadable(f"the PDF cannot be read ({type(ex).__name__})") from ex
    return segments
