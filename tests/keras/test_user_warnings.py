"""daliaug's warnings point at the user's line (the call into daliaug), not at daliaug's own:
``from_keras`` and ``split_model`` (reached through the package's lazy names, no wrapper in
between), and ``make_dataset``'s, however deep inside daliaug they are raised."""

from __future__ import annotations

import warnings
from pathlib import Path

import keras
import numpy as np
import pytest

import daliaug
from daliaug.engines.select import resolve_backend
from daliaug.errors import BackendWarning, DataWarning

HERE = Path(__file__).name


def heard(category: type[Warning], call: object) -> list[str]:
    """The file names the ``category`` warnings of ``call()`` point at."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    found = [Path(w.filename).name for w in caught if issubclass(w.category, category)]
    assert found, [str(w.message) for w in caught]
    return found


def test_from_keras_and_split_model_warn_at_the_callers_line() -> None:
    layers = [keras.layers.RandomRotation(0.1)]  # Keras' default fill_mode: reflect
    source = {"type": "directory", "path": "data"}
    found = heard(BackendWarning, lambda: daliaug.from_keras(layers, source=source, image_size=32))
    assert found == [HERE]
    model = keras.Sequential([keras.Input((32, 32, 3)), *layers, keras.layers.Flatten()])
    assert heard(BackendWarning, lambda: daliaug.split_model(model)) == [HERE]


def test_make_dataset_warns_at_the_callers_line() -> None:
    x = np.random.default_rng(0).random((8, 16, 16, 3), dtype=np.float32)
    config = {"source": {"type": "arrays"}, "image_size": 16, "batch_size": 4}
    found = heard(DataWarning, lambda: daliaug.make_dataset(config, x=x, y=np.zeros(8, int)))
    assert found == [HERE, HERE]  # the values rounded to levels; the output's scale
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        daliaug.nothing  # noqa: B018


def test_the_fill_warning_says_what_auto_does_on_this_host() -> None:
    """No GPU for DALI here: ``auto`` with a constant fill takes the measured CPU path, which
    for a plain classification stack is the TensorFlow backend too, so the warning says so
    rather than promising DALI."""
    layers = [keras.layers.RandomRotation(0.1)]
    with pytest.warns(BackendWarning) as caught:
        daliaug.from_keras(layers, source={"type": "directory", "path": "data"}, image_size=32)
    message = str(caught[0].message)
    assert "no GPU for DALI" in message and "backend 'cpu' forces DALI" in message, message
    constant = [keras.layers.RandomRotation(0.1, fill_mode="constant")]
    config = daliaug.from_keras(
        constant, source={"type": "directory", "path": "data"}, image_size=32
    )
    assert config.backend == "auto"
    assert resolve_backend(config) == "tf"  # what the warning told
