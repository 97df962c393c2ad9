"""payemu next to the real service: ``payemu proxy``, ``payemu serve --replay`` and ``payemu verify``.

It sits above the app (:mod:`emulator.app`) and adds nothing to the request path but the replay
wrapper when ``--replay`` asks for it."""
