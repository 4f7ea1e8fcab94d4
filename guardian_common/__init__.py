"""What the controller and the node exporter share: errors, config types, safe file reading
and YAML loading, logging, grouping.

Both programs may import this package; it imports neither of them (import-linter says so).
"""
