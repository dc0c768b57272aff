"""The image classification task: digits by default, photo folders, TFRecords, Keras data sets.

`task.py` is what the steps ask of it (tasks.current()); its code lives in data/, models.py,
nets.py and here (augmentation on the device, the export's uint8 input).
"""
