"""eWallet sessions, their payment through the engine and their signed result tokens."""
