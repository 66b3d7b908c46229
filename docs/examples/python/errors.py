"""Catching Grove's typed errors: each error answer raises a ``GroveError`` subclass
carrying ``code``, ``message``, ``status`` and ``request_id``.

Run against ``make dev``: ``set -a; . .grove/dev.env; set +a`` (or set ``GROVE_URL`` and
``GROVE_API_KEY``), then ``.venv/bin/python docs/examples/python/errors.py``. Prints one
line per error caught; exits non-zero if an expected error was not raised.
"""

from __future__ import annotations

import os
import sys
import uuid

from grove_client import AuthError, Conflict, Grove, GroveError, NotFound, ValidationError


def main() -> int:
    url = os.environ.get("GROVE_URL") or os.environ["GROVE_API_URL"]  # dev.env: GROVE_API_URL
    with Grove(url, api_key=os.environ["GROVE_API_KEY"]) as grove:
        try:
            grove.get(uuid.uuid4())
            return fail("NotFound")
        except NotFound as ex:
            print(f"NotFound: {ex.code} {ex.status} (request {ex.request_id})")

        try:
            grove.remember("   ")
            return fail("ValidationError")
        except ValidationError as ex:
            fields = [detail.get("field") for detail in ex.details]
            print(f"ValidationError: {ex.code} {ex.status} fields={fields}")

        note = grove.remember("we deploy on tuesdays")
        grove.update(note.id, content="we deploy on wednesdays", expected_version=note.version)
        try:
            grove.update(note.id, content="we deploy on fridays", expected_version=note.version)
            return fail("Conflict")
        except Conflict as ex:  # someone changed it since we read it: read it again
            current = grove.get(note.id)
            print(f"Conflict: {ex.code} {ex.status}, now version {current.version}")

    with Grove(url, api_key="grv_not_a_key") as stranger:
        try:
            stranger.list_notes_page()
            return fail("AuthError")
        except AuthError as ex:
            print(f"AuthError: {ex.code} {ex.status}")
        except GroveError as ex:  # any other family: the base class catches them all
            print(f"unexpected: {ex}", file=sys.stderr)
            return 1
    return 0


def fail(expected: str) -> int:
    print(f"expected {expected}, but the call succeeded", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
