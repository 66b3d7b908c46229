"""Notes and notebooks: saving, reading, their lifecycle, links, the registry tools."""
