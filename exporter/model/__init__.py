"""Pure data: GPU, process and pod snapshots. No I/O and no client libraries."""
