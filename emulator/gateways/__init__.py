"""Simulated gateways: the catalog (data) and the behaviour read from it."""
