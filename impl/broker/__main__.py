"""`python -m impl.broker`: see docs/broker.md, "The broker process"."""

from impl.broker.main import main

main()
