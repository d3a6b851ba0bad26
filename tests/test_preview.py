"""daliaug preview's tiles: class names, or each class's label weight where batch stages mix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.tools.preview import augmented_samples, caption
from tests.helpers import config_for


def test_caption_names_the_class_or_the_mixed_weights() -> None:
    names = ["cat", "dog", "fox"]
    assert caption(np.int32(1), names) == "dog"
    assert caption(np.array([0.38, 0.62, 0.0]), names) == "dog 0.62 / cat 0.38"


@pytest.mark.parametrize("stage", [{"type": "mixup", "alpha": 0.4}, {"type": "cutmix"}])
def test_mixed_batches_show_their_label_weights(demo_dir: Path, stage: dict) -> None:
    config = config_for(demo_dir, label_mode="categorical", transforms=[stage], shuffle=True)
    images, labels, names = augmented_samples(config, 8)
    assert images.dtype == np.uint8 and labels.shape == (8, len(names))
    np.testing.assert_allclose(labels.sum(axis=1), 1.0, atol=1e-5)
    mixed = [caption(t, names) for t in labels if np.count_nonzero(t > 0.005) == 2]
    assert mixed and all(" / " in c for c in mixed)


def test_each_sample_is_shown_as_it_is_beside_its_augmented_versions(tmp_path: Path) -> None:
    """Originals are the files as Pillow decodes them, named by file, and every version is
    that file through the pipeline: here a certain horizontal flip at the file's own size."""
    from PIL import Image

    from daliaug.tools.preview import augmented_versions, preview
    from tests.helpers import structured_image, write_image_dir

    images = [structured_image(24, 32, seed=i) for i in range(6)]
    folder = write_image_dir(tmp_path / "data", {"a": images[:3], "b": images[3:]})
    flip = [{"type": "flip", "horizontal": 1.0}]
    config = config_for(folder, image_size=[24, 32], transforms=flip, shuffle=True)
    shown = augmented_versions(config, 2, 3)
    assert shown.names == ["0000.png", "0002.png"]  # the first and the last sample listed
    assert shown.class_names == ["a", "b"]
    assert np.array_equal(shown.originals[0], images[0])
    assert np.array_equal(shown.originals[1], images[5])
    assert shown.augmented.shape == (6, 24, 32, 3) and shown.targets.tolist() == [0] * 3 + [1] * 3
    for row, original in enumerate(shown.originals):
        for version in shown.augmented[3 * row : 3 * row + 3]:
            assert np.array_equal(version, original[:, ::-1])
    grid = preview(config, 2, tmp_path / "grid.png", versions=3)
    with Image.open(grid) as png:
        assert png.size[0] > png.size[1]  # rows of 1 + 3 tiles
