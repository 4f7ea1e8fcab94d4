"""``guardian report``: allocated, used and idle GPU-hours and their cost, per day."""
