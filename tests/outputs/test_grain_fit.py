"""The Grain output through a real ``model.fit`` on Keras' JAX backend, TensorFlow unimportable
(tests/outputs/grain_fit_job.py): a ``grain.IterDataset`` whose epochs are bitwise the JAX
output's, which ``fit`` trains on one epoch per pass (or, repeated, with ``steps_per_epoch``,
one iterator for the run), and whose state, saved by Grain's own checkpoint handler mid-epoch,
restores the same batches in a new dataset. Multi-process sharding through Grain:
tests/outputs/test_jax_distribution.py."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.helpers import run_keras_job, structured_image, write_image_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("grain") is None or importlib.util.find_spec("jax") is None,
        reason="grain and jax are not installed",
    ),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, np.ndarray]]:
    root = tmp_path_factory.mktemp("grain_fit")
    write_image_dir(
        root / "num", {"img": [structured_image(20 + i % 3, 24, seed=i) for i in range(23)]}
    )
    (root / "numbered.csv").write_text("".join(f"num/img/{i:04d}.png,{i}\n" for i in range(23)))
    (root / "checkpoint").mkdir()
    from daliaug.sources.file_list import FileListSource
    from daliaug.tools.convert import write_tfrecords

    listed = FileListSource(path=root / "numbered.csv").samples()
    write_tfrecords(listed, root / "records", shards=2)
    spec = {
        "numbered": str(root / "numbered.csv"),
        "checkpoint": str(root / "checkpoint"),
        "out": str(root / "grain.npz"),
        "records": str(root / "records"),
        "index_dir": str(root),
    }
    return run_keras_job("tests.outputs.grain_fit_job", "jax", spec, 300)


def batches(arrays: dict[str, np.ndarray], name: str) -> list[list[np.ndarray]]:
    count = len({key.split("/")[1] for key in arrays if key.startswith(f"{name}/")})
    return [[arrays[f"{name}/{i}/{j}"] for j in range(2)] for i in range(count)]


def test_the_grain_dataset_is_the_jax_outputs_epochs(run: tuple[dict, dict]) -> None:
    report, arrays = run
    assert report["type"].startswith("grain.") and report["length"] == 5
    for epoch in range(2):
        got, want = batches(arrays, f"grain{epoch}"), batches(arrays, f"jax{epoch}")
        assert len(got) == len(want) == 5
        for g, w in zip(got, want, strict=True):
            assert all(np.array_equal(a, b) for a, b in zip(g, w, strict=True))
    labels = [np.concatenate([b[1] for b in batches(arrays, f"grain{e}")]) for e in range(2)]
    assert (
        sorted(labels[0].tolist()) == list(range(23)) and labels[0].tolist() != labels[1].tolist()
    )


def epoch_labels(arrays: dict[str, np.ndarray], epoch: int) -> list[list[int]]:
    return [b[1].tolist() for b in batches(arrays, f"jax{epoch}")]


@pytest.mark.parametrize("way", ["epochs", "repeat"])
def test_fit_trains_on_the_grain_dataset_one_epoch_after_another(
    run: tuple[dict, dict], way: str
) -> None:
    """Keras looks at the first batches (its Grain adapter at two, to learn the element spec;
    without ``steps_per_epoch`` its trainer at one more, to build the model), from iterators it
    leaves unfinished, which do not count; then each epoch of ``fit`` draws one of daliaug's,
    in order. Without ``steps_per_epoch`` Keras learns the epoch's length at its end, warning
    that the input "ran out of data"; with ``repeat()`` it does not."""
    report, arrays = run
    fit = report[way]
    first, second = epoch_labels(arrays, 0), epoch_labels(arrays, 1)
    looks = fit["drawn"][: -len(first + second)]
    assert fit["drawn"][len(looks) :] == first + second
    assert 2 <= len(looks) <= 3 and all(batch in first[:2] for batch in looks)
    assert fit["epoch_after"] == 2 and np.all(np.isfinite(fit["loss"]))
    ran_out = [w for w in fit["warnings"] if "ran out of data" in w]
    assert bool(ran_out) == (way == "epochs"), fit["warnings"]


def test_grains_checkpoint_restores_the_same_batches_in_a_new_dataset(
    run: tuple[dict, dict],
) -> None:
    report, arrays = run
    state = report["restored_state"]
    assert {k: v for k, v in state.items() if k != "stream"} == {
        "epoch": 1,
        "batch": 2,
        "batches": 5,
        "seed": 5,
    }
    assert (state["stream"]["epoch"], state["stream"]["position"]) == (1, 10)  # 2 batches of 5
    saved, restored = batches(arrays, "after_save"), batches(arrays, "after_restore")
    assert len(saved) == len(restored) == 4
    for a, b in zip(saved, restored, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert [b[1].tolist() for b in saved[:3]] == epoch_labels(arrays, 1)[2:]


@pytest.mark.parametrize("taken", [5, 7])
def test_grains_checkpoint_of_dalis_own_reader_restores_the_same_batches(
    run: tuple[dict, dict], taken: int
) -> None:
    """Over TFRecords read by DALI's own reader the Grain state's stream state also holds
    the reader's checkpoints: restored in a new dataset, mid-epoch or at an epoch's end, the
    same batches."""
    report, arrays = run
    state = report[f"restored_staterecords{taken}"]
    assert (state["epoch"], state["batch"]) == ((0, 5) if taken == 5 else (1, 2))
    assert state["stream"]["readers"]  # the stream's state: the next epoch's start at 5
    assert (state["stream"]["epoch"], state["stream"]["position"]) == (
        (1, 0) if taken == 5 else (1, 10)
    )
    saved = batches(arrays, f"after_saverecords{taken}")
    restored = batches(arrays, f"after_restorerecords{taken}")
    assert len(saved) == len(restored) == 4
    for a, b in zip(saved, restored, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
