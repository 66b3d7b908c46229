"""The export's response body: cut off after its time limit, its slot given back once;
how many exports a process streams at once."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from grove_api.portability import BoundedStream, ExportTooLong
from grove_api.settings import ApiSettings
from tests.support.keys import SECRET


def lines(closed: list[bool]) -> Iterator[bytes]:
    try:
        while True:
            yield b"{}\n"
    finally:
        closed.append(True)


def test_a_stream_past_its_time_limit_raises_and_is_closed_once() -> None:
    released: list[int] = []
    closed: list[bool] = []
    stream = BoundedStream(lines(closed), 0.05, lambda: released.append(1))
    assert next(stream) == b"{}\n"
    time.sleep(0.06)
    with pytest.raises(ExportTooLong):
        next(stream)
    stream.close()
    stream.close()
    assert released == [1] and closed == [True]


def test_a_stream_never_read_still_gives_its_slot_back() -> None:
    released: list[int] = []
    BoundedStream(lines([]), 60, lambda: released.append(1)).close()
    assert released == [1]


def api_settings(**values: object) -> ApiSettings:
    return ApiSettings(
        database_url="postgresql://unused/grove",
        secret_key=SECRET,  # type: ignore[arg-type]
        **values,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("pool", "exports"), [(2, 1), (3, 1), (4, 2), (9, 4), (100, 50)])
def test_a_process_streams_exports_on_half_its_pool_by_default(pool: int, exports: int) -> None:
    assert api_settings(db_pool_size=pool).exports_at_once == exports


def test_the_export_limit_may_take_all_but_one_connection_and_no_more() -> None:
    assert api_settings(db_pool_size=4, export_max_concurrent=3).exports_at_once == 3
    with pytest.raises(ValidationError, match="below GROVE_DB_POOL_SIZE"):
        api_settings(db_pool_size=4, export_max_concurrent=4)
    with pytest.raises(ValidationError, match="greater than or equal to 2"):
        api_settings(db_pool_size=1)
