"""Sources users have: in-memory arrays, segmentation pairs, TFRecord shards; and sharding."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from daliaug.errors import ConfigError, DataError, DataWarning
from daliaug.outputs.dali_loader import DaliLoader
from daliaug.outputs.dataset import make_dataset
from daliaug.prepare import prepare_samples
from daliaug.sources.arrays import array_samples
from daliaug.sources.record_framing import index_text
from daliaug.sources.sample_set import SampleSet
from daliaug.sources.segmentation import ClassTable
from daliaug.tools.demo import splits
from tests.helpers import config_for, structured_image, write_image_dir

PALETTE = np.array([(0, 0, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255)], dtype=np.uint8)


def epoch_targets(ds) -> list[np.ndarray]:
    return [np.asarray(b[1]) for b in ds]


# ---------------------------------------------------------------- directories


def test_directory_links_are_followed_only_out_of_the_tree(tmp_path: Path) -> None:
    """Links to files are followed; links to folders only out of the tree and once: a link
    up (``ln -s ..``), to itself or into another class would list samples again, under the
    wrong label (one epoch held 492 samples instead of 12). Each skipped link is named."""
    root = write_image_dir(tmp_path / "data", {"a": [structured_image(8, 8, i) for i in range(3)]})
    write_image_dir(root, {"b": [structured_image(8, 8, i) for i in range(3, 6)]})
    outside = write_image_dir(tmp_path / "more", {"b": [structured_image(8, 8, 6)] * 2}) / "b"
    (root / "a" / "up").symlink_to("..")
    (root / "a" / "loop").symlink_to(".")
    (root / "a" / "to_b").symlink_to(root / "b")
    (root / "a" / "file.png").symlink_to(root / "b" / "0000.png")  # a file: followed
    (root / "b" / "more").symlink_to(outside)  # out of the tree: followed
    (root / "b" / "same").symlink_to(outside)  # the same folder again: skipped
    (root / "b" / "notes.bmp").write_bytes(b"BM")
    with pytest.warns(DataWarning, match="skipped 4 folder links") as caught:
        samples = prepare_samples(config_for(root))
    for link in ("a/up", "a/loop", "a/to_b", "b/same"):
        assert str(root / link) in str(caught[0].message)
    labels = {Path(p).relative_to(tmp_path).as_posix(): int(label)
              for p, label in zip(samples.paths, samples.labels, strict=True)}  # fmt: skip
    assert labels == {
        **{f"data/a/{i:04d}.png": 0 for i in range(3)},
        "data/a/file.png": 0,
        **{f"data/b/{i:04d}.png": 1 for i in range(3)},
        "data/b/more/0000.png": 1,
        "data/b/more/0001.png": 1,
    }
    assert samples.ignored[str(root / "b" / "notes.bmp")] == "not a .jpg/.jpeg/.png file"


def test_a_class_folder_linked_into_another_class_is_skipped(tmp_path: Path) -> None:
    root = write_image_dir(tmp_path, {"a": [structured_image(8, 8)], "c": [structured_image(8, 8)]})
    (root / "b").symlink_to(root / "a")
    with pytest.warns(DataWarning, match=f"{root / 'b'}: a link to {root / 'a'}, inside the tree"):
        samples = prepare_samples(config_for(root))
    assert samples.class_names == ["a", "b", "c"] and sorted(samples.labels) == [0, 2]


# ---------------------------------------------------------------- arrays


@pytest.fixture(scope="module")
def arrays() -> tuple[np.ndarray, np.ndarray]:
    x = np.stack([structured_image(32, 32, seed=i) for i in range(21)])
    return x, np.arange(21, dtype=np.int64)


def arrays_config(**fields):
    fields = {"source": {"type": "arrays"}, "image_size": 32, "batch_size": 4, **fields}
    return config_for(Path("."), **fields)


def test_arrays_each_sample_once_per_epoch_reshuffled(arrays) -> None:
    x, y = arrays
    ds = make_dataset(
        arrays_config(shuffle=True, transforms=[{"type": "rotation", "angle": 15}]), x=x, y=y
    )
    epochs = [np.concatenate(epoch_targets(ds)) for _ in range(2)]
    for labels in epochs:
        assert sorted(labels.tolist()) == list(range(21))
    assert epochs[0].tolist() != epochs[1].tolist()
    loader = DaliLoader(arrays_config(shuffle=True), samples=array_samples(x, y))
    assert sorted(np.concatenate([b[1] for b in loader]).tolist()) == list(range(21))


def test_arrays_flow_through_the_same_transforms(arrays) -> None:
    x, y = arrays
    config = arrays_config(transforms=[{"type": "flip", "horizontal": 1.0}])
    images = np.concatenate([b[0].numpy() for b in make_dataset(config, x=x, y=y)])
    assert np.array_equal(images, x[:, :, ::-1].astype(np.float32))
    # a random resized crop on arrays is part of the warp (nothing to decode): same box
    crop = arrays_config(image_size=16, transforms=[{"type": "random_resized_crop"}])
    params = np.tile([[0.25, 0.0, 0.5, 0.5]], (21, 1))  # a 16x16 window at (8, 8)
    out = next(iter(DaliLoader(crop, samples=array_samples(x, y), params=params)))[0]
    assert np.array_equal(out, x[:4, 8:24, 8:24])


def test_arrays_no_transform_moves_come_through_unresampled_on_both_engines(arrays) -> None:
    """Without a geometric transform the TF engine skips the (identity) warp: the same
    batches as DALI's, the pixels themselves where nothing else changes them."""
    x, y = arrays
    contrast = [{"type": "contrast", "factor": 0.3}]
    for transforms, same in (([], True), (contrast, False)):
        out = {
            backend: np.concatenate(
                [b[0].numpy() for b in make_dataset(
                    arrays_config(backend=backend, transforms=transforms, seed=1), x=x, y=y
                )]
            )
            for backend in ("tf", "cpu")
        }  # fmt: skip
        assert np.array_equal(out["tf"], x.astype(np.float32)) == same
        assert np.abs(out["tf"] - out["cpu"]).max() <= 1.0


