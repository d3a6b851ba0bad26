"""The ``random_affine`` transform (torchvision's ``RandomAffine``): its map against
torchvision's own ``_get_inverse_affine_matrix``, its whole-pixel translations, its fields.
Its pixels against torchvision's ``affine`` on every engine are in
tests/torchvision/test_from_torchvision.py."""

from __future__ import annotations

import numpy as np
import pytest

from daliaug.algebra import Canvas, Math
from daliaug.config import load_config
from daliaug.epoch import draw_rows
from daliaug.errors import ConfigError

FIELDS = {
    "degrees": 40,
    "translate": [0.3, 0.2],
    "scale": [0.5, 1.5],
    "shear_x": [-30, 30],
    "shear_y": [-20, 20],
}


def _config(**fields: object):
    return load_config(
        {
            "source": {"type": "arrays"},
            "image_size": [30, 50],
            "transforms": [{"type": "random_affine", **fields}],
        }
    )


def test_the_map_is_torchvisions_inverse_inverted() -> None:
    """torchvision samples the source at ``C + M⁻¹(q − C − T)``; daliaug's forward map, about
    the centre ``C`` (30 x 50), is that inverse's inverse."""
    from tests.torchvision.conftest import v2

    v2()
    from torchvision.transforms.functional import _get_inverse_affine_matrix

    config = _config(**FIELDS)
    t = config.transforms[0]
    rows = draw_rows(config.plan, np.random.default_rng(0), 50)
    for row in rows:
        p = dict(zip(t.params, row.tolist(), strict=True))
        forward, _ = t.warp(p, Canvas(30.0, 50.0), Math.of(np))
        shift = [round(p["tx"] * 0.3 * 50), round(p["ty"] * 0.2 * 30)]
        shear = [p["shear_x"], p["shear_y"]]
        inverse = _get_inverse_affine_matrix([25.0, 15.0], p["angle"], shift, p["scale"], shear)
        theirs = np.linalg.inv(np.vstack([np.reshape(inverse, (2, 3)), [0, 0, 1]]))
        ours = np.array([[forward.a, forward.b, forward.c], [forward.d, forward.e, forward.f]])
        np.testing.assert_allclose(ours, theirs[:2], rtol=1e-5, atol=1e-4)


def test_translations_are_whole_pixels_within_the_bound() -> None:
    config = _config(translate=[0.3, 0.1])
    t = config.transforms[0]
    rows = draw_rows(config.plan, np.random.default_rng(1), 2000)
    shifts = []
    for row in rows:
        forward, _ = t.warp(
            dict(zip(t.params, row.tolist(), strict=True)), Canvas(30.0, 50.0), Math.of(np)
        )
        shifts.append((forward.c, forward.f))
    tx, ty = np.array(shifts).T
    assert np.all(tx == np.round(tx)) and np.all(ty == np.round(ty))
    assert set(tx.astype(int)) == set(range(-15, 16)) and set(ty.astype(int)) == {
        -3,
        -2,
        -1,
        0,
        1,
        2,
        3,
    }


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"translate": [1.5, 0]}, "translate"),
        ({"scale": [0.0, 1.0]}, "scale"),
        ({"shear_x": [-85, 0]}, "shear_x"),
        ({"degrees": [10, -10]}, "degrees"),
    ],
)
def test_fields_are_checked(fields: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=rf"random_affine\.{named}"):
        _config(**fields)
