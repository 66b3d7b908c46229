"""Helpers every kind of test may import: processes, clients, tenants, fakes, waiting.

Fixtures stay in the ``conftest.py`` files; these are plain functions and classes.
"""
