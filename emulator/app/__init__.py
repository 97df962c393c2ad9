"""The ASGI application: payemu's Starlette app, its one JSON exception layer, what a request cut
by shutdown gets, and the assembly of every route.
"""
