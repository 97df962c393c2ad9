"""payemu next to the real service: ``payemu proxy`` (forward, validate, record as HAR),
``payemu serve --replay`` (answer from a recording) and ``payemu verify`` (the drift report).

This package sits above :mod:`emulator.http`: it uses the served document's compiled
validators, the journal's masking and the journal itself, and adds nothing to the
emulator's request path except the replay wrapper when ``--replay`` asks for it.
"""
