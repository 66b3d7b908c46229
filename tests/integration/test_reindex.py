"""``grove reindex`` queues re-embedding of current revisions and reports progress."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime

import psycopg

from tests.support.clients import data_of
from tests.support.processes import run_script
from tests.support.tenants import Tenant
from tests.support.waiting import wait_until


def grove(tenant: Tenant, *args: str) -> subprocess.CompletedProcess[str]:
    return run_script(
        "grove",
        *args,
        env={"GROVE_MIGRATION_DATABASE_URL": tenant.database.migration_url},
        timeout=120,
    )


def current_embeddings_since(tenant: Tenant, since: datetime) -> int:
    """Embeddings of the notes' current revisions written at or after ``since``."""
    superuser = tenant.database.grove_superuser_url
    with psycopg.connect(superuser) as conn:
        row = conn.execute(
            "SELECT count(*) FROM embeddings e JOIN memories m"
            " ON m.id = e.memory_id AND m.version = e.version"
            " WHERE e.account_id = %s AND e.profile = 'minilm' AND e.created_at >= %s",
            (tenant.account_id, since),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_reindex_requeues_current_revisions_and_waits_for_them(hybrid_tenant: Tenant) -> None:
    notes = [hybrid_tenant.client.save(f"reindexed note {i}") for i in range(3)]
    hybrid_tenant.client.patch(f"/v1/memories/{notes[0]['id']}", {"content": "corrected"})
    wait_until(
        lambda: all(
            data_of(hybrid_tenant.client.get(f"/v1/memories/{n['id']}"))["indexing"] == "ready"
            for n in notes
        ),
        timeout=60,
    )
    account = str(hybrid_tenant.account_id)

    nothing_missing = grove(hybrid_tenant, "reindex", "--profile", "minilm", "--account", account)
    assert nothing_missing.returncode == 0, nothing_missing.stderr
    assert "queued 0 embedding job(s)" in nothing_missing.stdout

    before = datetime.now(UTC)
    forced = grove(
        hybrid_tenant, "reindex", "--profile", "minilm", "--account", account, "--force", "--wait"
    )
    assert forced.returncode == 0, forced.stderr
    assert "queued 3 embedding job(s)" in forced.stdout
    assert forced.stdout.strip().splitlines()[-1] == "embedded 3/3, failed 0"
    assert current_embeddings_since(hybrid_tenant, before) == 3


def test_reindex_rejects_a_malformed_profile_name(hybrid_tenant: Tenant) -> None:
    result = grove(hybrid_tenant, "reindex", "--profile", "Robert'); DROP")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == "grove: profile: lowercase letters, digits and _ only"
