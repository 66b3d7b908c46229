"""Metrics, traces and logs shared by every Grove service."""
