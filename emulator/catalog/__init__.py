"""The gateway catalog: one data file per gateway, its schema, and how each gateway's answers and
payloads are templated.
"""
