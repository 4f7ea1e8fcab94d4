"""GPU usage and cost over history (``guardian report``, and what ``simulate`` frees)."""
