"""Grove's wire contracts: request and response models, envelopes and error codes."""
