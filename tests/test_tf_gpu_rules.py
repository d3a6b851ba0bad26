"""The TensorFlow side of the GPU path, by DALI's rules, checked with TensorFlow's device
lists stubbed (no GPU here): DALI's device_id mapped to TensorFlow's visible GPUs, the memory
policy, and the batch count of a GPU-placed dataset."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import tensorflow as tf

from daliaug.errors import BackendError, BackendWarning
from daliaug.outputs.tfdata import dali_dataset as bridge


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
