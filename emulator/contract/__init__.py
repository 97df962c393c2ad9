"""The published interface document: loading it, validating requests and answers against it, the
real service's binder and leniency, and answers shaped for the document that serves them.
"""
