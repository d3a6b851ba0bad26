"""The documentation's Keras layer table (``docs/pages/keras-layers.md``) names every image
layer of the installed Keras (a new Keras release with a new layer fails here at once), and
says what becomes of each: converted, or refused with the reason."""

from __future__ import annotations

import re
from pathlib import Path

from daliaug.keras.converters import CONVERTERS
from tests.keras.conftest import keras_image_layers

README = (Path(__file__).parents[2] / "docs" / "pages" / "keras-layers.md").read_text()


def table() -> dict[str, str]:
    """The layer table: each layer named in a row's first cell -> the row."""
    start = README.index("| Keras layer | daliaug transform | differences |")
    rows = README[start : README.index("\n\n", start)].splitlines()[2:]
    return {name: row for row in rows for name in re.findall(r"`(\w+)`", row.split(" | ")[0])}


def test_the_enumeration_finds_keras_image_layers() -> None:
    names = keras_image_layers()
    assert {"RandomFlip", "AugMix", "RandomElasticTransform", "CenterCrop"} <= set(names)
    assert len(names) >= 34  # Keras 3.15's


def test_the_table_names_every_keras_image_layer() -> None:
    missing = [name for name in keras_image_layers() if name not in table()]
    assert not missing, f"docs/pages/keras-layers.md's layer table does not name {missing}"


def test_the_table_says_which_layers_are_converted() -> None:
    rows = table()
    for name in keras_image_layers():
        converted = name in CONVERTERS or name == "Pipeline"
        transform = rows[name].split(" | ")[1]
        assert ("refused" not in transform) == converted, rows[name]
    assert all(name in rows for name in CONVERTERS)
