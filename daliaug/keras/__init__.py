"""Keras' ``ImageDataGenerator`` on daliaug's pipelines: change one import, keep the code.

    from daliaug.keras import ImageDataGenerator

Same constructor arguments and defaults, methods and return values; ``flow*`` return
``tf.data.Dataset`` objects for ``model.fit`` (DALI on the GPU where present) that carry Keras'
iterator attributes. ``EpochSync`` makes any daliaug dataset follow ``model.fit``'s epoch
numbers. Importing this package imports TensorFlow and Keras (``import daliaug`` imports
neither).
"""

from __future__ import annotations

from daliaug.keras.epochs import EpochSync
from daliaug.keras.generator import ImageDataGenerator

__all__ = ["EpochSync", "ImageDataGenerator"]
