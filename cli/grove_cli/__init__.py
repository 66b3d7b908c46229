"""``grove``: the administrator's command line (migrations, accounts, keys, dev)."""
