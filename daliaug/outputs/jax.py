"""The JAX output: ``make_dataset`` for Keras' JAX backend, without TensorFlow.

On the CPU, DALI's CPU operators (or the OpenCV engine, ``backend: opencv``) make the batches
(:func:`~daliaug.outputs.batches.host_loaders`),
put on JAX's devices as ``jax.Array``; on GPUs, DALI's own JAX iterator
(``nvidia.dali.plugin.jax``) runs one pipeline per GPU of this process and hands over
``jax.Array``\\ s that never leave the GPUs.

Under ``keras.distribution.DataParallel`` (one process or several, after
``keras.distribution.initialize``) every device of the distribution's mesh is a shard
(:class:`~daliaug.outputs.shards.Shards`), numbered by its place in the mesh, so the shards
are numbered across processes. Each process runs the shards of its own devices and yields its
part of the global batch (``batch_size / processes`` samples: its devices' batches in mesh
order), laid out over its devices; Keras joins the processes' parts into the global batch
(``jax.make_array_from_process_local_data``), device for device without a copy. Every sample
comes once per epoch over all processes and every process runs the same number of steps.

On GPUs, XLA's command buffers are turned off before JAX starts its backend (DALI's advice:
:func:`daliaug.cuda.xla_command_buffers_off`); where JAX started first without the flag, a
``BackendWarning`` names it.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from daliaug.cuda import COMMAND_BUFFERS_OFF, XLA_VARIABLE, xla_command_buffers_off
from daliaug.errors import BackendWarning, ConfigError, user_stacklevel
from daliaug.outputs.batches import Batch, Shard, Start, host_loaders, local_batches, shard_layout
from daliaug.outputs.fit import FitBatches
from daliaug.outputs.gpu import IteratorEpochs, dali_gpu_pipelines, iterates
from daliaug.outputs.options import DatasetOptions
from daliaug.outputs.shards import Shards
from daliaug.run import Run


def jax_dataset(run: Run, options: DatasetOptions, initial_epoch: int) -> FitBatches:
    """The run's batches as ``jax.Array``\\ s for ``model.fit`` on the JAX backend, made by
    its engine on its device."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    if run.device == "gpu":
        command_buffers_off()
    devices, shards = _local_shards(run, options)
    sharding = None
    if devices:
        axis = "batch"
        sharding = NamedSharding(Mesh(np.array(devices), (axis,)), PartitionSpec(axis))
    if iterates(run):
        if devices:  # one GPU pipeline per local device, sharing this process's cores
            shards = [
                (r.on(d.local_hardware_id), dataclasses.replace(o, gpus=len(devices)))
                for (r, o), d in zip(shards, devices, strict=True)
            ]
        return local_batches(shards, _dali_jax(shards, sharding), initial_epoch, FitBatches)

    def convert(batch: Batch) -> Batch:
        return tuple(jax.device_put(batch, sharding))

    return local_batches(shards, host_loaders(shards, convert), initial_epoch, FitBatches)


def command_buffers_off() -> None:
    """XLA's command buffers off before JAX starts its backend, or a ``BackendWarning`` naming
    the variable to set where it has started without them off."""
    if xla_command_buffers_off() == "too late":
        warnings.warn(
            "JAX started before daliaug could turn XLA's command buffers off: XLA may capture "
            "CUDA graphs while DALI runs on the GPU (NVIDIA/DALI#6449). Set "
            f"{XLA_VARIABLE}={COMMAND_BUFFERS_OFF} before anything starts JAX (or make the "
            "dataset first)",
            BackendWarning,
            stacklevel=user_stacklevel(),
        )


def _local_shards(run: Run, options: DatasetOptions) -> tuple[list[Any], list[Shard]]:
    """This process's devices of the Keras distribution (none without one) and their shards
    (the run's own shard without a distribution)."""
    import jax
    from keras import distribution

    current = distribution.distribution()
    if current is None:
        return [], [(run, options)]
    if not isinstance(current, distribution.DataParallel):
        raise ConfigError(
            f"keras.distribution: {type(current).__name__} is not supported; daliaug shards "
            "its batches for DataParallel"
        )
    run.samples.check_distribution("a keras.distribution")
    mesh = list(current.device_mesh.backend_mesh.devices.flat)
    split = Shards.split(run, options, len(mesh), "device", "a keras.distribution")
    local = [i for i, d in enumerate(mesh) if d.process_index == jax.process_index()]
    return [mesh[i] for i in local], [split.shard(i) for i in local]


def _dali_jax(shards: list[Shard], sharding: Any) -> Callable[[int, Start], IteratorEpochs]:
    """``open_at`` for ``shards`` on GPUs: DALI's JAX iterator over one pipeline per shard,
    its outputs laid out by ``sharding`` (without one: on the one pipeline's GPU)."""
    from nvidia.dali.plugin.jax import DALIGenericIterator

    layout = shard_layout(shards[0])

    def open_at(epoch: int, start: Start) -> IteratorEpochs:
        pipelines, positions = dali_gpu_pipelines(shards, epoch, start)
        # DALI's iterator takes the epoch's size only with several pipelines (full batches)
        size = -1 if len(shards) == 1 else len(shards) * positions
        iterator = DALIGenericIterator(
            pipelines,
            list(layout.names),
            size=size,
            auto_reset=True,
            sharding=sharding,
            prepare_first_batch=False,
        )
        return IteratorEpochs(iterator, layout)

    return open_at
