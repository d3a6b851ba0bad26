"""``flow_from_directory`` (and ``flow_from_dataframe`` where pandas is installed): the files,
classes and attributes of Keras' own iterators, every ``class_mode``'s output (multi-label,
list ``y_col`` and ``multi_output`` dataframes too), the subsets of ``validation_split``, empty
flows, unvalidated files, and images equal to Keras' where no augmentation applies."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from daliaug.errors import DataError
from tests.keras.conftest import daliaug_generator, keras_generator

ATTRIBUTES = ("filenames", "filepaths", "class_indices", "samples", "num_classes", "n")


def keras_flow(generator: object, *args: object, **kwargs: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return generator.flow_from_directory(*args, **kwargs)


def epoch(ds: object) -> list[tuple[np.ndarray, ...]]:
    return [tuple(t.numpy() for t in b) if isinstance(b, tuple) else (b.numpy(),) for b in ds]


@pytest.mark.slow
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


@pytest.fixture(scope="module")
def frame(class_dir: Path) -> object:
    pd = pytest.importorskip("pandas")
    files = sorted(str(p.relative_to(class_dir)) for p in class_dir.rglob("*.png"))
    n = len(files)
    return pd.DataFrame(
        {
            "filename": files,
            "class": [f.split("/")[0] for f in files],
            "tags": [["x", "y", "z"][: 1 + i % 3][i % 2 :] or ["w"] for i in range(n)],
            "weight": np.linspace(1, 2, n),
            "score": np.linspace(0, 1, n),
            "size": np.arange(n) * 2.0,
            "box": [[i, i + 1.0] for i in range(n)],
        }
    )


def keras_frame_flow(generator: object, frame: object, **kwargs: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return generator.flow_from_dataframe(frame, **kwargs)


def flat(batch: object) -> list[np.ndarray]:
    import keras

    return [np.asarray(t) for t in keras.tree.flatten(batch)]


@pytest.mark.parametrize(
    ("class_mode", "y_col", "classes"),
    [
        ("categorical", "class", None),
        ("sparse", "class", None),
        ("raw", "score", None),
        ("categorical", "tags", None),  # multi-label: multi-hot rows
        ("categorical", "tags", ["z", "x"]),  # other classes dropped, rows without any too
        ("raw", ["score", "size"], None),
        ("multi_output", ["score", "box"], None),
    ],
    ids=["categorical", "sparse", "raw", "multi-label", "multi-label-classes", "raw-list", "multi"],
)
def test_flow_from_dataframe_equals_keras(
    class_dir: Path, frame: object, class_mode: str, y_col: object, classes: object
) -> None:
    kwargs = {
        "directory": str(class_dir),
        "y_col": y_col,
        "weight_col": "weight",
        "class_mode": class_mode,
        "classes": classes,
        "target_size": (24, 24),
        "shuffle": False,
        "batch_size": 5,
    }
    ours = daliaug_generator().flow_from_dataframe(frame, **kwargs)
    theirs = keras_frame_flow(keras_generator(), frame, **kwargs)
    assert ours.filenames == theirs.filenames and len(ours) == len(theirs)
    labels = zip(flat(ours.labels), flat(theirs.labels), strict=True)
    assert all(np.array_equal(a, b) for a, b in labels)
    for i, batch in enumerate(ours):
        expected = flat(theirs[i])
        for got in (flat(batch), flat(ours[i])):
            assert [a.shape for a in got] == [b.shape for b in expected], class_mode
            assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(got, expected, strict=True))


def test_empty_flows_as_keras(tmp_path: Path, frame: object, capsys) -> None:
    """An empty folder, or a dataframe whose files all fail validation: Keras' message (and
    warning), an iterator of no batches."""
    ours = daliaug_generator().flow_from_directory(str(tmp_path))
    theirs = keras_flow(keras_generator(), str(tmp_path))
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["Found 0 images belonging to 0 classes."] * 2
    assert len(ours) == len(theirs) == 0 and list(ours) == []
    assert next(ours)[0].shape == next(theirs)[0].shape == (0, 256, 256, 3)
    gone = frame.assign(filename=[f"missing/{i}.png" for i in range(len(frame))])
    with pytest.warns(UserWarning, match="invalid image filename"):
        ours = daliaug_generator().flow_from_dataframe(gone, directory=str(tmp_path))
    theirs = keras_frame_flow(keras_generator(), gone, directory=str(tmp_path))
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["Found 0 validated image filenames belonging to 0 classes."] * 2
    assert len(ours) == len(theirs) == 0 and list(ours) == []


def test_unvalidated_files_are_opened_when_loaded(
    class_dir: Path, frame: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``validate_filenames=False`` opens no file when the flow is made (Keras: not even a
    check that it exists); a batch reads the headers of its files (and of those after it that
    its pipeline covers), a missing file stops it with an error naming the file; otherwise the
    batches are Keras'."""
    import daliaug.keras.samples as samples

    opened: list[str] = []
    header = samples.image_header
    monkeypatch.setattr(samples, "image_header", lambda p: opened.append(p) or header(p))
    kwargs = {"directory": str(class_dir), "target_size": (24, 24), "shuffle": False}
    kwargs |= {"batch_size": 4, "validate_filenames": False}
    with pytest.warns(DeprecationWarning, match="has_ext is deprecated"):
        ours = daliaug_generator().flow_from_dataframe(frame, has_ext=True, **kwargs)
    assert opened == []
    theirs = keras_frame_flow(keras_generator(), frame, **kwargs)
    assert all(np.allclose(a, b) for a, b in zip(ours[1], theirs[1], strict=True))
    assert sorted(opened) == sorted(ours.filepaths[4:])  # from batch 1 on: its window
    missing = frame.assign(filename=["nowhere.png", *frame["filename"][1:]])
    broken = daliaug_generator().flow_from_dataframe(missing, **kwargs)
    with pytest.raises(DataError, match=r"nowhere\.png"):
        broken[0]
    with pytest.raises(Exception, match=r"nowhere\.png"):
        list(broken)
