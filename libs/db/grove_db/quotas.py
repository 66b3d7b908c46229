"""Per-account quotas: the defaults a service gives its database sessions.

PostgreSQL counts and enforces them (migration 0021: ``account_usage``, triggers, and
SQLSTATE GQ001 when a statement grows a count past its limit). A limit is the account's
own (``grove accounts quota``) or else the session's default, which every service that
stores notes sets from these settings as ``grove.quota_<kind>`` at connection start.
0 means no limit.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic_settings import BaseSettings

#: The kinds PostgreSQL counts per account (``account_usage.kind``).
KINDS = ("notes", "passages", "notebooks", "shares", "conversations", "files")

Count = Annotated[int, Field(ge=0, le=1_000_000_000)]


class QuotaSettings(BaseSettings):
    """``GROVE_QUOTA_*``: default per-account limits (0: none)."""

    quota_notes: Count = 250_000
    quota_note_bytes: Annotated[int, Field(ge=0, le=1 << 50)] = 1 << 30
    #: Passages extracted from files (grove_memory.files.passages), counted apart from notes.
    quota_passages: Count = 250_000
    quota_notebooks: Count = 10_000
    quota_shares: Count = 1_000
    quota_conversations: Count = 10_000
    #: Bytes of uploaded files: every version stored, until the worker purges it.
    quota_file_bytes: Annotated[int, Field(ge=0, le=1 << 50)] = 10 << 30
    #: Records per org project's shared pool (a pool belongs to its org, not an account).
    quota_project_records: Count = 100_000

    def session_settings(self) -> dict[str, str]:
        """The per-session settings that carry the account defaults to PostgreSQL."""
        return {
            "grove.quota_notes": str(self.quota_notes),
            "grove.quota_note_bytes": str(self.quota_note_bytes),
            "grove.quota_passages": str(self.quota_passages),
            "grove.quota_notebooks": str(self.quota_notebooks),
            "grove.quota_shares": str(self.quota_shares),
            "grove.quota_conversations": str(self.quota_conversations),
            "grove.quota_file_bytes": str(self.quota_file_bytes),
        }
