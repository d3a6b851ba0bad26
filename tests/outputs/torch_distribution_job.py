"""One of several PyTorch processes (``torch.distributed``, gloo on the CPU), run by
tests/outputs/test_torch_distribution.py with TensorFlow unimportable.

``python -m tests.outputs.torch_distribution_job SPEC_JSON``: SPEC has ``rank``, ``world``, ``port``
(the rendezvous on 127.0.0.1) and ``out`` (the JSON written at the end): the labels and
weights of this rank's batches in two epochs, what ``keras.distribution`` does on this
backend, and the sum of the model's weights after one epoch of a data-parallel loop of one's
own around ``torch.nn.parallel.DistributedDataParallel``.
"""

from __future__ import annotations

import datetime
import json
import os
import sys


def main(spec: dict) -> None:
    sys.modules["tensorflow"] = None  # type: ignore[assignment]  # the torch path needs none
    import keras
    import numpy as np
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{spec['port']}",
        rank=spec["rank"],
        world_size=spec["world"],
        timeout=datetime.timedelta(seconds=120),  # an error, not a hang, if a rank is missing
    )
    import daliaug

    x = np.stack([np.full((12, 12, 3), 9 * i, np.uint8) for i in range(13)])
    config = daliaug.load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 12,
            "batch_size": 4,
            "seed": 3,
            "backend": "cpu",
            "num_threads": 1,
            "transforms": [{"type": "flip", "horizontal": 0.5}],
        }
    )
    dataset = daliaug.make_dataset(config, x=x, y=np.arange(13))
    epochs = [
        [(labels.tolist(), weights.tolist()) for _, labels, weights in dataset] for _ in range(2)
    ]
    try:
        keras.distribution.DataParallel()
        distribution = "DataParallel made"
    except Exception as error:  # what Keras' torch backend does with keras.distribution
        distribution = f"{type(error).__name__}: {error}"

    keras.utils.set_random_seed(3)  # the same initial weights on every rank
    model = keras.Sequential(
        [
            keras.Input((12, 12, 3)),
            keras.layers.Conv2D(2, 3),
            keras.layers.Flatten(),
            keras.layers.Dense(13),
        ]
    )
    parallel = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(parallel.parameters(), lr=0.01)
    loss = torch.nn.CrossEntropyLoss(reduction="none")
    for images, labels, weights in dataset:  # one epoch
        optimizer.zero_grad()
        per_sample = loss(parallel(images / 255.0), labels.long())
        (per_sample * weights).sum().backward()
        optimizer.step()
    report = {
        "epochs": epochs,
        "length": len(dataset),
        "distribution": distribution,
        "weights_sum": float(sum(float(p.detach().double().sum()) for p in model.parameters())),
        "devices": str(images.device),
    }
    dist.destroy_process_group()
    with open(spec["out"], "w") as f:
        json.dump(report, f)
    # Leave without tearing down: freeing DDP's reducer frees the gloo process group, whose
    # destructor joins its work thread while holding the GIL, and that thread may still need
    # the GIL to free the last allreduce (a deadlock seen in about one run in ten here, in
    # torch 2.13; pytorch/pytorch#56297).
    os._exit(0)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
