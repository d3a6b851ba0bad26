"""``flow_from_directory`` (and ``flow_from_dataframe`` where pandas is installed): the files,
classes and attributes of Keras' own iterators, every ``class_mode``'s output, the subsets of
``validation_split``, and images equal to Keras' where no augmentation applies."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.keras.conftest import daliaug_generator, keras_generator

ATTRIBUTES = ("filenames", "filepaths", "class_indices", "samples", "num_classes", "n")


def keras_flow(generator: object, *args: object, **kwargs: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return generator.flow_from_directory(*args, **kwargs)


def epoch(ds: object) -> list[tuple[np.ndarray, ...]]:
    return [tuple(t.numpy() for t in b) if isinstance(b, tuple) else (b.numpy(),) for b in ds]


@pytest.mark.parametrize("subset", [None, "training", "validation"])
def test_files_and_attributes_equal_keras(class_dir: Path, subset: str | None) -> None:
    split = 0.4 if subset else 0.0
    kwargs = {"target_size": (24, 24), "subset": subset, "batch_size": 4}
    ours = daliaug_generator(validation_split=split).flow_from_directory(str(class_dir), **kwargs)
    theirs = keras_flow(keras_generator(validation_split=split), str(class_dir), **kwargs)
    for name in ATTRIBUTES:
        assert getattr(ours, name) == getattr(theirs, name), name
    assert np.array_equal(ours.classes, theirs.classes) and len(ours) == len(theirs)
    assert ours.image_shape == theirs.image_shape


@pytest.mark.parametrize("class_mode", ["categorical", "binary", "sparse", "input", None])
def test_class_modes_yield_what_keras_yields(backend: str, class_dir: Path, class_mode) -> None:
    """Without augmentation and at the files' own size, batches equal Keras' exactly."""
    kwargs = {"target_size": (24, 24), "class_mode": class_mode, "shuffle": False}
    kwargs["batch_size"] = 5
    ours = daliaug_generator(rescale=1 / 255, backend=backend).flow_from_directory(
        str(class_dir), **kwargs
    )
    theirs = keras_flow(keras_generator(rescale=1 / 255), str(class_dir), **kwargs)
    got = epoch(ours)
    assert len(got) == len(theirs)
    for i, batch in enumerate(got):
        expected = theirs[i]
        expected = expected if isinstance(expected, tuple) else (expected,)
        assert len(batch) == len(expected)
        for a, b in zip(batch, expected, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype
            assert np.allclose(a, b, atol=1e-6)


def test_grayscale_and_resize(class_dir: Path) -> None:
    """Grey images, resized to ``target_size`` inside the one warp (Keras resizes with PIL
    first): the same shape, and close to Keras' bilinear resize."""
    kwargs = {"target_size": (16, 20), "color_mode": "grayscale", "shuffle": False}
    ours = daliaug_generator().flow_from_directory(
        str(class_dir), interpolation="bilinear", **kwargs
    )
    theirs = keras_flow(keras_generator(), str(class_dir), interpolation="bilinear", **kwargs)
    got, expected = epoch(ours)[0][0], theirs[0][0]
    assert got.shape == expected.shape == (12, 16, 20, 1)
    assert np.abs(got - expected).mean() < 12  # PIL's antialiased resize vs one bilinear warp


def test_augmented_directory_flow_runs(backend: str, class_dir: Path) -> None:
    generator = daliaug_generator(
        rotation_range=40,
        width_shift_range=0.2,
        height_shift_range=0.2,
        shear_range=0.2,
        zoom_range=0.2,
        horizontal_flip=True,
        fill_mode="nearest",
        rescale=1.0 / 255,
        backend=backend,
    )
    flow = generator.flow_from_directory(
        str(class_dir), target_size=(20, 20), batch_size=5, class_mode="binary"
    )
    (images, labels), *_ = epoch(flow)
    assert images.shape == (5, 20, 20, 3) and labels.shape == (5,) and labels.dtype == np.float32
    assert images.min() >= 0 and images.max() <= 1


def test_other_image_formats_are_named(tmp_path: Path, class_dir: Path) -> None:
    from PIL import Image

    (tmp_path / "a").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "a" / "x.bmp")
    with pytest.raises(ValueError, match=r"x\.bmp: daliaug decodes JPEG and PNG"):
        daliaug_generator().flow_from_directory(str(tmp_path))


def test_flow_from_dataframe_equals_keras(class_dir: Path) -> None:
    pd = pytest.importorskip("pandas")
    files = sorted(str(p.relative_to(class_dir)) for p in class_dir.rglob("*.png"))
    frame = pd.DataFrame(
        {
            "filename": files,
            "class": [f.split("/")[0] for f in files],
            "weight": np.linspace(1, 2, len(files)),
            "score": np.linspace(0, 1, len(files)),
        }
    )
    for class_mode, y_col in (("categorical", "class"), ("sparse", "class"), ("raw", "score")):
        kwargs = {
            "directory": str(class_dir),
            "y_col": y_col,
            "weight_col": "weight",
            "class_mode": class_mode,
            "target_size": (24, 24),
            "shuffle": False,
        }
        ours = daliaug_generator().flow_from_dataframe(frame, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = keras_generator().flow_from_dataframe(frame, **kwargs)
        assert ours.filenames == theirs.filenames and len(ours) == len(theirs)
        for batch, i in zip(epoch(ours), range(len(theirs)), strict=True):
            for a, b in zip(batch, theirs[i], strict=True):
                assert np.allclose(a, b, atol=1e-5), class_mode
