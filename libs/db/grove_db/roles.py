"""Start-up check that the runtime role is subject to row-level security."""

from __future__ import annotations

import psycopg

from grove_db.errors import UnsafeRoleError

ROLE_CHECK = """
    SELECT r.rolname, r.rolsuper, r.rolbypassrls,
           EXISTS (SELECT 1 FROM pg_tables t
                   WHERE t.schemaname = 'public'
                     AND pg_has_role(r.rolname, t.tableowner, 'MEMBER')) AS owns_tables
    FROM pg_roles r WHERE r.rolname = current_user
"""


def check_runtime_role(url: str) -> str:
    """Return the runtime role's name, or raise if it could bypass row-level security."""
    with psycopg.connect(url, connect_timeout=10) as conn:
        row = conn.execute(ROLE_CHECK).fetchone()
    assert row is not None
    name, superuser, bypass, owns = row
    if superuser:
        raise UnsafeRoleError(f"refusing to run: database role {name!r} is a superuser")
    if bypass:
        raise UnsafeRoleError(f"refusing to run: database role {name!r} has BYPASSRLS")
    if owns:
        raise UnsafeRoleError(
            f"refusing to run: database role {name!r} owns (or may act as the owner of)"
            " Grove's tables"
        )
    return str(name)
