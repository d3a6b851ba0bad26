"""Which of the drop-in's options need TensorFlow, on Keras' JAX and PyTorch backends.

There ``make_dataset`` hands ``fit`` DALI's batches without TensorFlow (:mod:`daliaug.outputs`);
the options that run TensorFlow ops (the stage after the pipeline of
:mod:`daliaug.keras.after_pipeline`, the TensorFlow engine's fills) are refused with the fix.
"""

from __future__ import annotations

from collections.abc import Sequence

from daliaug.errors import ConfigError


def keras_backend() -> str:
    """The backend Keras runs on (``keras.backend.backend()``)."""
    import keras

    return str(keras.backend.backend())


def tensorflow_only(options: Sequence[str], what: str = "the flow") -> None:
    """A :class:`ConfigError` naming ``options`` (each needing TensorFlow ops for ``what``)
    unless Keras runs on TensorFlow or there are none."""
    backend = keras_backend()
    if not options or backend == "tensorflow":
        return
    raise ConfigError(
        f"{', '.join(options)}: {what} runs TensorFlow ops for it, and Keras runs on {backend}, "
        "where daliaug's batches come from DALI without TensorFlow; leave it out (do that step "
        "in the model; fill_mode 'constant' or 'nearest' run on DALI), or run Keras on "
        "TensorFlow (KERAS_BACKEND=tensorflow)"
    )
