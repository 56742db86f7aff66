"""A run's bookkeeping: its recorded config and name, the journal it resumes from, the lock, the
resumable sample loop, multi-host sharding, and the results file it writes (schema, metadata,
lm-eval's view)."""
