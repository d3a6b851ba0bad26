"""``source.validation_split`` and ``subset`` on class folders: the files Keras'
``image_dataset_from_directory(validation_split=..., subset=..., seed=...)`` puts in each part,
reproducibly from the config's seed, disjoint, together the whole folder; ``subset: both``
gives ``(training, validation)`` from ``make_dataset``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import daliaug
from daliaug.errors import ConfigError, DataError
from daliaug.prepare import prepare_samples
from tests.helpers import structured_image, write_image_dir


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three classes of 7, 5 and 9 small PNGs."""
    images = [structured_image(20, 24, seed=i) for i in range(21)]
    classes = {"ant": images[:7], "bee": images[7:12], "cow": images[12:]}
    return write_image_dir(tmp_path_factory.mktemp("split"), classes)


def config(
    folder: Path, subset: str | None, split: float = 0.3, seed: int | None = 1337, **fields: object
) -> daliaug.Config:
    source: dict[str, object] = {"type": "directory", "path": str(folder)}
    if subset is not None:
        source.update(validation_split=split, subset=subset)
    return daliaug.load_config(
        {"source": source, "image_size": 16, "batch_size": 4, "seed": seed, **fields}
    )


def files(folder: Path, subset: str | None, **kwargs: object) -> list[str]:
    return list(prepare_samples(config(folder, subset, **kwargs)).paths)


@pytest.mark.parametrize("seed", [1337, 7])
def test_the_parts_are_keras_own_and_split_the_whole_folder(folder: Path, seed: int) -> None:
    import keras

    training = files(folder, "training", seed=seed)
    validation = files(folder, "validation", seed=seed)
    assert not set(training) & set(validation)
    assert sorted(training + validation) == sorted(files(folder, None))
    assert len(validation) == int(0.3 * 21)
    kept, held = keras.utils.image_dataset_from_directory(
        folder, validation_split=0.3, subset="both", seed=seed, image_size=(16, 16), verbose=False
    )
    assert sorted(training) == sorted(kept.file_paths)
    assert sorted(validation) == sorted(held.file_paths)
    assert files(folder, "training", seed=seed) == training  # reproducible


def test_labels_follow_their_files(folder: Path) -> None:
    samples = prepare_samples(config(folder, "validation"))
    names = [Path(p).parent.name for p in samples.paths]
    assert [samples.class_names[i] for i in samples.labels] == names
    assert samples.class_names == ["ant", "bee", "cow"]


def test_both_gives_training_and_an_unaugmented_validation_dataset(folder: Path) -> None:
    both = config(folder, "both", transforms=[{"type": "flip", "horizontal": 0.5}])
    training, validation = daliaug.make_dataset(both)
    counts = [sum(len(b[1]) for b in ds) for ds in (training, validation)]
    assert counts == [21 - 6, 6]
    kept = both.subsets()[1]
    assert kept.transforms == [] and kept.shuffle is False and kept.source.subset == "validation"


def test_split_needs_subset_a_seed_and_a_part_on_each_side(folder: Path) -> None:
    with pytest.raises(ConfigError, match="validation_split and subset go together"):
        daliaug.load_config(
            {
                "source": {"type": "directory", "path": str(folder), "subset": "training"},
                "image_size": 8,
            }
        )
    with pytest.raises(ConfigError, match=r"seed: source\.validation_split"):
        files(folder, "training", seed=None)
    with pytest.raises(DataError, match="0 for validation"):
        files(folder, "validation", split=0.01)
    with pytest.raises(ConfigError, match="subset: both makes two datasets"):
        daliaug.DaliLoader(config(folder, "both"))
    assert np.isclose(config(folder, "both").source.validation_split, 0.3)
