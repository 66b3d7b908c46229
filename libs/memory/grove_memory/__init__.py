"""Grove's transactional memory service: every operation on notes, one function each."""
