"""Go's standard library as Prometheus's and Alertmanager's Go code behaves, for the engine.

One module per Go package it mirrors: ``fmt``, ``strconv``, ``time``, ``regexp`` (with
``regexp_syntax`` for ``regexp/syntax``) and ``reflect`` (the Go types of Python values).
Regular expressions run on RE2 (the ``google-re2`` wheel), as Go's do: linear time.

This package is the bottom of the engine: it imports nothing else of guardian (an
import-linter contract says so), and templates, PromQL and the Alertmanager code build on it.
"""
