"""Pulsar's binary protocol: our .proto (generated module beside it) and the framing."""