def test_arrays_from_an_npz_file(arrays, tmp_path: Path) -> None:
    x, y = arrays
    np.savez(tmp_path / "data.npz", images=x, labels=y)
    config = arrays_config(
        source={
            "type": "arrays",
            "path": str(tmp_path / "data.npz"),
            "images_key": "images",
            "labels_key": "labels",
        }
    )
    assert len(prepare_samples(config)) == 21


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.full((4, 8, 8, 3), -1, np.float32), np.zeros(4, int), "float32 values -1..-1; daliaug"),
        (np.zeros((4, 8, 8, 3), object), np.zeros(4, int), "must be a NumPy array of numbers"),
        (np.zeros((4, 8, 8, 5), np.uint8), np.zeros(4, int), "arrays have 5 channel(s)"),
        (np.zeros((4, 8, 8, 3), np.uint8), np.zeros(3, int), "4 images but 3 labels"),
        (
            np.zeros((4, 8, 8, 3), np.uint8),
            np.eye(4),
            "y holds a row per sample (4, 4)",
        ),
        (np.zeros((4, 8, 8, 3), np.uint8), np.array([0, 1, -1, 0]), "label -1 of sample 2"),
    ],
)
def test_bad_arrays_are_named(x, y, message: str) -> None:
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_dataset(arrays_config(), x=x, y=y)


