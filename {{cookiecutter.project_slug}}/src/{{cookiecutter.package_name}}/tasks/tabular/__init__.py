"""The table classification task: census income by default, a user's CSV or Parquet file.

`task.py` is what the steps ask of it (tasks.current()); each other module does one job (sources,
schema, tables, features, dataset, models, baseline, scores, export, plots). Importing this package
costs nothing: step 1's checks run before TensorFlow loads.
"""
