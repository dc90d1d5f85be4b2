"""PySpark jobs that judge a history; they know only ../shared/spec/history.md."""
