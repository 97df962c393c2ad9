"""eWallet sessions and the hosted payment page that stands in for the client-side library.

* :mod:`emulator.payments.ewallet.sessions` – checking, storing and finding sessions;
* :mod:`emulator.payments.ewallet.results` – signed result tokens and the validateResults answer;
* :mod:`emulator.payments.ewallet.payment` – paying a session through the payment engine;
* :mod:`emulator.http.pages.dashboard` – what the dashboard shows of a tenant;
* :mod:`emulator.http.pages.routes` – the hosted page, the JS library and the dashboard.
"""
