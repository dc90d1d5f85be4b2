"""Pulsar's binary protocol as both of its sides use it: our `.proto` files (Pulsar's field
numbers and enum values) with their generated modules and type stubs, the frame codec
(`frames.py`), keep-alive (`keep_alive.py`) and a client connection that matches answers
to requests and follows lookups (`connection.py`). It is a package of its own because the
protocol is the public interface between the system under test and the harness: the
brokers in `impl/` serve it, the harness's scalable-topics client
(`harness/scalable_client`) speaks it, and neither side may import the other, so the one
thing they share sits below both and imports nothing of ours. docs/protocol.md describes it.
"""
