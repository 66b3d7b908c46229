"""``AsyncGrove``: save notes concurrently, then list and search them, awaited.

Run against ``make dev``: ``set -a; . .grove/dev.env; set +a`` (or set ``GROVE_URL`` and
``GROVE_API_KEY``), then ``.venv/bin/python docs/examples/python/async_usage.py``. Prints
how many notes it saved and listed and the best search hit; exits non-zero if they do
not match (or on any error).
"""

from __future__ import annotations

import asyncio
import os
import sys

from grove_client import AsyncGrove

STEPS = ("run the tests", "tag the release", "deploy the release on tuesday")


async def main() -> int:
    url = os.environ.get("GROVE_URL") or os.environ["GROVE_API_URL"]  # dev.env: GROVE_API_URL
    async with AsyncGrove(url, api_key=os.environ["GROVE_API_KEY"]) as grove:
        notebook = await grove.create_notebook("release checklist")
        saved = await asyncio.gather(
            *(grove.remember(step, project_id=notebook.id) for step in STEPS)
        )
        listed = [note.id async for note in grove.list_notes(project_id=notebook.id, limit=2)]
        page = await grove.search("deploy", project_id=notebook.id)
    print(f"saved {len(saved)}, listed {len(listed)}")
    if sorted(map(str, listed)) != sorted(str(note.id) for note in saved) or not page.items:
        print("the notes saved are not the notes listed and found", file=sys.stderr)
        return 1
    print(f"found: {page.items[0].memory.content}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
