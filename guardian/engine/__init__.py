"""Pure decisions: rule evaluation and planning. Snapshot in, plan out; no I/O."""
