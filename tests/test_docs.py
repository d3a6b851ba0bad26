"""The documentation site's generated parts, without building it: the front page's chart shows
the committed records' figures, the config reference holds every field of every model, the
command line reference every command, the gallery shows every transform at settings the
config takes, and links to repository files find their place in the site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs import figures, gallery, hooks, reference

ROOT = Path(__file__).parents[1]


def test_the_chart_shows_the_records_figures() -> None:
    """Every bar's figure in the committed chart is the record's (a stale chart fails: run
    ``python -m docs.figures``), and the chart names each record it reads."""
    text = figures.CHART.read_text()
    shown = [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", text)]
    for panel in figures.panels():
        assert f"record: bench/results/{panel['record']}" in shown
        for name, rate in panel["rates"].items():
            assert name in shown and figures.label(rate) in shown, (name, rate)
    drawn = [t for t in shown if t.endswith("images/s")]
    assert len(drawn) == sum(len(p["rates"]) for p in figures.panels())


def test_the_chart_reads_the_tables_medians() -> None:
    """The figures the chart draws are the ones the records' own tables print."""
    latest = (ROOT / "bench" / "results" / "LATEST.md").read_text()
    assert "copy of cpu-20261124-0030.md" in latest
    for label, rate in figures.cpu_rates().items():
        full = next(k for k, v in figures.CPU_TOOLS.items() if v == label)
        assert f"| {full} | " in latest and f" | {rate:,.0f} | " in latest, label
    table = (ROOT / "bench" / "results" / "opencv-engine-20261129-0840.md").read_text()
    for rate in figures.opencv_rates().values():
        assert f"{rate:.0f}" in table


def test_the_front_picture_is_committed_and_small() -> None:
    assert 10_000 < figures.PICTURE.stat().st_size < 200_000


def test_the_config_reference_holds_every_field_of_every_model() -> None:
    from daliaug.config import Config, Output
    from daliaug.sources import SourceConfig
    from daliaug.transforms import TRANSFORMS

    text = reference.config_reference()
    models = [Config, Output, *SourceConfig.registry.values(), *TRANSFORMS.values()]
    for model in models:
        for field in model.model_fields:
            assert f"| `{field}` |" in text, (model.__name__, field)
    for name in [*SourceConfig.registry, *TRANSFORMS]:
        assert f"### `{name}`" in text, name
    assert "| `batch_size` | integer 1..65536 | `32` |" in text
    assert "| `hw_decoder_load` | number 0..1 | `0.99` | The share" in text


def test_the_cli_reference_holds_every_command() -> None:
    from daliaug.cli import COMMANDS

    text = reference.cli_reference()
    for name in COMMANDS:
        assert f"### `daliaug {name} --help`" in text and f"usage: daliaug {name}" in text


def test_the_gallery_shows_every_transform_at_settings_the_config_takes() -> None:
    from daliaug.config import load_config
    from daliaug.transforms import TRANSFORMS

    shown = gallery.examples()
    assert set(shown) == set(TRANSFORMS) - {"normalize"}
    for example in shown.values():
        settings = gallery.settings(example)
        assert 1 <= len(settings) <= len(gallery.MAGNITUDES)
        for _, transform in settings:
            config = {
                "source": {"type": "arrays"},
                "image_size": gallery.IMAGE_SIZE,
                "label_mode": "categorical",
                "transforms": [transform],
            }
            load_config(config)  # raises, naming the field, where a setting is not valid


@pytest.mark.slow
def test_the_gallery_renders_a_transform_with_its_masks_and_boxes(tmp_path: Path) -> None:
    pytest.importorskip("cv2")
    sources = gallery._sources(tmp_path / "data")
    entry = gallery.render_one("rotation", gallery.examples()["rotation"], sources, tmp_path)
    assert entry.engine == "opencv" and entry.settings == ["angle: 15", "angle: 30", "angle: 45"]
    from PIL import Image

    with Image.open(entry.path) as picture:
        assert picture.format == "JPEG" and picture.width > picture.height  # two rows of four


@pytest.mark.parametrize(
    ("page", "target", "site"),
    [
        (
            "docs/pages/benchmarks.md",
            "../../bench/results/LATEST.md",
            "repo/bench/results/LATEST.md",
        ),
        ("docs/pages/keras.md", "install.md", "install.md"),
        ("bench/README.md", "results/LATEST.md", "repo/bench/results/LATEST.md"),
        ("bench/README.md", "../docs/pages/gallery.md", "gallery.md"),
    ],
)
def test_a_link_to_a_repository_file_finds_its_place_in_the_site(
    page: str, target: str, site: str
) -> None:
    (resolved,) = hooks.linked(f"see [it]({target}#part) and `[not](a link)`", page)
    assert hooks.site_path(resolved) == site
    assert hooks.repo_path(hooks.site_path(resolved)) == resolved
