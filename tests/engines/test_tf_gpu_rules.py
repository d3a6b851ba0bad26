"""The TensorFlow side of the GPU path, by DALI's rules, checked with TensorFlow's device
lists stubbed (no GPU here): DALI's device_id mapped to TensorFlow's visible GPUs, the memory
policy, where each replica's dataset and DALI run under a strategy (stand-in strategies over
GPUs), and the batch count of a GPU-placed dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import tensorflow as tf

from daliaug.epoch import EpochClock
from daliaug.errors import BackendError, BackendWarning
from daliaug.outputs.tfdata import dali_dataset as bridge
from tests.helpers import run_of


@dataclass(frozen=True)
class Gpu:
    name: str
    device_type: str = "GPU"


GPUS = [Gpu(f"/physical_device:GPU:{i}") for i in range(3)]


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Three physical GPUs; ``state`` holds what is visible, split and growing."""
    state = {"visible": list(GPUS), "split": {}, "growth": {}, "started": False}
    config = tf.config
    monkeypatch.setattr(config, "list_physical_devices", lambda kind=None: list(GPUS))
    monkeypatch.setattr(config, "get_visible_devices", lambda kind=None: state["visible"])
    monkeypatch.setattr(
        config, "get_logical_device_configuration", lambda gpu: state["split"].get(gpu.name)
    )
    monkeypatch.setattr(
        config.experimental, "get_memory_growth", lambda gpu: state["growth"].get(gpu.name, False)
    )

    def set_growth(gpu: Gpu, on: bool) -> None:
        if state["started"]:
            raise RuntimeError("Physical devices cannot be modified after being initialized")
        state["growth"][gpu.name] = on

    monkeypatch.setattr(config.experimental, "set_memory_growth", set_growth)
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    return state


def test_device_id_is_the_cuda_ordinal_mapped_to_tensorflows_visible_gpus(gpus: dict) -> None:
    assert [bridge.tf_gpu(i) for i in range(3)] == ["/gpu:0", "/gpu:1", "/gpu:2"]
    gpus["visible"] = [GPUS[0], GPUS[2]]  # tf.config.set_visible_devices hid GPU 1
    assert bridge.tf_gpu(2) == "/gpu:1"
    with pytest.raises(BackendError, match="device_id: GPU 1 is hidden from TensorFlow"):
        bridge.tf_gpu(1)
    gpus["split"] = {GPUS[0].name: ["a", "b"]}  # GPU 0 split into two logical devices
    assert bridge.tf_gpu(2) == "/gpu:2"
    with pytest.raises(BackendError, match="device_id: 3, but TensorFlow sees 3 GPU"):
        bridge.tf_gpu(3)


