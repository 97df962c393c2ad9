"""What a tenant stores: transactions and their ledger, the journal, the vault, gateway accounts,
certificates, rules, settings and eWallet sessions; none of it knows the tenant or the runtime.
"""
