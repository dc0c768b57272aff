"""The image classification task: digits by default, photo folders, TFRecords, Keras data sets.

`task.py` is what the steps ask of it (tasks.current()); its code lives in data/ (still shared: the
move is under way) and here: the models (models.py, nets.py), augmentation on the device, the
export's uint8 input, the augmentation benchmark.
"""