def test_memory_growth_is_turned_on_unless_the_user_decided(
    gpus: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpus["split"] = {GPUS[1].name: ["limit"]}  # a memory limit: the user's decision
    bridge.memory_policy()
    assert gpus["growth"] == {GPUS[0].name: True, GPUS[2].name: True}
    gpus["growth"].clear()
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false")
    bridge.memory_policy()
    assert gpus["growth"] == {}


def test_too_late_for_memory_growth_warns(gpus: dict) -> None:
    gpus["started"] = True
    with pytest.warns(BackendWarning, match="TF_FORCE_GPU_ALLOW_GROWTH"):
        bridge.memory_policy()


class Replicas:
    """Stands in for the engines' datasets: records each replica's DALI GPU and dataset
    placement, and the GPU pipelines its process runs (which share its cores), and gives tiny
    datasets."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []
        self.gpus: list[int] = []

    def __call__(self, run, options) -> tf.data.Dataset:
        self.calls.append((run.device_id, options.place))
        self.gpus.append(options.gpus)
        return tf.data.Dataset.range(1)


class MirroredOnGpus(tf.distribute.MirroredStrategy):
    """A ``MirroredStrategy`` over GPUs that does not start TensorFlow (no GPU here): it calls
    the dataset function once per replica, as ``InputReplicationMode.PER_REPLICA`` does, and
    keeps the input options."""

    def __init__(self, devices: list[str]) -> None:  # without super(): no runtime, no GPUs
        self._extended = SimpleNamespace(worker_devices=tuple(devices))
        self.options = None

    @property
    def num_replicas_in_sync(self) -> int:
        return len(self._extended.worker_devices)

    def distribute_datasets_from_function(self, function, options=None) -> SimpleNamespace:
        self.options = options
        n = self.num_replicas_in_sync
        return SimpleNamespace(
            parts=[function(tf.distribute.InputContext(n, i, n)) for i in range(n)]
        )


def one_worker_on_gpus(devices: list[str]) -> SimpleNamespace:
    """A ``MultiWorkerMirroredStrategy`` worker with these local GPUs (one input pipeline)."""
    n = len(devices)

    def distribute(function, options=None) -> SimpleNamespace:
        return SimpleNamespace(parts=[function(tf.distribute.InputContext(1, 0, n))])

    return SimpleNamespace(
        num_replicas_in_sync=n,
        extended=SimpleNamespace(worker_devices=tuple(devices)),
        distribute_datasets_from_function=distribute,
    )


REPLICA_GPUS = [f"/job:localhost/replica:0/task:0/device:GPU:{i}" for i in range(2)]


def distribute(
    monkeypatch: pytest.MonkeyPatch, numbered_list: Path, strategy: object, device: str
) -> Replicas:
    from daliaug.outputs import bridges
    from daliaug.outputs.options import DatasetOptions
    from daliaug.outputs.tfdata.replicas import distributed_dataset
    from tests.helpers import config_for

    source = {"type": "file_list", "path": str(numbered_list)}
    config = config_for(numbered_list.parent, source=source, batch_size=4)
    replicas = Replicas()
    monkeypatch.setattr(bridges, "engine_dataset", replicas)
    distributed_dataset(run_of(config, device=device), strategy, DatasetOptions(clock=EpochClock()))
    return replicas


def test_dali_on_the_cpu_under_mirrored_strategy_on_gpus_stays_on_the_host(
    gpus: dict, numbered_list: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DALI on the CPU refuses a GPU-placed dataset: each replica's dataset stays on the host
    and TensorFlow prefetches its batches to the replica's GPU."""
    strategy = MirroredOnGpus(REPLICA_GPUS)
    backend = distribute(monkeypatch, numbered_list, strategy, "cpu")
    assert backend.calls == [(0, "/cpu:0"), (0, "/cpu:0")]
    assert backend.gpus == [1, 1]  # no GPU pipeline
    assert not strategy.options.experimental_place_dataset_on_device
    assert strategy.options.experimental_fetch_to_device


def test_dali_on_the_gpu_under_mirrored_strategy_runs_on_each_replicas_gpu(
    gpus: dict, numbered_list: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    strategy = MirroredOnGpus(REPLICA_GPUS)
    backend = distribute(monkeypatch, numbered_list, strategy, "gpu")
    assert backend.calls == [(0, REPLICA_GPUS[0]), (1, REPLICA_GPUS[1])]
    assert backend.gpus == [2, 2]  # two GPU pipelines share this process's cores
    assert strategy.options.experimental_place_dataset_on_device
    assert not strategy.options.experimental_fetch_to_device
    gpus["visible"] = [GPUS[0], GPUS[2]]  # TensorFlow's GPU:1 is CUDA device 2
    assert (
        distribute(monkeypatch, numbered_list, MirroredOnGpus(REPLICA_GPUS), "gpu").calls[1][0] == 2
    )


def test_each_local_replica_of_a_multi_worker_strategy_gets_its_own_gpu(
    gpus: dict, numbered_list: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under MultiWorkerMirroredStrategy the worker's datasets sit on the host (per-replica
    placement is MirroredStrategy's only), but each local replica's DALI runs on its own GPU."""
    backend = distribute(monkeypatch, numbered_list, one_worker_on_gpus(REPLICA_GPUS), "gpu")
    assert backend.calls == [(0, "/cpu:0"), (1, "/cpu:0")]
    assert backend.gpus == [2, 2]
    assert distribute(
        monkeypatch, numbered_list, one_worker_on_gpus(REPLICA_GPUS), "cpu"
    ).calls == [
        (0, "/cpu:0"),
        (0, "/cpu:0"),
    ]


def dali_standin(
    monkeypatch: pytest.MonkeyPatch, count: int, named_faults: bool = True
) -> tf.data.Dataset:
    """A DALI dataset as a GPU-placed one is, on the CPU: ``DALIDatasetWithInputs`` with no
    ``tf.data`` stage after it, whose cardinality DALI reports as infinite; without
    ``named_faults``, iterated by ``tf.data``'s own iterator (not daliaug's, which names a
    failing file)."""
    import numpy as np

    from daliaug.config import load_config
    from daliaug.sources.arrays import array_samples

    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 16,
            "batch_size": 4,
            "label_mode": "categorical",
            "seed": 1,
        }
    )
    x = np.random.default_rng(0).integers(0, 256, (count, 16, 16, 3), dtype=np.uint8)
    samples = array_samples(x, np.arange(count) % 2)
    with monkeypatch.context() as m:
        m.setattr(tf.data.experimental, "assert_cardinality", lambda n: lambda ds: ds)
        m.setattr(bridge, "on_first_batch", lambda ds: ds)  # a host dataset's stage
        if not named_faults:
            m.setattr(bridge, "named_faults", lambda ds, feed: ds)
        dataset = bridge.dali_dataset(run_of(config, samples))
    assert int(dataset.cardinality()) == tf.data.INFINITE_CARDINALITY
    return dataset


def fit_two_epochs(train: tf.data.Dataset, validation: tf.data.Dataset) -> dict:
    """What ``model.fit`` showed: its progress target, the batches of each epoch and of each
    validation run, and its warnings."""
    import warnings

    import keras

    seen: dict = {"train": [], "validation": []}

    class Count(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None) -> None:
            seen["target"] = self.params["steps"]
            seen["train"].append(0)
            seen["validation"].append(0)

        def on_train_batch_end(self, batch, logs=None) -> None:
            seen["train"][-1] += 1

        def on_test_batch_end(self, batch, logs=None) -> None:
            seen["validation"][-1] += 1

    model = keras.Sequential(
        [keras.Input((16, 16, 3)), keras.layers.Flatten(), keras.layers.Dense(2, "softmax")]
    )
    model.compile("sgd", "categorical_crossentropy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(train, validation_data=validation, epochs=2, verbose=0, callbacks=[Count()])
    seen["warnings"] = [str(w.message) for w in caught if "ran out of data" in str(w.message)]
    return seen


@pytest.mark.slow
def test_model_fit_knows_the_epoch_length_of_a_gpu_placed_dataset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keras' dataset adapter asks ``cardinality()``; told infinite it shows no progress
    target and warns at every epoch's end that the input ran out of data. With the length
    reported, as the GPU-placed dataset does, both go."""
    # Keras on DALI's own cardinality (through tf.data's iterator: Keras' loop over a Python
    # iterator cannot end an epoch of unknown length; daliaug's datasets always report theirs)
    plain = [dali_standin(monkeypatch, n, named_faults=False) for n in (20, 8)]
    unknown = fit_two_epochs(*plain)
    assert unknown["target"] is None and unknown["warnings"]  # what DALI's cardinality gives
    train, validation = dali_standin(monkeypatch, 20), dali_standin(monkeypatch, 8)
    bridge.report_length(train, 5)
    bridge.report_length(validation, 2)
    known = fit_two_epochs(train, validation)
    assert known == {"target": 5, "train": [5, 5], "validation": [2, 2], "warnings": []}