def test_arrays_take_keras_programs_floats_and_one_hot_labels(arrays) -> None:
    """keras-io's ``x.astype("float32") / 255`` and ``keras.utils.to_categorical(y)`` give the
    batches the uint8 images and integer labels give, scaled back to [0, 1] by the output."""
    import keras

    x, y = arrays
    fields = {
        "label_mode": "categorical",
        "output": {"rescale": 1 / 255},
        "transforms": [{"type": "flip", "horizontal": 0.5}, {"type": "mixup", "alpha": 0.2}],
        "seed": 3,
    }
    theirs = make_dataset(
        arrays_config(**fields), x=x.astype("float32") / 255, y=keras.utils.to_categorical(y)
    )
    ours = make_dataset(arrays_config(**fields), x=x, y=y)
    for a, b in zip(theirs, ours, strict=True):
        assert np.array_equal(a[0].numpy(), b[0].numpy())
        assert np.array_equal(a[1].numpy(), b[1].numpy())
    with pytest.warns(DataWarning, match=r"rescale: 0.00392156862745098") as heard:
        make_dataset(arrays_config(), x=x / 255.0, y=y)
    assert [Path(w.filename).name for w in heard] == [Path(__file__).name]  # the user's call
    with pytest.raises(DataError, match="are not one-hot rows"):
        make_dataset(arrays_config(**fields), x=x, y=np.full((21, 3), 1 / 3))
    with pytest.warns(DataWarning, match="a change of at most 0.00"):
        prepare_samples(arrays_config(output={"rescale": 1.0}), x=x / 255.0 * 0.998, y=y)


def test_arrays_need_an_arrays_source(arrays, demo_dir: Path) -> None:
    with pytest.raises(ConfigError, match="source must be of type 'arrays'"):
        make_dataset(config_for(demo_dir), x=arrays[0], y=arrays[1])
    with pytest.raises(DataError, match=r"arrays have 3 channel\(s\) but the config asks for 1"):
        make_dataset(arrays_config(channels=1), x=arrays[0], y=arrays[1])


def test_arrays_num_classes_fixes_the_one_hot_width(arrays) -> None:
    """A validation set without the last class gets the training set's one-hot width."""
    x, y = arrays
    config = arrays_config(source={"type": "arrays", "num_classes": 21}, label_mode="categorical")
    val = make_dataset(config, x=x[:5], y=y[:5])  # classes 0..4 only
    assert val.element_spec[1].shape[-1] == 21
    labels = np.concatenate(epoch_targets(val))
    assert labels.shape == (5, 21) and np.array_equal(labels.argmax(1), y[:5])
    assert prepare_samples(arrays_config(), x=x[:5], y=y[:5]).num_classes == 5  # unfixed
    with pytest.raises(DataError, match="label 20 of sample 20 is out of range for 20 classes"):
        make_dataset(arrays_config(source={"type": "arrays", "num_classes": 20}), x=x, y=y)
    with pytest.raises(ConfigError, match="class_names lists 2 names for num_classes 3"):
        arrays_config(source={"type": "arrays", "num_classes": 3, "class_names": ["a", "b"]})


# ---------------------------------------------------------------- segmentation


