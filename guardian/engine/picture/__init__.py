"""Pictures drawn in pure Python (PNG bytes from data): the evidence chart for idle alerts."""
