"""The rules pipeline's wiring: the running engine, its scheduler, metrics and commands."""
