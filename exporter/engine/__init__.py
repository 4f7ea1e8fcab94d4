"""Pure logic: cgroup parsing, attribution and snapshot building from raw readings."""
