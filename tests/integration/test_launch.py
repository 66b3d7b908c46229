"""grove_cli.launch, the one launcher of console scripts: readiness read from stderr, a
clear error with the last output when a script exits first, and stopping."""

from __future__ import annotations

import signal

import pytest

from grove_cli import launch

ASK = {
    "GROVE_EMBEDDING_PROFILE": "disabled",  # no model, no database: it serves at once
    "GROVE_ASK_HOST": "127.0.0.1",
    "GROVE_ASK_PORT": "0",
    "GROVE_ASK_METRICS_PORT": "0",
}


def test_a_script_that_exits_before_it_is_ready_raises_with_its_last_output() -> None:
    with pytest.raises(launch.LaunchError) as raised:
        launch.start("grove-api", {"GROVE_SECRET_KEY": "short"}, launch.GUNICORN_READY)
    message = str(raised.value)
    assert message.startswith("grove-api exited with 1 before it was ready; its last output:")
    assert "grove-api: invalid configuration:" in message and "GROVE_SECRET_KEY" in message


def test_the_ready_line_gives_the_port_and_stop_ends_the_service() -> None:
    ask = launch.start("grove-ask", ASK, launch.ASK_READY, quit_signal=signal.SIGINT)
    try:
        assert ask.port.isdigit() and int(ask.port) > 0
        assert any('"event": "listening"' in line for line in ask.lines)
    finally:
        code = ask.stop()
    assert code == 0, ask.lines  # grove-ask shuts down cleanly on SIGINT
    assert ask.drain is not None and not ask.drain.is_alive()
    assert any('"event": "stopping"' in line for line in ask.lines)  # kept after readiness


def test_a_script_silent_past_the_timeout_is_killed_with_a_clear_error() -> None:
    with pytest.raises(launch.LaunchError, match=r"^grove-ask was not ready within 0\.5 s"):
        launch.start("grove-ask", ASK, r"never logged", timeout=0.5)
