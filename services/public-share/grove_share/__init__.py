"""grove-share: public, read-only share links (HTML for people, JSON for programs)."""
