"""Finding notes: hybrid search and recall."""
