"""Keras' ``ImageDataGenerator`` on daliaug's pipelines: change one import, keep the code.

    from daliaug.keras import ImageDataGenerator

Same constructor arguments and defaults, methods and return values; ``flow*`` return what
``make_dataset`` gives Keras' backend (a ``tf.data.Dataset`` on TensorFlow, DALI's batches as
``jax.Array`` / ``torch.Tensor`` on JAX and PyTorch; DALI on the GPU where present) carrying
Keras' iterator attributes. ``EpochSync`` makes any daliaug dataset follow ``model.fit``'s epoch
numbers; ``BackupAndRestore`` (Keras' callback and the data's state) resumes it mid-epoch.
Importing this package imports Keras, and TensorFlow only where Keras runs on it and an option
needs TensorFlow ops (:mod:`daliaug.keras.backends`); ``import daliaug`` imports
neither.
"""

from __future__ import annotations

from daliaug.keras.epochs import EpochSync
from daliaug.keras.generator import ImageDataGenerator
from daliaug.keras.resume import BackupAndRestore

__all__ = ["BackupAndRestore", "EpochSync", "ImageDataGenerator"]
