"""The Alertmanager output, pure: which alerts to send and their bodies (``sending``),
alert relabelling (``relabel``), what Alertmanager's answers mean for remediation
(``suppression``), and the generated Alertmanager configuration (``amconfig``)."""
