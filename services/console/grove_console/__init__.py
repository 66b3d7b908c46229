"""grove-console: the owner website (approve agents, manage connections and keys)."""
