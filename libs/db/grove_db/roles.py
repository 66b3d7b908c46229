"""Start-up checks of the database roles services connect as."""

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


#: The only functions grove-share's role may call that run with other rights.
SHARE_FUNCTIONS = ("grove_public_share", "grove_public_share_notes", "grove_public_rate_hit")
#: The only ones grove-console's role may call: its server-side sessions.
CONSOLE_FUNCTIONS = (
    "grove_console_session_drop",
    "grove_console_session_get",
    "grove_console_session_put",
)

DEFINER_ROLE_CHECK = """
    SELECT r.rolname, r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolcreatedb,
           EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
                     AND n.nspname NOT LIKE 'pg_toast%%'
                     AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
                     -- An extension's own views (Citus's citus_tables and citus_schemas,
                     -- readable by PUBLIC) are its catalog, not Grove's data.
                     AND NOT EXISTS (SELECT 1 FROM pg_depend d
                                     WHERE d.classid = 'pg_class'::regclass
                                       AND d.objid = c.oid AND d.deptype = 'e')
                     AND (pg_has_role(r.rolname, c.relowner, 'MEMBER')
                          OR has_table_privilege(r.rolname, c.oid,
                               'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
                          OR has_any_column_privilege(r.rolname, c.oid,
                               'SELECT, INSERT, UPDATE, REFERENCES'))) AS tables,
           ARRAY(SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                 WHERE n.nspname = 'public' AND p.prosecdef
                   AND has_function_privilege(r.rolname, p.oid, 'EXECUTE')
                 ORDER BY 1) AS definers
    FROM pg_roles r WHERE r.rolname = current_user
"""


def check_share_role(url: str) -> str:
    """grove-share's role name, if it can do nothing but call the public share functions."""
    return check_definer_role(
        url, "grove-share", SHARE_FUNCTIONS, "GROVE_SHARE_ROLE (or --share-role)"
    )


def check_console_role(url: str) -> str:
    """grove-console's role name, if it can do nothing but call its session functions."""
    return check_definer_role(
        url, "grove-console", CONSOLE_FUNCTIONS, "GROVE_CONSOLE_ROLE (or --console-role)"
    )


def check_definer_role(url: str, service: str, functions: tuple[str, ...], setting: str) -> str:
    """Return the role's name, or raise unless it can do nothing but call ``functions``:
    no superuser or BYPASSRLS, no role or database creation, no privilege on any table or
    column, no other ``SECURITY DEFINER`` function."""
    with psycopg.connect(url, connect_timeout=10) as conn:
        row = conn.execute(DEFINER_ROLE_CHECK).fetchone()
    assert row is not None
    name, superuser, bypass, createrole, createdb, tables, definers = row
    wider = [
        reason
        for reason, held in (
            ("is a superuser", superuser),
            ("has BYPASSRLS", bypass),
            ("may create roles", createrole),
            ("may create databases", createdb),
            (f"holds privileges on tables (it must only call {service}'s functions)", tables),
        )
        if held
    ]
    others = sorted(set(definers) - set(functions))
    if others:
        wider.append(f"may call other SECURITY DEFINER functions ({', '.join(others)})")
    if wider:
        raise UnsafeRoleError(
            f"refusing to run: database role {name!r} has wider rights than {service}"
            f" needs: it {'; it '.join(wider)}"
        )
    missing = sorted(set(functions) - set(definers))
    if missing:
        raise UnsafeRoleError(
            f"database role {name!r} may not call {', '.join(missing)}: run `grove migrate`"
            f" with {setting} naming it"
        )
    return str(name)
