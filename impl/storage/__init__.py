"""Durable topic storage: ledgers on bookies, and managed ledgers with cursors on top."""
