"""The Alertmanager output and silence checks, wired: ``output`` sends the engine's alerts
after each evaluation, ``silence_gather`` answers the remediation loop's question once per
cycle, ``build`` makes both from the ``alertmanager:`` settings."""
