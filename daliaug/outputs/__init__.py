"""Outputs: what ``make_dataset`` (:mod:`daliaug.outputs.dataset`, the one front door) hands
each framework. ``tensorflow``: a ``tf.data.Dataset`` (:mod:`~daliaug.outputs.tfdata`, the
``tensorflow`` extra); ``jax`` and ``torch``: the batches Keras' ``fit`` takes on those
backends, as their arrays (:mod:`~daliaug.outputs.jax`, :mod:`~daliaug.outputs.torch`), with no
TensorFlow; ``grain``: the JAX batches as a ``grain.IterDataset`` (:mod:`~daliaug.outputs.grain`);
``numpy``: NumPy batches for any loop (:class:`~daliaug.outputs.batches.Batches`).
All run the epochs of :mod:`daliaug.epoch`. Importing this package imports no framework.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

from daliaug.errors import BackendError, ConfigError, first_line

FRAMEWORKS = ("tensorflow", "jax", "torch", "numpy", "grain")
TENSORFLOW_EXTRA = (
    "pip install 'tensorflow==2.21.*' 'nvidia-dali-cuda120==2.4.*' && "
    "pip install --no-build-isolation 'daliaug[tensorflow]'"
)
"""The ``tensorflow`` extra's install: TensorFlow first, as DALI's plugin is compiled against it."""


def tensorflow_extra(module: str) -> None:
    """Imports ``module`` (``tensorflow``, or ``nvidia.dali_tf_plugin``: DALI's plugin for it);
    a :class:`~daliaug.errors.BackendError` naming the ``tensorflow`` extra and its install
    command where it is not installed or cannot be imported."""
    what = "TensorFlow" if module == "tensorflow" else "DALI's TensorFlow plugin"
    try:
        importlib.import_module(module)
    except ImportError as e:
        name = e.name if isinstance(e, ModuleNotFoundError) else None
        if name is not None and (module == name or module.startswith(f"{name}.")):
            raise BackendError(
                f"framework: 'tensorflow' (a tf.data.Dataset) needs {what}, which is not "
                f"installed; install daliaug's tensorflow extra: {TENSORFLOW_EXTRA} (or use "
                "Keras' JAX or PyTorch backend: framework='jax' or 'torch')"
            ) from None
        raise BackendError(  # installed, but broken: a shared library or a module missing
            f"framework: 'tensorflow' (a tf.data.Dataset) needs {what}, which is installed but "
            f"cannot be imported: {first_line(e)}; reinstall daliaug's tensorflow extra: "
            f"{TENSORFLOW_EXTRA}"
        ) from None


def grain_extra() -> None:
    """A :class:`~daliaug.errors.BackendError` naming the ``grain`` extra where Grain is not
    installed (``framework="grain"``)."""
    if importlib.util.find_spec("grain") is None:
        raise BackendError(
            "framework: 'grain' (a grain.IterDataset of JAX batches) needs Grain, which is not "
            "installed; install daliaug's grain extra: pip install 'daliaug[grain]' (or use "
            "framework='jax', the same batches without Grain)"
        )


def keras_started(framework: str | None) -> Any:
    """Keras, imported; a ``ConfigError`` where it is missing or its backend cannot start, a
    ``BackendError`` naming the ``tensorflow`` extra where that backend is TensorFlow and
    TensorFlow is not installed. ``framework``: the one asked for, named in the fix."""
    try:
        import keras
    except ImportError as e:
        if importlib.util.find_spec("keras") is None:
            raise ConfigError(
                "framework: Keras is not installed, so make_dataset cannot follow its backend; "
                f"pass framework= one of {', '.join(FRAMEWORKS)}"
            ) from None
        backend = os.environ.get("KERAS_BACKEND") or "the one in ~/.keras/keras.json"
        missing = e.name.split(".")[0] if e.name else str(e)
        if missing == "tensorflow" and framework in (None, "tensorflow"):
            raise BackendError(
                f"framework: Keras' backend ({backend}) is TensorFlow, which is not installed; "
                f"install daliaug's tensorflow extra: {TENSORFLOW_EXTRA} (or set KERAS_BACKEND "
                "to jax or torch before Keras is imported)"
            ) from None
        fix = f"KERAS_BACKEND={framework}" if framework else "KERAS_BACKEND to jax or torch"
        raise ConfigError(
            f"framework: Keras cannot start on its backend ({backend}): {missing} is not "
            f"installed; set {fix} before Keras is imported, or install that backend"
        ) from None
    return keras


def framework_of(framework: str | None) -> str:
    """``framework`` checked, or by default the backend Keras runs on
    (``keras.backend.backend()``, from ``KERAS_BACKEND`` or ``keras.json``)."""
    if framework is None:
        framework = keras_started(None).backend.backend()
    if framework not in FRAMEWORKS:
        raise ConfigError(f"framework: {framework!r} is not one of {', '.join(FRAMEWORKS)}")
    return framework
