"""``grove-harness``: agent hook configuration for one Grove project, rendered offline.

It renders a Claude Code ``SessionStart`` hook that retrieves the project's shared memory
at session start, and pins an operator-reviewed rule pack by SHA-256 into that hook,
printed apart from (and before) the untrusted retrieved records. It writes standard output
or one explicit ``--output`` file, installs nothing and never contacts Grove itself.
"""
