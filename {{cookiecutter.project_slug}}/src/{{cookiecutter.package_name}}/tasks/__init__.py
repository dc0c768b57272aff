"""One folder per task: what differs between image, text and table classification lives here.

Each task folder gives the steps its sources, example format, `tf.data` map, model builders,
scores and export signature, so the steps themselves stay one code path for every task.
"""
