"""grove-client builds into a wheel that ships alone: its own package, typed, at its own
version, depending on httpx and pydantic only (frameworks only through extras)."""

from __future__ import annotations

from pathlib import Path

from grove_client import __version__
from tests.support.wheels import build_wheel, requirements

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_the_client_wheel_ships_alone(tmp_path: Path) -> None:
    wheel = build_wheel(CLIENT, tmp_path, "grove-client")
    names, metadata = wheel.names, wheel.metadata
    info = f"grove_client-{__version__}.dist-info"
    packages = {name.split("/")[0] for name in names}
    assert packages == {"grove_client", info}, packages
    assert "grove_client/py.typed" in names
    assert metadata["Name"] == "grove-client" and metadata["Version"] == __version__
    assert requirements(metadata) == ["httpx", "pydantic"]
