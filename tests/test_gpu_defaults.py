"""The GPU defaults that fit the host: DALI's threads follow the cores this process may use
(its CPU affinity), shared among the GPUs it drives; ``prefetch`` and ``hw_decoder_load`` are
config fields that reach the DALI graph of every output that builds one (graphs defined, not
built: DALI's Python graph needs no CUDA)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from daliaug import config as config_module
from daliaug.config import Config, default_threads, load_config
from daliaug.engines.dali import pipeline
from daliaug.errors import ConfigError
from daliaug.outputs import dali_loader
from daliaug.outputs.options import DatasetOptions
from daliaug.prepare import prepare_samples
from tests.helpers import run_of


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Sets the cores this process may use (its affinity) while ``os.cpu_count`` says 64."""
    monkeypatch.setattr(os, "cpu_count", lambda: 64)

    def use(count: int) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(count)), raising=False)

    return use


@pytest.mark.parametrize(
    ("affinity", "gpus", "threads"),
    [
        (16, 1, 16),
        (16, 2, 8),
        (16, 3, 5),
        (16, 8, 2),
        (16, 32, 1),
        (70, 1, 70),
        (2, 1, 2),
        (1, 4, 1),
    ],
)
def test_gpu_threads_are_the_usable_cores_shared_among_the_gpus(
    cores: Any, affinity: int, gpus: int, threads: int
) -> None:
    cores(affinity)
    assert default_threads("gpu", gpus) == threads
    assert default_threads("cpu", gpus) == min(4, affinity)  # the CPU path: up to 4, as before


def test_threads_follow_the_affinity_not_the_machine(
    cores: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cores(6)  # e.g. taskset -c 0-5 or a container's cpuset on a 64-core host
    assert config_module.usable_cores() == 6
    monkeypatch.delattr(os, "sched_getaffinity")  # a system without affinity (macOS)
    assert config_module.usable_cores() == 64
    assert default_threads("gpu", 4) == 16


def files_config(root: Path, **fields: Any) -> Config:
    source = {"type": "directory", "path": str(root)}
    transforms = [{"type": "random_resized_crop"}, {"type": "flip"}]
    base = {"source": source, "image_size": 32, "batch_size": 4, "transforms": transforms}
    return load_config({**base, **fields})


def test_explicit_settings_win_and_defaults_depend_on_the_device(
    demo_dir: Path, cores: Any
) -> None:
    cores(12)
    config = files_config(demo_dir)
    assert (config.dali_threads("gpu"), config.dali_threads("gpu", 4)) == (12, 3)
    assert config.dali_threads("cpu") == 4
    assert (config.prefetch_depth("gpu"), config.prefetch_depth("cpu")) == (5, 2)
    assert config.hw_decoder_load == 0.99
    mine = files_config(demo_dir, num_threads=7, prefetch=3, hw_decoder_load=0.25)
    assert (mine.dali_threads("gpu", 4), mine.dali_threads("cpu")) == (7, 7)
    assert (mine.prefetch_depth("gpu"), mine.prefetch_depth("cpu")) == (3, 3)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.5", True])
def test_hw_decoder_load_is_a_share(demo_dir: Path, bad: object) -> None:
    with pytest.raises(ConfigError, match="hw_decoder_load"):
        files_config(demo_dir, hw_decoder_load=bad)


def settings(define: Any) -> tuple[int, int, list[tuple[str, float | None]]]:
    """The defined (not built) pipeline's threads, prefetch depth, and each image decoder's
    device and ``hw_decoder_load``."""
    pipe = define()
    pipe._build_graph()
    decoders = [
        (op._op.device, op._op._init_args.get("hw_decoder_load"))
        for op in pipe._ops
        if op._op.schema.Name().startswith("decoders__")
    ]
    return pipe.num_threads, pipe.prefetch_queue_depth, decoders


@pytest.fixture(scope="module")
def seg_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from daliaug.tools.demo_data import write_segmentation_dataset

    return write_segmentation_dataset(tmp_path_factory.mktemp("seg") / "s", count=4, size=(32, 40))


@pytest.fixture(scope="module")
def records(demo_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_tfrecords

    tmp = tmp_path_factory.mktemp("records")
    write_tfrecords(DirectorySource(path=demo_dir).samples(), tmp / "r", shards=1)
    return {"type": "tfrecord", "path": str(tmp / "r"), "index_dir": str(tmp)}


def test_the_settings_reach_every_graph_that_outputs_build(
    demo_dir: Path, seg_root: Path, records: dict[str, str], cores: Any
) -> None:
    """``make_dataset``'s graph, ``build_pipeline``'s and ``DaliLoader``'s (fed by the host,
    or DALI's TFRecord reader), for images and masks: DALI's threads (shared among the GPUs
    a distribution runs in this process), prefetch depth and every ``mixed`` decoder's load."""
    cores(16)
    segmentation = {
        "type": "segmentation",
        "images": str(seg_root / "images"),
        "masks": str(seg_root / "masks"),
        "num_classes": 5,
    }
    for source in ({"type": "directory", "path": str(demo_dir)}, segmentation, records):
        for fields, gpu, cpu, load in (
            ({}, (16, 5), (4, 2), 0.99),
            ({"num_threads": 3, "prefetch": 4, "hw_decoder_load": 0.5}, (3, 4), (3, 4), 0.5),
        ):
            config = files_config(demo_dir, source=source, **fields)
            samples = prepare_samples(config)
            on = partial(run_of, config, samples)
            forms = {
                "make_dataset": lambda device, on=on: pipeline.named_pipeline(
                    on(device), weighted=False
                ),
                "build_pipeline": lambda device, on=on: dali_loader.define_fed_pipeline(on(device)),
            }
            for form, define in forms.items():
                threads, depth, decoders = settings(partial(define, device="gpu"))
                assert (threads, depth) == gpu, (form, source["type"])
                assert decoders and all(d == ("mixed", load) for d in decoders), (form, decoders)
                threads, depth, decoders = settings(partial(define, device="cpu"))
                assert (threads, depth) == cpu, (form, source["type"])
                assert all(d == ("cpu", None) for d in decoders), (form, decoders)
            four_gpus = partial(
                dali_loader.define_fed_pipeline,
                run_of(config, samples, "gpu"),
                options=DatasetOptions(gpus=4),
            )
            assert settings(four_gpus)[0] == (3 if fields else 4)