def write_segmentation(root: Path, count: int = 6, colour: bool = False) -> Path:
    """Images whose colours *are* their masks' palette, so alignment can be checked exactly."""
    rng = np.random.default_rng(0)
    for folder in ("images", "masks"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        mask = np.zeros((48, 64), np.uint8)
        for k in (1, 2, 3):
            y0, x0 = rng.integers(0, 32), rng.integers(0, 48)
            mask[y0 : y0 + 16, x0 : x0 + 16] = k
        Image.fromarray(PALETTE[mask]).save(root / "images" / f"s{i}.png")
        Image.fromarray(PALETTE[mask] if colour else mask).save(root / "masks" / f"s{i}.png")
    (root / "classes.csv").write_text(
        "name,r,g,b\n" + "".join(f"c{k},{r},{g},{b}\n" for k, (r, g, b) in enumerate(PALETTE))
    )
    return root


@pytest.fixture(scope="module")
def seg_root(tmp_path_factory) -> Path:
    return write_segmentation(tmp_path_factory.mktemp("seg"))


def seg_config(root: Path, colour: bool = False, **fields):
    source = {"type": "segmentation", "images": str(root / "images"), "masks": str(root / "masks")}
    source |= {"classes": str(root / "classes.csv")} if colour else {"num_classes": 4}
    source |= fields.pop("source", {})
    return config_for(root, **{"source": source, "image_size": 48, "batch_size": 3, **fields})


GEOMETRY = [
    {"type": "random_resized_crop", "scale": [0.3, 1]},
    {"type": "flip"},
    {"type": "rotation", "angle": 40},
    {"type": "shear", "angle": 10},
]


def test_masks_follow_the_geometry_of_their_images(seg_root: Path) -> None:
    config = seg_config(seg_root, transforms=GEOMETRY)
    for images, masks in DaliLoader(config):
        assert masks.dtype == np.uint8 and masks.shape == images.shape[:3]
        known = masks < 4
        # nearest-sampled mask and bilinear image agree away from class borders
        expected = PALETTE[np.where(known, masks, 0)].astype(float)
        close = np.abs(images - expected).max(axis=-1) <= 1
        assert close[known].mean() > 0.9
        assert (~known).any()  # the rotation revealed corners: ignore_index 255 there
        assert set(np.unique(masks[~known])) == {255}


def test_colour_transforms_never_touch_masks(seg_root: Path) -> None:
    plain = seg_config(seg_root, transforms=[{"type": "flip", "horizontal": 1.0}])
    coloured = seg_config(
        seg_root,
        transforms=[
            {"type": "flip", "horizontal": 1.0},
            {"type": "brightness", "factor": [0.3, 0.3]},
            {"type": "hue", "degrees": [90, 90]},
        ],
    )
    (a_img, a_mask), (b_img, b_mask) = (next(iter(DaliLoader(c))) for c in (plain, coloured))
    assert np.array_equal(a_mask, b_mask) and not np.allclose(a_img, b_img)


def test_colour_coded_masks_map_through_the_class_table(tmp_path: Path, seg_root: Path) -> None:
    colour_root = write_segmentation(tmp_path / "c", colour=True)
    index = np.concatenate([b[1] for b in DaliLoader(seg_config(seg_root, transforms=GEOMETRY))])
    colour = np.concatenate(
        [b[1] for b in DaliLoader(seg_config(colour_root, colour=True, transforms=GEOMETRY))]
    )
    assert np.array_equal(index, colour)


def test_one_hot_and_int32_masks_through_make_dataset(seg_root: Path) -> None:
    one_hot = make_dataset(
        seg_config(seg_root, transforms=GEOMETRY, seed=3, source={"mask_output": "one_hot"})
    )
    assert tuple(one_hot.element_spec[1].shape) == (None, 48, 48, 4)
    index = make_dataset(
        seg_config(seg_root, transforms=GEOMETRY, seed=3, source={"mask_dtype": "int32"})
    )
    assert index.element_spec[1].dtype.name == "int32"
    for (_, hot), (_, idx) in zip(one_hot, index, strict=True):
        hot, idx = hot.numpy(), idx.numpy()
        assert np.array_equal(hot.sum(-1), (idx < 4).astype(np.float32))
        assert np.array_equal(hot.argmax(-1)[idx < 4], idx[idx < 4])


def test_pairs_list_equals_folders(seg_root: Path) -> None:
    pairs = seg_root / "pairs.csv"
    pairs.write_text(
        "image,mask\n" + "".join(f"images/s{i}.png,masks/s{i}.png\n" for i in range(6))
    )
    folders = prepare_samples(seg_config(seg_root))
    listed = prepare_samples(
        seg_config(seg_root, source={"images": None, "masks": None, "pairs": str(pairs)})
    )
    assert folders.files == listed.files


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("mask_output", ["index", "one_hot"])
def test_segmenter_trains_on_every_mask_layout(seg_root: Path, layout: str, mask_output) -> None:
    from daliaug.tools.models import small_segmenter

    config = seg_config(
        seg_root, source={"mask_output": mask_output}, output={"layout": layout, "rescale": 1 / 255}
    )
    ds = make_dataset(config)
    model = small_segmenter(config, 4)
    history = model.fit(ds, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0]) and 0 <= history.history["mean_iou"][0] <= 1


