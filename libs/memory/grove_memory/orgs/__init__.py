"""Orgs, their projects and members, and each project's shared pool."""
