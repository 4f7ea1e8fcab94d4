"""What the controller and the node exporter share: errors, config types, logging, grouping.

Both programs may import this package; it imports neither of them (import-linter says so).
"""