def test_segmentation_errors_name_the_item(tmp_path: Path) -> None:
    root = write_segmentation(tmp_path / "e", count=3)
    (root / "images" / "extra.png").write_bytes((root / "images" / "s0.png").read_bytes())
    with pytest.raises(DataError, match=r"1 images without a mask \(first: \['extra'\]\)"):
        prepare_samples(seg_config(root))
    (root / "images" / "extra.png").unlink()
    bad = np.zeros((48, 64), np.uint8)
    bad[0, 0] = 9
    Image.fromarray(bad).save(root / "masks" / "s1.png")
    with pytest.raises(DataError, match=r"s1.png has class values \[9\]"):
        prepare_samples(seg_config(root))
    colour_root = write_segmentation(tmp_path / "c", count=3, colour=True)
    Image.fromarray(PALETTE[bad % 4] + 7).save(colour_root / "masks" / "s1.png")
    with pytest.raises(DataError, match=r"s1.png has colours not in the class table.*\(7, 7, 7\)"):
        prepare_samples(seg_config(colour_root, colour=True))
    Image.fromarray(np.zeros((10, 10), np.uint8)).save(root / "masks" / "s1.png")
    with pytest.raises(DataError, match=r"s1.png is 10x10 but its image"):
        prepare_samples(seg_config(root))
    Image.fromarray(np.zeros((48, 64), np.uint8)).save(root / "s1.jpg")
    pairs = root / "pairs.csv"
    pairs.write_text("images/s0.png,masks/s0.png\nimages/s1.png,s1.jpg\n")
    with pytest.raises(DataError, match=r"mask .*s1.jpg is a JPEG; masks must be lossless PNGs"):
        prepare_samples(
            seg_config(root, source={"images": None, "masks": None, "pairs": str(pairs)})
        )


# ---------------------------------------------------------------- TFRecord


@pytest.fixture(scope="module")
def records(numbered_records: Path) -> Path:
    return numbered_records


def records_config(path: Path, tmp_path: Path, **fields):
    source = {"type": "tfrecord", "path": str(path), "index_dir": str(tmp_path / "idx")}
    source |= fields.pop("source", {})
    return config_for(path, **{"source": source, "batch_size": 5, "shuffle": True, **fields})


def test_tfrecords_each_record_once_per_epoch(records: Path, tmp_path: Path) -> None:
    config = records_config(records, tmp_path, transforms=[{"type": "random_resized_crop"}])
    samples = prepare_samples(config)
    assert len(samples) == 23 and samples.class_names == [str(i) for i in range(23)]
    assert len(list((tmp_path / "idx").glob("*.idx"))) == 3  # DALI's index files, made here
    for dataset in (make_dataset(config), DaliLoader(config)):
        for _ in range(2):
            batches = epoch_targets(dataset)
            assert [len(b) for b in batches] == [5, 5, 5, 5, 3]
            assert sorted(np.concatenate(batches).tolist()) == list(range(23))


def test_every_transform_tfrecords_take_runs_through_dalis_own_reader(
    records: Path, tmp_path: Path
) -> None:
    """DALI's TFRecord reader draws the parameters in the graph: each transform example the
    config takes for TFRecords (batch stages and DALI-GPU-only ones are refused by name) gives a
    batch there; a colour matrix the same for every sample (``channel_shift``, ``color_jitter``,
    whose colour is a pixel stage) once failed DALI's broadcast there."""
    from daliaug.parity.examples import TRANSFORM_EXAMPLES

    ran = []
    for example in TRANSFORM_EXAMPLES:
        try:
            config = records_config(records, tmp_path, transforms=[example], backend="cpu")
        except ConfigError as e:
            assert re.search(r"needs a column source|cannot run on DALI's cpu", str(e)), e
            continue
        images, labels = next(iter(DaliLoader(config)))
        assert images.shape[0] == 5 and np.isfinite(images).all() and len(labels) == 5
        ran.append(example["type"])
    assert {"color_jitter", "channel_shift", "rand_augment"} <= set(ran) and len(ran) > 40


def test_tfrecord_index_files_are_reused(records: Path, tmp_path: Path) -> None:
    config = records_config(records, tmp_path)
    prepare_samples(config)
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "idx").glob("*.idx")}
    prepare_samples(config)
    assert stamps == {p: p.stat().st_mtime_ns for p in (tmp_path / "idx").glob("*.idx")}


