"""The GPU graphs, checked without a GPU: for every shipped config and every source kind, in
both layouts, grey and RGB, float16 and uint8 output, the graph that make_dataset feeds (its
inputs on the GPU or on the host) and the one build_pipeline returns (DALI's own TFRecord
reader for TFRecords) keep DALI's device rules (daliaug.engines.dali.check); the check catches
seeded mistakes; inputs already on the GPU stay there; every GPU decoder is set up as the CPU
path and the hardware decoder want it."""

from __future__ import annotations

import itertools
import re
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daliaug.config import Config, load_config
from daliaug.engines.dali import pipeline
from daliaug.engines.dali.check import DALI_VERSION, graph_problems
from daliaug.engines.select import dali_lacks
from daliaug.outputs import dali_loader
from daliaug.prepare import prepare_samples
from daliaug.sources.arrays import array_samples
from daliaug.transforms import TRANSFORMS
from daliaug.transforms.base import BatchTransform
from tests.helpers import run_of

ROOT = Path(__file__).parents[2]
SHIPPED = sorted((ROOT / "pipelines").glob("*.yaml"))
KINDS = [
    "files",
    "arrays",
    "masks-index",
    "masks-index-one-hot",
    "masks-colour",
    "masks-colour-one-hot",
    "tfrecords",
]


