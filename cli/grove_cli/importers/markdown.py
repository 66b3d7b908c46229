"""A folder of Markdown files (basic-memory, Obsidian): one note per file or section.

Folders become notebooks (nested as on disk; files at the top are personal notes, or go
in ``--notebook``). A YAML front-matter block gives ``kind`` (or ``type``), ``tags``,
``title`` and ``source``. A file whose note would be over the 6,000-character limit
becomes one note per heading section; a section still over it is skipped and reported,
never truncated. Hidden folders (``.obsidian``, ``.git``) and files that are not
Markdown are skipped and reported.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import ValidationError

from grove_cli.importers.plan import MalformedInput, Notice, Plan, operation_id
from grove_contracts.notebooks import CreateNotebookRequest
from grove_contracts.notes import MAX_CONTENT_CHARS, Kind

SOURCE = "markdown"
SUFFIXES = (".md", ".markdown")
#: Kinds a file may name; a handoff needs a task, which a file does not have.
KINDS = tuple(kind for kind in get_args(Kind) if kind != "handoff")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
MAX_REF_HEADING = 80


def convert(root: Path, notebook: str | None = None) -> Plan:
    """Plan the notes of every Markdown file under ``root``, in path order."""
    plan = Plan()
    top = (notebook,) if notebook else ()
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        for name in sorted(dirs):
            if name.startswith("."):
                plan.skipped.append(Notice(_rel(here / name, root) + "/", "hidden folder"))
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = here / name
            if name.startswith(".") or path.suffix.lower() not in SUFFIXES:
                plan.skipped.append(Notice(_rel(path, root), "not a Markdown file"))
                continue
            _file(plan, path, root, top + path.relative_to(root).parent.parts)
    return plan


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _file(plan: Plan, path: Path, root: Path, notebooks: tuple[str, ...]) -> None:
    rel = _rel(path, root)
    bad = _bad_notebook_name(notebooks)
    if bad:
        plan.skipped.append(Notice(rel, bad))
        return
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        plan.skipped.append(Notice(rel, "not UTF-8 text"))
        return
    meta, body = front_matter(text, rel)
    title = str(meta.get("title") or path.stem)
    fields = {
        "kind": _kind(meta, plan, rel),
        "provenance": {"sourceAgent": SOURCE, "sourceRef": rel + _source(meta)},
    }
    tags = _tags(meta.get("tags"))
    whole = _titled(body.strip(), title) + tags
    if len(whole.strip()) <= MAX_CONTENT_CHARS:
        body_of = {**fields, "content": whole, "operationId": operation_id(SOURCE, rel, "file")}
        plan.add(body_of, rel, notebooks)
        return
    for index, (heading, section) in enumerate(sections(body)):
        where = f"{rel} section {index + 1} ({heading[:MAX_REF_HEADING]})"
        content = _titled(section, title) + tags
        if len(content.strip()) > MAX_CONTENT_CHARS:
            reason = (
                f"section is {len(content.strip())} characters, over the {MAX_CONTENT_CHARS}"
                " limit of a note: not imported (divide it with headings)"
            )
            plan.skipped.append(Notice(where, reason))
            continue
        ref = f"{rel} § {index + 1} {heading[:MAX_REF_HEADING]}" + _source(meta)
        item = {
            **fields,
            "content": content,
            "provenance": {"sourceAgent": SOURCE, "sourceRef": ref},
            "operationId": operation_id(SOURCE, rel, str(index)),
        }
        plan.add(item, where, notebooks)


def _bad_notebook_name(notebooks: tuple[str, ...]) -> str | None:
    """Why a folder cannot be a notebook (the API's message), or None."""
    for name in notebooks:
        try:
            CreateNotebookRequest(name=name)
        except ValidationError as ex:
            message = ex.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
            return f"folder {name[:40]!r} cannot be a notebook: {message}"
    return None


def front_matter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """The YAML front-matter block (``---`` lines) as a mapping, and the text after it.

    Front matter that is not YAML, or not a mapping, stops the import with its line.
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        raise MalformedInput(f"{where} line 1", "front matter has no closing '---' line")
    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as ex:
        mark = getattr(ex, "problem_mark", None)
        line = f" line {mark.line + 2}" if mark is not None else ""
        raise MalformedInput(f"{where}{line}", f"front matter is not valid YAML: {ex}") from ex
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise MalformedInput(f"{where} line 2", "front matter must be a mapping of keys")
    return meta, "".join(lines[end + 1 :])


def _kind(meta: dict[str, Any], plan: Plan, where: str) -> str:
    kind = meta.get("kind", meta.get("type"))
    if kind is None:
        return "fact"
    if isinstance(kind, str) and kind.strip().lower() in KINDS:
        return kind.strip().lower()
    plan.adjusted.append(Notice(where, f"kind {kind!r} is not a Grove kind: saved as fact"))
    return "fact"


def _tags(tags: Any) -> str:
    """A last line ``Tags: #a #b``, so tags stay searchable words of the note."""
    if isinstance(tags, str):
        tags = re.split(r"[,\s]+", tags)
    if not isinstance(tags, list):
        return ""
    names = [str(tag).strip().lstrip("#") for tag in tags if str(tag).strip().lstrip("#")]
    return "\n\nTags: " + " ".join(f"#{name}" for name in names) if names else ""


def _source(meta: dict[str, Any]) -> str:
    source = meta.get("source") or meta.get("url")
    return f" (source: {source})" if source else ""


def _titled(text: str, title: str) -> str:
    """The text under a ``# title`` line, unless it already opens with a top heading."""
    if text.startswith("# ") or not title:
        return text
    return f"# {title}\n\n{text}"


def sections(body: str) -> list[tuple[str, str]]:
    """The body cut before every heading (outside code fences), as (heading, text).

    Text before the first heading is a section of its own; a heading with nothing
    under it joins the section that follows, so no note is a bare heading.
    """
    cuts: list[list[str]] = [[]]
    fenced = False
    for line in body.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and HEADING.match(line) and _has_text(cuts[-1]):
            cuts.append([])
        cuts[-1].append(line)
    return [(_heading(cut), "\n".join(cut).strip()) for cut in cuts if "".join(cut).strip()]


def _has_text(lines: list[str]) -> bool:
    return any(line.strip() and not HEADING.match(line) for line in lines)


def _heading(lines: list[str]) -> str:
    found = next((m for line in lines if (m := HEADING.match(line))), None)
    return found.group(2) if found else "preamble"