def test_index_files_beside_the_records_are_not_taken_for_records(
    records: Path, tmp_path: Path
) -> None:
    """``index_dir`` the records' own folder: its ``.idx`` files are not listed as records at
    the next start (they were, and failed as truncated TFRecords)."""
    copy = tmp_path / "beside"
    shutil.copytree(records, copy)
    config = records_config(copy, tmp_path, source={"index_dir": str(copy)})
    for _ in range(2):
        samples = prepare_samples(config)
        assert len(samples) == 23 and len(samples.files) == 3
    assert len(list(copy.glob("*.idx"))) == 3


def test_tfrecord_errors(records: Path, tmp_path: Path) -> None:
    for backend in ("cpu", "tf"):
        config = records_config(records, tmp_path, source={"image_key": "jpeg"}, backend=backend)
        with pytest.raises(DataError, match=r"no bytes feature 'jpeg'.*image/encoded"):
            make_dataset(config)
    broken = tmp_path / "broken"
    broken.mkdir()
    first = sorted(records.glob("*.tfrecord"))[0].read_bytes()
    (broken / "x.tfrecord").write_bytes(first[:-10])
    with pytest.raises(DataError, match=r"x.tfrecord is truncated"):
        prepare_samples(records_config(broken, tmp_path, source={"num_classes": 23}))
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(broken / "x.tfrecord")) as writer:
        writer.write(b"\x0a\x05abc")  # field 1 runs past the record's end
    with pytest.raises(DataError, match=r"x.tfrecord: its first record is not a tf.train.Ex"):
        make_dataset(records_config(broken, tmp_path, source={"num_classes": 23}))


def test_tfrecords_refuse_what_needs_the_host(records: Path, tmp_path: Path) -> None:
    """Streamed records are a SampleSet like columns; each output's refusal (the host never
    sees a record) is the records' own error, naming the field and the fix."""
    config = records_config(records, tmp_path)
    samples = prepare_samples(config)
    assert isinstance(samples, SampleSet) and isinstance(samples.shard(0, 1), SampleSet)
    assert [len(samples.shard(i, 3)) for i in range(3)] == [7, 8, 8]
    assert samples.size_hint is None and samples.target_shape == ()
    params = np.zeros((len(samples), len(config.plan.param_keys)), np.float32)
    with pytest.raises(
        ValueError, match="explicit params need a column source, not streamed TFRecords"
    ):
        DaliLoader(config, params=params)
    with pytest.raises(
        ValueError, match="returned params need a column source, not streamed TFRecords"
    ):
        DaliLoader(config, return_params=True)
    with pytest.raises(ConfigError, match="sample_weight: TFRecords are streamed; weigh classes"):
        make_dataset(config, sample_weight=np.ones(len(samples)), framework="tensorflow")
    with pytest.raises(ConfigError, match="framework='numpy', which gives no weights; use frame"):
        make_dataset(config, class_weight={0: 2.0}, framework="numpy")
    with pytest.raises(ConfigError, match=r"source\.type: tfrecord under torch\.distributed needs"):
        samples.check_distribution("torch.distributed")
    with pytest.raises(DataError, match=re.escape(f"--data: give TFRecords as {records}/train")):
        splits(config, records)


def test_a_tfrecord_file_replaced_by_an_older_one_is_indexed_anew(
    records: Path, tmp_path: Path
) -> None:
    """``cp -p`` of another shard over one (an older modification time, other records): the
    index is rebuilt, and no record is lost or read from the wrong offsets."""
    copied = tmp_path / "copied"
    shutil.copytree(records, copied)
    config = records_config(copied, tmp_path, source={"num_classes": 23})
    assert len(prepare_samples(config)) == 23
    first, _, last = sorted(copied.glob("*.tfrecord"))
    assert first.stat().st_size != last.stat().st_size

    shutil.copy2(last, first)
    os.utime(first, ns=(1, 1))  # older than its index
    samples = prepare_samples(config)
    counts = dict(zip(map(os.path.basename, samples.files), samples.counts, strict=True))
    assert counts[first.name] == counts[last.name] == index_text(str(last), last.stat().st_size)[1]
    assert len(list((tmp_path / "idx").glob(f"{first.name}.*.idx"))) == 1  # the old one went
    labels = np.concatenate(epoch_targets(make_dataset(config)))
    assert len(labels) == len(samples) == sum(counts.values())


