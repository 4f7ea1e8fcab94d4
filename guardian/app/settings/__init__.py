"""The controller's settings: one YAML file, one section per pipeline, ``GUARDIAN_*`` overrides."""
