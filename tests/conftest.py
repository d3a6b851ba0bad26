from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers import BACKENDS, structured_image, write_image_dir


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend that runs here, from the engines' one list: DALI on the CPU (``cpu``),
    TensorFlow ops (``tf``) and OpenCV (``opencv``)."""
    return request.param


@pytest.fixture(scope="session")
def square_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One lossless 64x64 structured PNG in one class folder."""
    return write_image_dir(tmp_path_factory.mktemp("square"), {"a": [structured_image(64, 64)]})


@pytest.fixture(scope="session")
def square_image() -> np.ndarray:
    return structured_image(64, 64)


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small procedural classification dataset (JPEG and PNG), 4 classes."""
    from daliaug.tools.demo_data import write_classification_dataset

    return write_classification_dataset(
        tmp_path_factory.mktemp("demo") / "train", per_class=12, size=(80, 96), seed=3
    )


@pytest.fixture(scope="session")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``DALIAUG_CACHE`` the session's tests share: the demo data, written in each source's
    form by the first test that asks for it, is written once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def numbered_list(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file list of 23 images whose label is their own index (to check each appears once)."""
    root = tmp_path_factory.mktemp("numbered")
    images = [structured_image(40 + i % 5, 48, seed=i) for i in range(23)]
    write_image_dir(root, {"img": images})
    listing = root / "list.csv"
    listing.write_text("path,label\n" + "".join(f"img/{i:04d}.png,{i}\n" for i in range(23)))
    return listing


@pytest.fixture(scope="session")
def numbered_records(numbered_list: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 23 numbered images as 3 TFRecord files (``daliaug convert``'s), labelled by index."""
    from daliaug.config import load_config
    from daliaug.tools.convert import write_tfrecords

    listing = load_config(
        {"source": {"type": "file_list", "path": str(numbered_list)}, "image_size": 8}
    )
    out = tmp_path_factory.mktemp("records")
    write_tfrecords(listing.source.samples(), out, shards=3)
    return out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` run only where DALI sees a CUDA GPU."""
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    from daliaug.engines.select import dali_gpu_count

    if dali_gpu_count() == 0:
        skip = pytest.mark.skip(reason="needs a CUDA GPU visible to DALI")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)
