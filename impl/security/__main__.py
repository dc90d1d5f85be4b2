"""`python -m impl.security`: see docs/security.md, "Tokens"."""

from impl.security.cli import main

main()