@pytest.fixture(scope="module")
def sources(demo_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """A source of each kind (as config entries) over small data on disk."""
    from daliaug.sources.directory import DirectorySource
    from daliaug.tools.convert import write_tfrecords
    from daliaug.tools.demo_data import write_segmentation_dataset

    tmp = tmp_path_factory.mktemp("graph-sources")
    seg = write_segmentation_dataset(tmp / "seg", count=4, size=(32, 40))
    write_tfrecords(DirectorySource(path=demo_dir).samples(), tmp / "records", shards=1)
    index = {"images": str(seg / "images"), "masks": str(seg / "masks"), "num_classes": 5}
    colour = {
        "images": str(seg / "images"),
        "masks": str(seg / "masks_rgb"),
        "classes": str(seg / "classes.csv"),
    }
    return {
        "files": {"type": "directory", "path": str(demo_dir)},
        "arrays": {"type": "arrays"},
        "masks-index": {"type": "segmentation", **index},
        "masks-index-one-hot": {"type": "segmentation", **index, "mask_output": "one_hot"},
        "masks-colour": {"type": "segmentation", **colour},
        "masks-colour-one-hot": {"type": "segmentation", **colour, "mask_output": "one_hot"},
        "tfrecords": {"type": "tfrecord", "path": str(tmp / "records"), "index_dir": str(tmp)},
    }


def variant(shipped: Path, source: dict, layout: str, channels: int, dtype: str) -> Config:
    """A shipped config on another source, layout, channel count and output dtype (without
    the RGB-only transforms for grey, without normalization for uint8, without the batch stages
    for masks and TFRecords, which refuse them)."""
    data: dict[str, Any] = load_config(shipped).model_dump(mode="json")
    batch_stages_refused = source["type"] in ("segmentation", "tfrecord")
    kept = [
        t
        for t in data["transforms"]
        if (channels == 3 or not getattr(TRANSFORMS[t["type"]], "needs_rgb", False))
        and not (batch_stages_refused and issubclass(TRANSFORMS[t["type"]], BatchTransform))
    ]
    output = {"layout": layout, "dtype": dtype}
    if dtype != "uint8":
        output.update({k: data["output"][k] for k in ("mean", "std", "rescale")})
    if channels == 1:
        output.update({k: v[:1] for k, v in output.items() if isinstance(v, list)})
    return load_config(
        {**data, "source": source, "transforms": kept, "channels": channels, "output": output}
    )


def samples_of(config: Config) -> Any:
    if config.source.type != "arrays":
        return prepare_samples(config)
    h, w = 36, 44
    x = np.zeros((4, h, w, config.channels), np.uint8)
    return array_samples(x if config.channels == 3 else x[..., 0], np.arange(4) % 2)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shipped", SHIPPED, ids=lambda p: p.stem)
def test_gpu_graphs_keep_dalis_device_rules(
    shipped: Path, kind: str, sources: dict[str, dict]
) -> None:
    for layout, channels, dtype in itertools.product(
        ("NHWC", "NCHW"), (3, 1), ("float16", "uint8")
    ):
        config = variant(shipped, sources[kind], layout, channels, dtype)
        samples = samples_of(config)
        named = partial(pipeline.named_pipeline, run_of(config, samples, "gpu"))
        forms = {
            "make_dataset": partial(named, False, gpu_inputs=True),
            "make_dataset, weighted": partial(named, True, gpu_inputs=True),
            "make_dataset, host inputs (a multi-worker replica)": partial(named, True),
            "build_pipeline": partial(dali_loader.build_pipeline, config, "gpu", samples=samples),
        }
        for form, define in forms.items():
            problems = graph_problems(define)
            assert not problems, (form, layout, channels, dtype, [str(p) for p in problems])


def test_the_graph_check_catches_seeded_mistakes(
    sources: dict[str, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nvidia.dali import fn

    config = variant(SHIPPED[0], sources["files"], "NHWC", 3, "float16")
    samples = samples_of(config)

    def problems() -> list[str]:
        found = graph_problems(
            lambda: pipeline.named_pipeline(run_of(config, samples, "gpu"), False)
        )
        return [str(p) for p in found]

    assert problems() == []
    with monkeypatch.context() as m:  # a label left on the CPU
        m.setattr(pipeline, "label_target", lambda label, *args: label)
        assert any(re.match(r"output 1 .* is on the CPU", p) for p in problems())
    with monkeypatch.context() as m:  # a GPU node as an argument input
        original = pipeline.resample
        m.setattr(
            pipeline,
            "resample",
            lambda image, warp, *a, **k: original(
                image, {n: v.gpu() for n, v in warp.items()}, *a, **k
            ),
        )
        assert any("argument" in p and "gpu" in p.lower() for p in problems())
    with monkeypatch.context() as m:  # a mixed operator fed a GPU node (DALI's own check)
        decode = pipeline.decode
        m.setattr(pipeline, "decode", lambda encoded, *a: decode(encoded.gpu(), *a))
        assert any("incompatible device" in p for p in problems())
    with monkeypatch.context() as m:  # one that DALI lets through: only the walk sees it
        m.setattr(pipeline, "label_target", lambda label, *a: fn.peek_image_shape(label.gpu()))
        assert any("PeekImageShape" in p and "no gpu implementation" in p for p in problems())


def test_the_check_is_pinned_to_the_dali_in_pyproject() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"nvidia-dali-cuda120=={DALI_VERSION}.*' in pyproject


KERAS_TRANSFORMS = [
    {"type": "keras_affine", "rotation_range": 30, "width_shift_range": 0.1, "fill": 0},
    {"type": "channel_shift", "intensity": 20},
    {"type": "brightness", "factor": [0.8, 1.2]},
]


@pytest.mark.parametrize("label_mode", ["int", "categorical", "float", "raw", "input", "none"])
@pytest.mark.parametrize("kind", ["files", "arrays"])
def test_image_data_generator_graphs_keep_dalis_device_rules(
    kind: str, label_mode: str, sources: dict[str, dict]
) -> None:
    """What ``daliaug.keras.ImageDataGenerator`` builds: Keras' geometry, the channel shift
    (per-image reductions), nearest sampling, every label mode, weighted or not."""
    if kind == "files" and label_mode == "raw":
        pytest.skip("raw targets come with arrays (or a dataframe's column)")
    config = load_config(
        {
            "source": sources[kind],
            "image_size": 32,
            "transforms": KERAS_TRANSFORMS,
            "label_mode": label_mode,
            "interpolation": "nearest",
            "output": {"rescale": 1 / 255},
        }
    )
    if kind == "arrays":
        y = np.eye(3, dtype=np.float32)[np.arange(4) % 3] if label_mode == "raw" else None
        labels = np.arange(4) % 3 if label_mode != "raw" else y
        samples = array_samples(np.zeros((4, 36, 44, 3), np.uint8), labels, raw=y is not None)
    else:
        samples = prepare_samples(config)
    for weighted in (False, True) if label_mode != "none" else (False,):
        for gpu_inputs in (False, True):
            problems = graph_problems(
                partial(
                    pipeline.named_pipeline, run_of(config, samples, "gpu"), weighted, gpu_inputs
                )
            )
            assert not problems, (weighted, gpu_inputs, [str(p) for p in problems])


def external_sources(define: Any) -> dict[str, str]:
    """The device of each named input of the graph ``define`` returns."""
    pipe = define()
    pipe._build_graph()
    return {op.name: op._op.device for op in pipe._ops if op._op.schema.Name() == "ExternalSource"}


def test_inputs_on_the_gpu_reach_dali_there_where_only_gpu_operators_read_them(
    sources: dict[str, dict],
) -> None:
    """A GPU-placed dataset's inputs are copied to the GPU; images, labels and weights then
    enter DALI there (not copied back to the host and up again); the encoded images and the
    warp parameters feed the decoder and argument inputs, which read host memory."""
    masks = {"warp_mask_matrix": "cpu", "warp_matrix": "cpu"}
    expected = {
        "files": {"encoded": "cpu", "warp_matrix": "cpu", "label": "gpu", "weight": "gpu"},
        "arrays": {"image": "gpu", "label": "gpu", "warp_matrix": "cpu", "weight": "gpu"},
        "masks-index": {"encoded": "cpu", "mask_encoded": "cpu", **masks, "weight": "gpu"},
    }
    for kind, devices in expected.items():
        config = variant(SHIPPED[0], sources[kind], "NHWC", 3, "float16")
        samples = samples_of(config)
        on_gpu = partial(
            pipeline.named_pipeline, run_of(config, samples, "gpu"), True, gpu_inputs=True
        )
        assert external_sources(on_gpu) == devices, kind
        assert not graph_problems(on_gpu)
        on_host = partial(pipeline.named_pipeline, run_of(config, samples, "gpu"), True)
        assert set(external_sources(on_host).values()) == {"cpu"}
        on_cpu = partial(
            pipeline.named_pipeline, run_of(config, samples, "cpu"), True, gpu_inputs=True
        )
        assert set(external_sources(on_cpu).values()) == {"cpu"}


def decoders(define: Any) -> list[tuple[str, str, dict]]:
    """``(operator, device, arguments)`` of each image decoder in the graph ``define``
    returns."""
    pipe = define()
    pipe._build_graph()
    return [
        (op._op.schema.Name(), op._op.device, op._op._init_args)
        for op in pipe._ops
        if op._op.schema.Name().startswith("decoders__")
    ]


@pytest.mark.parametrize("kind", ["files", "masks-colour"])
def test_gpu_decoders_upsample_chroma_as_the_cpu_decoder_and_feed_the_hardware_decoder(
    kind: str, sources: dict[str, dict]
) -> None:
    """Every ``mixed`` decoder: chroma upsampled as on the CPU (``jpeg_fancy_upsampling``,
    whose default would differ) where it decodes whole images, never for a decode window
    (nvJPEG turns it off there with a warning per image), the hardware decoder's share, and
    its buffers preallocated for the largest image of the source (known from the headers)
    where images are decoded."""
    from daliaug.config import HW_DECODER_LOAD

    config = variant(SHIPPED[0], sources[kind], "NHWC", 3, "float16")
    samples = samples_of(config)
    height, width = (int(v) for v in np.asarray(samples.sizes).max(axis=0))
    for form in (
        partial(pipeline.named_pipeline, run_of(config, samples, "gpu"), False, gpu_inputs=True),
        partial(dali_loader.build_pipeline, config, "gpu", samples=samples),
    ):
        found = decoders(form)
        assert found and all(device == "mixed" for _, device, _ in found)
        for name, _, args in found:
            assert args.get("jpeg_fancy_upsampling") is (None if "Slice" in name else True)
            assert args["hw_decoder_load"] == HW_DECODER_LOAD
        hints = {
            (a.get("preallocate_height_hint"), a.get("preallocate_width_hint")) for _, _, a in found
        }
        assert (height, width) in hints
    cpu = decoders(partial(pipeline.named_pipeline, run_of(config, samples, "cpu"), False))
    assert all(d == "cpu" and "jpeg_fancy_upsampling" not in a for _, d, a in cpu)


def test_gpu_decode_windows_go_without_fancy_upsampling(sources: dict[str, dict]) -> None:
    """A random resized crop decodes its window alone (``image_slice``) on the GPU, without
    ``jpeg_fancy_upsampling``, which nvJPEG cannot apply to a window (DALI warned once per
    image on an H200)."""
    config = variant(
        ROOT / "pipelines" / "imagenet_train.yaml", sources["files"], "NHWC", 3, "float16"
    )
    found = decoders(partial(dali_loader.build_pipeline, config, "gpu", samples=samples_of(config)))
    ((device, args),) = [(d, a) for name, d, a in found if name.endswith("Slice")]
    assert device == "mixed" and "jpeg_fancy_upsampling" not in args


def test_whole_image_windows_are_decoded_fancily_and_cut_on_the_gpu(
    sources: dict[str, dict],
) -> None:
    """``decode_window: whole`` (where GPU window decodes crash, nvImageCodec#55): the whole
    image decoded on ``mixed`` with fancy upsampling, the window cut by a GPU ``slice``; the
    graph keeps DALI's device rules."""
    imagenet = variant(
        ROOT / "pipelines" / "imagenet_train.yaml", sources["files"], "NHWC", 3, "float16"
    )
    config = imagenet.model_copy(update={"decode_window": "whole"})
    define = partial(dali_loader.build_pipeline, config, "gpu", samples=samples_of(config))
    assert not graph_problems(define)
    ((name, device, args),) = decoders(define)
    assert (name, device, args["jpeg_fancy_upsampling"]) == ("decoders__Image", "mixed", True)
    pipe = define()
    pipe._build_graph()
    assert [op._op.device for op in pipe._ops if op._op.schema.Name() == "Slice"] == ["gpu"]


def test_the_decode_check_runs_on_the_configs_gpu(
    demo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full decode check's GPU pipeline runs on ``device_id``, the GPU the dataset will
    use, with the same decoder settings, and DALI accepts its graph (it is run synchronously,
    so it may not move data from the GPU back to the CPU); its build, which needs CUDA, is
    stopped here."""
    from nvidia.dali.pipeline import Pipeline

    from daliaug.engines.dali.verify import undecodable

    built = []

    def build(pipe: Pipeline) -> None:
        pipe._build_graph()
        built.append((pipe.device_id, [a for _, d, a in decoders(lambda: pipe) if d == "mixed"]))
        raise RuntimeError("stopped before CUDA")

    monkeypatch.setattr(Pipeline, "build", build)
    paths = [str(p) for p in sorted(demo_dir.rglob("*.jpg"))[:2]]
    with pytest.raises(RuntimeError, match="stopped before CUDA"):
        list(undecodable(paths, "gpu", device_id=3))
    ((device_id, (args,)),) = built
    assert device_id == 3 and args["jpeg_fancy_upsampling"] is True


SHIPPED_CPU_OPERATORS = {
    "cifar_train": (1, 1),
    "demo": (5, 5),
    "imagenet_randaug_mix": (83, 83),
    "imagenet_train": (6, 6),
    "imagenet_val": (2, 2),
    "segmentation": (7, 7),
}
"""The most CPU operators each shipped config's GPU graph may hold, on its own kind of source:
``make_dataset``'s graph (its inputs on the GPU), ``build_pipeline``'s. Each runs on DALI's
CPU stage, one after another for each batch, so the host feeds the graph its files' bytes and
each part of the plan's numbers as an external source of its own (no slice, reshape or
comparison cuts them apart), labels from GPU external sources, and the colour pass runs on
every sample (no conditional). DALI's own rn50-style graph, counted the same way: 2 (its
examples) to 5 (bench/). Before issue 31: 3/6, 17/18, 104/106, 19/20, 5/6, 21/21; before
issue 53: 3/6, 12/13, 92/94, 12/13, 5/6, 16/16."""


def test_workload_b_gpu_graph_is_as_small_as_dalis_own(demo_dir: Path) -> None:
    """Workload (b) of bench/ (random resized crop decoded as a window, flip, colour jitter,
    normalize): its GPU graph holds at most 6 CPU operators in both forms, the encoded images
    and the plan's numbers, and one mixed and at most five GPU operators."""
    from bench.workloads import WORKLOADS, Data

    config = WORKLOADS["b"].daliaug_config(Data(None, demo_dir, 1), backend="auto")
    samples = samples_of(config)
    forms = (
        partial(pipeline.named_pipeline, run_of(config, samples, "gpu"), False, gpu_inputs=True),
        partial(dali_loader.build_pipeline, config, "gpu", samples=samples),
    )
    for define in forms:
        pipe = define()
        pipe._build_graph()
        devices = [op._op.device for op in pipe._ops]
        cpu = cpu_operators(define)
        assert cpu == ["ExternalSource"] * 6, cpu
        assert devices.count("mixed") == 1 and devices.count("gpu") <= 5, devices


EXAMPLE_CPU_OPERATORS = {
    "cutmix": 26,
    "keras_cutmix": 26,
    "mosaic": 21,
    "rand_augment": 55,
    "auto_augment": 55,
    "trivial_augment": 30,
    "keras_rand_augment": 81,
    "random_erasing": 17,
    "keras_random_erasing": 17,
    "perspective": 16,
    "keras_perspective": 16,
    # the grid padded to the image (max, cast, pad) and the points cut to it (cast): DALI's
    # remap keeps its input's size
    "elastic": 21,
    # 3 chains: each chain's stage values read one by one and a conditional per step and
    # pixel op (3 x 3 x 5) and per chain's warp and colour pass, each splitting its CPU
    # arguments: not yet vectorized
    "aug_mix": 452,
    # 4 slots: each slot's 21 colour-map entries and hue flag read one by one, a conditional
    # per hue turn: not yet vectorized
    "color_jitter": 127,
    "keras_aug_mix": 455,
}
"""The same bound for the parity harness's one-transform configs (on JPEG files) that need
more than :data:`EXAMPLE_CPU_BOUND` (before issue 53: 28, 28, 23, 64, 64, 39, 90, 19, 19, 18,
18, 23, 460, 460; and 12 for the rest)."""
EXAMPLE_CPU_BOUND = 10


def cpu_operators(define: Any) -> list[str]:
    """The CPU operators of the graph ``define`` returns (defined, not built)."""
    pipe = define()
    pipe._build_graph()
    return [op._op.schema.Name() for op in pipe._ops if op._op.device == "cpu"]


SHIPPED_KIND = {"cifar_train": "arrays", "segmentation": "masks-index"}


@pytest.mark.parametrize("shipped", SHIPPED, ids=lambda p: p.stem)
def test_the_cpu_side_of_each_shipped_gpu_graph_stays_small(
    shipped: Path, sources: dict[str, dict]
) -> None:
    assert set(SHIPPED_CPU_OPERATORS) == {p.stem for p in SHIPPED}  # a new config needs a bound
    data = load_config(shipped).model_dump(mode="json")
    config = load_config({**data, "source": sources[SHIPPED_KIND.get(shipped.stem, "files")]})
    samples = samples_of(config)
    forms = (
        partial(pipeline.named_pipeline, run_of(config, samples, "gpu"), False, gpu_inputs=True),
        partial(dali_loader.build_pipeline, config, "gpu", samples=samples),
    )
    counts = tuple(cpu_operators(form) for form in forms)
    bounds = SHIPPED_CPU_OPERATORS[shipped.stem]
    assert all(len(c) <= b for c, b in zip(counts, bounds, strict=True)), counts


@pytest.mark.slow
def test_the_cpu_side_of_each_parity_example_stays_small(demo_dir: Path) -> None:
    from daliaug.parity.examples import transform_examples

    over = {}
    for name, config in transform_examples(demo_dir):
        kind = name.split(",")[0]
        if dali_lacks(config, "gpu"):
            continue  # the TF engine runs it (test_select's rule), not DALI's graph
        found = cpu_operators(
            partial(
                pipeline.named_pipeline, run_of(config, prepare_samples(config), "gpu"), False, True
            )
        )
        if len(found) > EXAMPLE_CPU_OPERATORS.get(kind, EXAMPLE_CPU_BOUND):
            over[name] = found
    assert not over, over


def test_the_recolour_predicate_comes_from_the_host_and_matches_the_graphs() -> None:
    """``recolour`` is 1 exactly where the float32 ``colour`` (and ``colour_mean``) the graph
    receives differ from a map that changes nothing."""
    from daliaug.engines.feed import NUMPY, WarpLayout

    config = load_config(
        {
            "source": {"type": "arrays"},
            "image_size": 8,
            "transforms": [
                {"type": "invert", "probability": 0.5},
                {"type": "keras_contrast", "factor": 0.5},  # weighs the image's mean
            ],
        }
    )
    layout = WarpLayout.of(config.plan, ("image",), True)
    rows = np.array([[0, 1], [1, 1], [0, 0.5], [0, 0], [1, 0.5], [0, 1]], np.float32)
    flat = layout.evaluate(config.plan.paired(rows), np.full((6, 2), 8, np.float32), NUMPY)
    warp = layout.unpack(flat, np.reshape, batched=True)
    colour = np.concatenate([warp["colour"].reshape(6, -1), warp["colour_mean"].reshape(6, -1)], 1)
    unchanged = np.all(colour == np.asarray(layout.unchanged_colour, np.float32), axis=1)
    assert warp["recolour"].shape == (6,)
    np.testing.assert_array_equal(warp["recolour"], (~unchanged).astype(np.float32))
    np.testing.assert_array_equal(unchanged, [True, False, False, False, False, True])
