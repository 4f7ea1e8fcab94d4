"""The rules pipeline's pure part: rule files, the alert state machine, for-state, rendering."""
