"""The ``solarize`` pixel stage on both engines (DALI's CPU pipeline and the TF engine), checked
against PIL's ``ImageOps.solarize``, the definition torchvision's ``RandomSolarize`` uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from daliaug.config import load_config
from tests.helpers import augment


@pytest.mark.parametrize(("threshold", "drawn"), [(128, 1.0), (64, 1.0), (128, 0.0)])
def test_solarize_matches_pil(
    backend: str, square_dir: Path, square_image: np.ndarray, threshold: int, drawn: float
) -> None:
    transform = {"type": "solarize", "threshold": threshold}
    out = augment(backend, square_dir, [transform], params={"0.solarize": drawn})
    solarized = np.asarray(ImageOps.solarize(Image.fromarray(square_image), threshold))
    np.testing.assert_allclose(out, solarized if drawn else square_image, atol=1e-3)


def test_solarize_follows_the_colour_pass(
    backend: str, square_dir: Path, square_image: np.ndarray
) -> None:
    """A pixel stage runs on the recoloured image, whatever its place in the list."""
    transforms = [
        {"type": "solarize", "threshold": 100, "probability": 1.0},
        {"type": "brightness", "factor": [0.5, 0.5]},
    ]
    out = augment(backend, square_dir, transforms)
    darker = square_image * 0.5
    expected = np.where(darker >= 100, 255.0 - darker, darker)
    np.testing.assert_allclose(out, expected, atol=1e-3)


def test_solarize_draws_its_probability() -> None:
    from daliaug.epoch import draw_rows

    config = load_config(
        {
            "source": {"type": "directory", "path": "."},
            "image_size": 8,
            "transforms": [{"type": "solarize", "probability": 0.3}],
        }
    )
    rows = draw_rows(config.plan, np.random.default_rng(0), 20000)
    assert set(np.unique(rows)) == {0.0, 1.0}
    assert abs(rows.mean() - 0.3) < 0.015


def test_threshold_is_bounded() -> None:
    from daliaug.errors import ConfigError

    with pytest.raises(ConfigError, match=r"transforms\.0\.solarize\.threshold"):
        load_config(
            {
                "source": {"type": "directory", "path": "."},
                "image_size": 8,
                "transforms": [{"type": "solarize", "threshold": 300}],
            }
        )
