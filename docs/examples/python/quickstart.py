"""The quick start: remember a note, then recall it.

Run against ``make dev``: ``set -a; . .grove/dev.env; set +a`` (or set ``GROVE_URL`` and
``GROVE_API_KEY``), then ``.venv/bin/python docs/examples/python/quickstart.py``. Prints
the recalled note; exits non-zero if it was not recalled (or on any error).
"""

from __future__ import annotations

import os
import sys

from grove_client import Grove


def main() -> int:
    url = os.environ.get("GROVE_URL") or os.environ["GROVE_API_URL"]  # dev.env: GROVE_API_URL
    with Grove(url, api_key=os.environ["GROVE_API_KEY"]) as grove:
        grove.remember("we deploy on tuesdays", kind="decision")
        recalled = grove.recall("when do we deploy?")
    if not recalled.items:
        print("the note was not recalled", file=sys.stderr)
        return 1
    print(recalled.items[0].memory.content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
