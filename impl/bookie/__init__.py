"""The bookie: a ledger store process (`python -m impl.bookie`), see docs/storage.md."""
