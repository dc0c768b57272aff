"""The text classification task: BANKING77 by default, a CSV or a folder of .txt files.

Its modules each do one job (sources, vocabulary, pipeline, models, baseline, scores, export);
the steps reach them through the task seam, never by importing a module by name.
"""
