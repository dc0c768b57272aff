"""`python -m <package>.export predict EXPORT_DIR INPUTS.npy OUT.npz`: the fresh-process reload.

check_parity starts this so that the SavedModel is loaded with tf.saved_model.load by a process in
which no Keras model was ever built or loaded: only what is inside the SavedModel can answer.
"""

from __future__ import annotations

import sys

from .parity import main

if __name__ == "__main__":
    sys.exit(main())
