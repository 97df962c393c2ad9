"""The published interface document: loading it, validating requests and answers against it, the
real service's binder and leniency, answers shaped for the document that serves them, and the
fidelity ledger of what payemu decides where the document is silent.
"""
