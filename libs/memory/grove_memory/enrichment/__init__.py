"""Enrichment: classification suggestions and notebook briefs."""
