"""Files in the export and back (``grove import``): each live file the caller may read is
exported with its current version's bytes in chunk lines, and a restore writes it again,
byte for byte, under its mapped ID and in its notebook, with its extraction queued; a
re-run skips it, and a file whose bytes do not match its size and sha256 stops the restore
at its line with nothing of it written."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

from grove_cli import admin
from grove_memory.files.blobs import CHUNK_BYTES
from grove_memory.portability.restore import mapped_id
from tests.support.clients import data_of
from tests.support.files import uploaded
from tests.support.portability import export, grove_import, restored, write
from tests.support.tenants import Tenant

#: Three chunks: two full ones and a short one.
BIG = b"".join(b"Line %06d of the runbook.\n" % i for i in range(24_000))
assert 2 * CHUNK_BYTES < len(BIG) < 3 * CHUNK_BYTES


def test_files_travel_in_the_export_and_come_back_byte_for_byte(
    make_tenant: Any, database: Any, tmp_path: Path
) -> None:
    source: Tenant = make_tenant()
    notebook = source.notebook("runbooks")
    big = uploaded(source.client, BIG, name="big.txt", projectId=notebook)
    small = uploaded(source.client, b"One short note.", name="small.txt")
    lines = export(source)
    kinds = [line["type"] for line in lines]
    assert kinds[-6:] == ["file", "file_chunk", "file_chunk", "file_chunk", "file", "file_chunk"]
    big_line = next(line for line in lines if line.get("file", {}).get("id") == big["id"])
    assert big_line["chunks"] == 3 and big_line["file"]["sha256"] == hashlib.sha256(BIG).hexdigest()
    chunks = [
        line for line in lines if line["type"] == "file_chunk" and line["fileId"] == big["id"]
    ]
    assert [c["index"] for c in chunks] == [0, 1, 2]
    assert b"".join(base64.b64decode(c["data"]) for c in chunks) == BIG
    # A key granted only the notebook exports its file, not the personal one.
    notebook_key = source.key(personal=False, notebook_ids=[uuid.UUID(notebook)])
    scoped = [
        line
        for line in export(Tenant(source.account_id, source.key_id, notebook_key, source.database))
        if line["type"] == "file"
    ]
    assert [line["file"]["id"] for line in scoped] == [big["id"]]

    target: Tenant = make_tenant()
    path = write(tmp_path / "export.ndjson", lines)
    output = restored(database, path, target.account_id)
    assert "2 file(s); already present:" in output and "0 file(s);" in output
    files = {f["name"]: f for f in data_of(target.client.get("/v1/files"))["items"]}
    assert files["big.txt"]["id"] == str(mapped_id(target.account_id, uuid.UUID(big["id"])))
    assert files["big.txt"]["projectId"] == str(mapped_id(target.account_id, uuid.UUID(notebook)))
    assert (files["small.txt"]["projectId"], files["small.txt"]["version"]) == (None, 1)
    assert files["big.txt"]["indexing"] == "pending"  # its extraction is queued
    original = target.client.get(f"/v1/files/{files['big.txt']['id']}/original")
    assert original.content == BIG
    again = restored(database, path, target.account_id)
    assert "0 file(s); already present:" in again and "2 file(s); not restored" in again
    assert len(data_of(target.client.get("/v1/files"))["items"]) == 2
    assert small["id"] not in {f["id"] for f in files.values()}  # a new ID in a new account


def test_a_file_whose_bytes_do_not_match_stops_the_restore_at_its_line(
    make_tenant: Any, database: Any, tmp_path: Path
) -> None:
    source: Tenant = make_tenant()
    uploaded(source.client, b"The gateway restarts at two.", name="gateway.txt")
    lines = export(source)
    (chunk,) = [line for line in lines if line["type"] == "file_chunk"]
    chunk["data"] = base64.b64encode(b"The gateway restarts at six.").decode()
    target: Tenant = make_tenant()
    result = grove_import(database, write(tmp_path / "bad.ndjson", lines), target.account_id)
    assert result.returncode == 1
    number = next(i for i, line in enumerate(lines, start=1) if line["type"] == "file")
    assert result.stderr.startswith(f"grove: line {number}: "), result.stderr
    assert "do not match its size and sha256" in result.stderr
    assert data_of(target.client.get("/v1/files"))["items"] == []
    # A chunk out of place, and an export that ends inside a file, stop it too.
    truncated = [line for line in lines if line["type"] != "file_chunk"]
    result = grove_import(database, write(tmp_path / "cut.ndjson", truncated), target.account_id)
    assert result.returncode == 1 and result.stderr.startswith("grove: line "), result.stderr
    assert "ends inside file" in result.stderr
    stray = [
        *lines[:1],
        {"type": "file_chunk", "fileId": str(uuid.uuid4()), "index": 0, "data": "eA=="},
    ]
    result = grove_import(database, write(tmp_path / "stray.ndjson", stray), target.account_id)
    assert result.returncode == 1 and result.stderr.startswith("grove: line "), result.stderr
    assert "file chunk out of place" in result.stderr
    assert json.dumps(data_of(target.client.get("/v1/files"))["items"]) == "[]"


def test_a_file_past_the_accounts_file_quota_stops_the_restore_at_its_line(
    make_tenant: Any, database: Any, tmp_path: Path
) -> None:
    source: Tenant = make_tenant()
    uploaded(source.client, b"x" * 3000, name="big.txt")
    lines = export(source)
    target: Tenant = make_tenant()
    admin.set_quotas(database.migration_url, target.account_id, {"file_bytes": 2999})
    result = grove_import(database, write(tmp_path / "over.ndjson", lines), target.account_id)
    assert result.returncode == 1
    number = next(i for i, line in enumerate(lines, start=1) if line["type"] == "file")
    assert result.stderr.startswith(
        f"grove: line {number}: this account may hold at most 2999 bytes of files"
    ), result.stderr
    assert data_of(target.client.get("/v1/files"))["items"] == []  # nothing of it written
    admin.set_quotas(database.migration_url, target.account_id, {"file_bytes": 3000})
    assert "1 file(s); already present:" in restored(
        database, write(tmp_path / "fits.ndjson", lines), target.account_id
    )
