"""The payment engine: one operation through admission, the simulated gateway's checks and
decision, failover, and the gateway's wording of the answer.
"""
