"""Step 1, the data, for every task (entry.py); the task's half is tasks/<folder>/data_step.py."""
