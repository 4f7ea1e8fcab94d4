"""Reading long stretches of history from Prometheus or Thanos: chunks, splits, progress."""
