"""An account's memory out and back in: the export, and restoring one."""
