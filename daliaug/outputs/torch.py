"""The PyTorch output: ``make_dataset`` for Keras' PyTorch backend, without TensorFlow.

On the CPU, DALI's CPU operators (or the OpenCV engine, ``backend: opencv``) make the batches
(:func:`~daliaug.outputs.batches.host_loaders`),
handed over as ``torch.Tensor`` without a copy (``torch.from_numpy``); on a GPU, DALI's own
PyTorch iterator (``nvidia.dali.plugin.pytorch``) hands over CUDA tensors that never leave the
GPU.

With ``torch.distributed`` initialized (one process per GPU, as ``torchrun`` starts them), the
ranks are the shards (:class:`~daliaug.outputs.shards.Shards`): rank ``r`` of ``W`` reads shard
``r``, ``batch_size / W`` samples per batch, the same number of batches as every other rank,
on its current CUDA device. Keras' PyTorch backend has no ``keras.distribution``: ``fit``
trains each process's model on its own, with no gradients exchanged, so data-parallel training
on several GPUs takes a loop of your own around ``torch.nn.parallel.DistributedDataParallel``,
iterating these batches.
"""

from __future__ import annotations

from collections.abc import Callable

from daliaug.outputs.batches import Batch, Shard, Start, host_loaders, local_batches, shard_layout
from daliaug.outputs.fit import FitBatches
from daliaug.outputs.gpu import IteratorEpochs, dali_gpu_pipelines, iterates
from daliaug.outputs.options import DatasetOptions
from daliaug.outputs.shards import Shards
from daliaug.run import Run


def torch_dataset(run: Run, options: DatasetOptions, initial_epoch: int) -> FitBatches:
    """The run's batches as ``torch.Tensor`` for ``model.fit`` on the PyTorch backend, made by
    its engine on its device."""
    import torch

    shard = _rank_shard(run, options)
    if iterates(run):
        return local_batches([shard], _dali_torch(shard), initial_epoch, FitBatches)

    def convert(batch: Batch) -> Batch:
        return tuple(torch.from_numpy(a) for a in batch)

    return local_batches([shard], host_loaders([shard], convert), initial_epoch, FitBatches)


def _rank_shard(run: Run, options: DatasetOptions) -> Shard:
    """This rank's shard under ``torch.distributed``, with weights (0 for padding) as with
    any number of ranks, a single one included (the run's own shard without it), on the
    rank's GPU where DALI runs on GPUs."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return run, options
    run.samples.check_distribution("torch.distributed")
    split = Shards.split(run, options, dist.get_world_size(), "rank", "torch.distributed")
    shard, options = split.shard(dist.get_rank())
    return (shard.on(torch.cuda.current_device()) if run.device == "gpu" else shard), options


def _dali_torch(shard: Shard) -> Callable[[int, Start], IteratorEpochs]:
    """``open_at`` for ``shard`` on its GPU: DALI's PyTorch iterator over its pipeline."""
    from nvidia.dali.plugin.pytorch import DALIGenericIterator

    layout = shard_layout(shard)

    def open_at(epoch: int, start: Start) -> IteratorEpochs:
        pipelines, _ = dali_gpu_pipelines([shard], epoch, start)
        iterator = DALIGenericIterator(
            pipelines, list(layout.names), auto_reset=True, prepare_first_batch=False
        )
        return IteratorEpochs(iterator, layout)

    return open_at
