"""The image classification task: digits by default, photo folders, TFRecords, Keras data sets.

`task.py` is what the steps ask of it (tasks.current()); its code lives here: step 1 (data_step.py:
the sources, JPEG decoding and crops, the decoded-image cache, the shards, the pipeline and its
benchmark, the figures), the models (models.py, nets.py), augmentation on the device, the
export's uint8 input, the augmentation benchmark.
"""
