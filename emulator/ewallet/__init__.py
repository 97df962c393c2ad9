"""eWallet sessions and the hosted payment page that stands in for the client-side library.

* :mod:`emulator.ewallet.sessions` – checking, storing and finding sessions;
* :mod:`emulator.ewallet.results` – signed result tokens and the validateResults answer;
* :mod:`emulator.ewallet.payment` – paying a session through the payment engine;
* :mod:`emulator.ewallet.dashboard` – what the dashboard shows of a tenant;
* :mod:`emulator.ewallet.routes` – the hosted page, the JS library and the dashboard.
"""
