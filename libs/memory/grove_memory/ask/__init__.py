"""Ask: cited answers, conversations and their turns, and the changes a turn proposes."""
