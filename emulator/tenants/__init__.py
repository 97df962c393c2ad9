"""Tenants (one per API key), the services they share, preloading from the config file, and the
runtime that holds them all.
"""
