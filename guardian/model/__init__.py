"""Pure data: alerts, rules, policies, plans. No I/O and no client libraries."""
