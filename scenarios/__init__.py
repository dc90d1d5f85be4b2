"""Declarative scenario files and suites."""
