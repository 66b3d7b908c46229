"""The stdio bridge and the harness build into wheels that ship alone: each its own
package, typed, with its console script, and none of the server's dependencies."""

from __future__ import annotations

from pathlib import Path

from tests.support.wheels import build_wheel, requirements

ROOT = Path(__file__).resolve().parents[2]


def test_the_bridge_wheel_ships_alone(tmp_path: Path) -> None:
    wheel = build_wheel(ROOT / "clients" / "mcp-bridge", tmp_path, "grove-mcp-bridge")
    names, metadata = wheel.names, wheel.metadata
    packages = {name.split("/")[0] for name in names}
    assert packages == {"grove_mcp_bridge", "grove_mcp_bridge-0.1.0.dist-info"}, packages
    assert "grove_mcp_bridge/py.typed" in names
    assert metadata["Name"] == "grove-mcp-bridge"
    # The MCP SDK and the HTTP client it brings: what `uvx` installs with the bridge.
    assert requirements(metadata) == ["httpx2", "mcp", "mcp-types"]
    assert "grove-mcp-bridge = grove_mcp_bridge.server:main" in wheel.entry_points


def test_the_harness_wheel_ships_alone(tmp_path: Path) -> None:
    wheel = build_wheel(ROOT / "tools" / "harness", tmp_path, "grove-harness")
    names, metadata = wheel.names, wheel.metadata
    packages = {name.split("/")[0] for name in names}
    assert packages == {"grove_harness", "grove_harness-0.1.0.dist-info"}, packages
    # The hook's source ships as a module: the harness embeds it in what it renders.
    assert {"grove_harness/py.typed", "grove_harness/session_start.py"} <= set(names)
    assert metadata["Name"] == "grove-harness"
    assert requirements(metadata) == []
    assert "grove-harness = grove_harness.cli:main" in wheel.entry_points