# ---------------------------------------------------------------- sharding


def union_of_shards(make, num_shards: int) -> list[int]:
    seen: list[int] = []
    for shard in range(num_shards):
        seen += np.concatenate([np.asarray(b[1]).ravel() for b in make(shard)]).tolist()
    return sorted(seen)


@pytest.mark.slow
@pytest.mark.parametrize("num_shards", [2, 3, 5])
def test_shards_partition_every_source(
    num_shards: int, arrays, numbered_list: Path, records: Path, tmp_path: Path
) -> None:
    shard = {"shard_id": 0, "num_shards": num_shards}

    def listed(i):
        source = {"type": "file_list", "path": str(numbered_list), **shard, "shard_id": i}
        return make_dataset(config_for(numbered_list.parent, source=source, shuffle=True))

    def in_memory(i):
        source = {"type": "arrays", **shard, "shard_id": i}
        return make_dataset(arrays_config(source=source, shuffle=True), x=arrays[0], y=arrays[1])

    def recorded_tf(i):
        return make_dataset(records_config(records, tmp_path, source={**shard, "shard_id": i}))

    def recorded_dali(i):
        return DaliLoader(records_config(records, tmp_path, source={**shard, "shard_id": i}))

    assert union_of_shards(listed, num_shards) == list(range(23))
    assert union_of_shards(in_memory, num_shards) == list(range(21))
    assert union_of_shards(recorded_tf, num_shards) == list(range(23))
    assert union_of_shards(recorded_dali, num_shards) == list(range(23))


def test_dali_tfrecord_reader_keeps_each_shard_every_epoch(records: Path, tmp_path: Path) -> None:
    """Uneven shards (4 or 5 of the 23 records, two or three batches of 2): DALI's reader
    stays on its shard and each epoch yields exactly that shard's records."""
    starts = [23 * i // 5 for i in range(6)]
    for shard in range(5):
        source = {"shard_id": shard, "num_shards": 5}
        loader = DaliLoader(records_config(records, tmp_path, source=source, batch_size=2))
        for _ in range(3):
            seen = np.concatenate([b[1] for b in loader]).tolist()
            assert sorted(seen) == list(range(starts[shard], starts[shard + 1]))


def test_unreadable_text_files_are_named(records: Path, tmp_path: Path) -> None:
    """Lists, class tables and metadata that are not text, or not what daliaug wrote."""
    binary = b"\x89PNG\r\n\x1a\n\xff\xfe"
    sources = {"path": {"type": "file_list"}, "pairs": {"type": "segmentation", "num_classes": 2}}
    for field, source in sources.items():
        text = tmp_path / f"{field}.csv"
        text.write_bytes(binary)
        with pytest.raises(DataError, match=rf"source.{field}: .*{text.name}: not UTF-8 text"):
            prepare_samples(config_for(tmp_path, source={**source, field: str(text)}))
    with pytest.raises(DataError, match=r"source.classes: .*path.csv: not UTF-8 text"):
        ClassTable.read(tmp_path / "path.csv")
    copied = tmp_path / "copied"
    copied.mkdir()
    for record in records.glob("*.tfrecord"):
        (copied / record.name).write_bytes(record.read_bytes())
    (copied / "daliaug.json").write_text('{"classes": 3}')
    with pytest.raises(DataError, match=r"daliaug.json is not daliaug's TFRecord metadata"):
        prepare_samples(records_config(copied, tmp_path))


def test_shard_id_must_be_below_num_shards() -> None:
    with pytest.raises(ConfigError, match="shard_id 2 must be below num_shards 2"):
        arrays_config(source={"type": "arrays", "shard_id": 2, "num_shards": 2})
