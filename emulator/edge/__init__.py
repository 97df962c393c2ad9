"""The transport edge: uvicorn's HTTP protocol with payemu's guards, the connection cap, batched
writes and the server that runs them.
"""
