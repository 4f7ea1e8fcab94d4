"""Slack: Block Kit rendering, the Web API and webhook transports, the durable outbox."""
