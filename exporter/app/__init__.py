"""Wiring: the collection loop and the HTTP server."""
