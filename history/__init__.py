"""The history of a run: its event format, the one writer, the one reader, and the exit codes
of its verdicts."""
