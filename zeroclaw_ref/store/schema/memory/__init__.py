"""Migrations of one agent's long-term memory store (policy.md §11)."""
