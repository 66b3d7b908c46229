"""Grove's worker: claims jobs from the PostgreSQL queue and runs them."""
