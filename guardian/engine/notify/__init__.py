"""Pure notification decisions: findings, routing, mute windows and message lifecycles."""
