"""Grove's inference service (gRPC): embeddings for notes and queries."""
