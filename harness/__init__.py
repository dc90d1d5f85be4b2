"""Starts the system under test, drives workloads against it and records the history."""
