"""Every command works on every valid config: ``daliaug preview``, ``check``, ``doctor`` and
``parity`` on each shipped config and on the config ``convert --from-keras`` writes from Keras'
default layers (``fill_mode: reflect``, which only the TensorFlow engine runs), on a few small
images in batches of 4. The commands run one after another in one process (``daliaug.cli.main``,
as the ``daliaug`` script calls it): the shipped configs' all in one, the converted config's in
one of its own, so that the suite pays for one start of TensorFlow and DALI for all of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from daliaug.config import load_config
from daliaug.config_files import shipped_configs
from tests.helpers import daliaug_runs, structured_image, write_image_dir

ROOT = Path(__file__).parents[2]
COMMANDS = {
    "preview": ["--count", "2", "--versions", "2"],
    "check": [],
    "doctor": ["--steps", "1", "--warmup", "1"],
    "parity": ["--seed", "1"],
}


def daliaug(*args: object, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "daliaug.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "DALIAUG_CACHE": str(cache), "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small data for each kind of shipped source: class folders, arrays, segmentation."""
    from daliaug.tools.demo_data import write_segmentation_dataset

    root = tmp_path_factory.mktemp("every_command")
    images = [structured_image(40, 48, seed=i) for i in range(8)]
    folders = write_image_dir(root / "folders", {"cat": images[:4], "dog": images[4:]})
    arrays = root / "arrays.npz"
    np.savez(arrays, x=np.stack([structured_image(32, 32, seed=i) for i in range(8)]), y=[0, 1] * 4)
    segmentation = write_segmentation_dataset(root / "seg", count=8, size=(48, 48))
    return {"directory": folders, "arrays": arrays, "segmentation": segmentation}


def small(config: dict, out: Path, data: Path | None = None) -> Path:
    """``config`` in batches of 4 (reading ``data`` where given), written to ``out``."""
    loaded = load_config({**config, "batch_size": 4})
    if data is not None:
        loaded = loaded.model_copy(update={"source": loaded.source.with_path(data)})
    out.write_text(loaded.to_yaml())
    return out


def command_runs(config: Path, out: Path) -> list[list]:
    """Each command of :data:`COMMANDS` on ``config``, its preview written under ``out``."""
    runs = [[command, config, *COMMANDS[command]] for command in COMMANDS]
    runs[list(COMMANDS).index("preview")] += ["--out", out / f"{config.stem}.png"]
    return runs


def check_runs(runs: list[tuple[int, str]]) -> None:
    """Every command exited 0 and printed no traceback."""
    assert len(runs) == len(COMMANDS)
    for command, (code, text) in zip(COMMANDS, runs, strict=True):
        assert code == 0 and "Traceback" not in text, f"daliaug {command}: {text[-3000:]}"


def run_every_command(config: Path, tmp_path: Path) -> None:
    """Each command of :data:`COMMANDS` on ``config``, in turn, in one process."""
    env = {"DALIAUG_CACHE": str(tmp_path / "cache"), "COLUMNS": "200"}
    check_runs(daliaug_runs(*command_runs(config, tmp_path), env=env))


@pytest.fixture(scope="module")
def shipped_runs(
    data: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[tuple[int, str]]]:
    """Each shipped config's commands (exit code, stderr), all run in one process."""
    root = tmp_path_factory.mktemp("shipped")
    runs = {}
    for name, path in sorted(shipped_configs().items()):
        config = yaml.safe_load(path.read_text())
        runs[name] = command_runs(
            small(config, root / f"{name}.yaml", data[config["source"]["type"]]), root
        )
    env = {"DALIAUG_CACHE": str(root / "cache"), "COLUMNS": "200"}
    done = iter(daliaug_runs(*(run for each in runs.values() for run in each), env=env))
    return {name: [next(done) for _ in each] for name, each in runs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(shipped_configs()))
def test_every_command_runs_every_shipped_config(
    name: str, shipped_runs: dict[str, list[tuple[int, str]]]
) -> None:
    check_runs(shipped_runs[name])


@pytest.fixture(scope="module")
def from_keras(data: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The config ``convert --from-keras`` writes for a model with Keras' default affine
    layers (``fill_mode="reflect"``): the TensorFlow backend's only."""
    import keras

    root = tmp_path_factory.mktemp("from_keras")
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((40, 48, 3)),
            L.RandomFlip(),
            L.RandomRotation(0.1),
            L.RandomTranslation(0.1, 0.1),
            L.RandomZoom(0.1),
            L.Rescaling(1 / 255),
            L.GlobalAveragePooling2D(),
            L.Dense(2, activation="softmax"),
        ]
    )
    model.save(root / "model.keras")
    out = root / "written.yaml"
    result = daliaug(
        "convert", data["directory"], "--from-keras", root / "model.keras", "-o", out, cache=root
    )
    assert result.returncode == 0, result.stderr
    assert "[yellow]" not in result.stderr and "note: RandomRotation" in result.stderr
    return small(yaml.safe_load(out.read_text()), out)


@pytest.mark.slow
def test_every_command_runs_the_config_from_keras_default_layers(
    from_keras: Path, tmp_path: Path
) -> None:
    config = yaml.safe_load(from_keras.read_text())
    assert config["backend"] == "tf" and config["transforms"][2]["fill"] == "reflect"
    run_every_command(from_keras, tmp_path)


@pytest.mark.slow
def test_doctor_compiles_a_model_saved_before_compile_and_names_its_augmentation(
    data: dict[str, Path], tmp_path: Path
) -> None:
    import keras

    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            L.RandomFlip("horizontal"),
            L.Conv2D(4, 3),
            L.GlobalAveragePooling2D(),
            L.Dense(2, activation="softmax"),
        ]
    )
    model.save(tmp_path / "uncompiled.keras")
    source = {"type": "directory", "path": str(data["directory"])}
    config = small({"source": source, "image_size": 32}, tmp_path / "c.yaml")
    result = daliaug(
        "doctor", config, "--model", tmp_path / "uncompiled.keras", "--steps", "1", "--warmup", "1",
        cache=tmp_path / "cache",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    text = " ".join(result.stderr.split())
    assert "saved before compile(): compiled here for the measurement only" in text
    assert "random augmentation layers (RandomFlip)" in text and "split_model" in text
