"""The text classification task: BANKING77 by default, a CSV, a folder of .txt files or TFRecords.

`task.py` is what the steps ask of it (tasks.current()); each other module does one job (sources,
vocabulary, records, dataset, benchmark, models, baseline, scores, export, plots). Importing this
package costs nothing: step 1's checks run before TensorFlow loads.
"""
