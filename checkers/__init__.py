"""PySpark jobs that judge a history; they know only the history format (docs/history.md)."""
