"""A detection source's samples kept between starts (:mod:`daliaug.sources.kept_samples`): a
later start over unchanged files takes the samples kept, parsing and reading nothing, and equal
in every field to a listing; each kind of change (an annotation, an image replaced, removed or
added, a label file added) is listed anew; a listing whose files changed near its start, or a
damaged record, is not taken."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import daliaug.sources.checks as checks
from daliaug.sources import kept_samples
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.coco import CocoSource
from daliaug.sources.voc import VocSource
from daliaug.sources.yolo import YoloSource
from daliaug.sources.yolo_labels import LabelColumn
from daliaug.tools.demo_data import write_detection_dataset

KINDS = {
    "coco": lambda root: CocoSource(
        annotations=root / "annotations.json", images=root / "images", on_error="skip"
    ),
    "yolo": lambda root: YoloSource(path=root, on_error="skip"),
    "voc": lambda root: VocSource(path=root, on_error="skip"),
    "coco deferred": lambda root: CocoSource(
        annotations=_declared(root), images=root / "images", on_error="skip", check="background"
    ),
    "voc deferred": lambda root: VocSource(path=root, on_error="skip", check="background"),
    "yolo deferred": lambda root: YoloSource(path=root, on_error="skip", check="background"),
    "yolo deferred, no class file": lambda root: YoloSource(
        path=_unnamed(root), on_error="skip", check="background"
    ),
}
"""The sources, and four whose listing leaves the headers to the background check (their
images' sizes declared, or their boxes fractions of them; YOLO's with a class file reads no
label file either, the check reading each)."""


def _unnamed(root: Path) -> Path:
    """The YOLO set without its class file (the listing reads every label file)."""
    (root / "data.yaml").unlink(missing_ok=True)
    return root


def targets(samples: Samples) -> list[object]:
    """Each sample's boxes, or where the check reads them, its label file (a listing's)."""
    boxes = samples.columns["boxes"]
    if isinstance(boxes, LabelColumn):
        return list(boxes.label_files())
    return list(boxes)


def _declared(root: Path) -> Path:
    """The COCO file with every image's size declared (the one without, given its file's)."""
    path = root / "annotations.json"
    coco = json.loads(path.read_text())
    for image in coco["images"]:
        if "width" not in image:
            with Image.open(root / "images" / image["file_name"]) as im:
                image["width"], image["height"] = im.size
    path.write_text(json.dumps(coco))
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_detection_dataset(tmp_path_factory.mktemp("det") / "d", count=10, seed=5)


@pytest.fixture
def root(written: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the demo detection set of this test's own, with a COCO image whose file is
    missing (left out), one without annotations (a note) and a YOLO label line that is not
    finite (its image left out), its cache of its own; files written just now count as
    settled (the record's settling is its own test)."""
    copy = Path(shutil.copytree(written, tmp_path / "d"))
    coco = json.loads((copy / "annotations.json").read_text())
    coco["images"] += [
        {"id": 900, "file_name": "missing.jpg", "height": 8, "width": 8},
        {"id": 901, "file_name": coco["images"][0]["file_name"].replace(".jpg", "b.jpg")},
    ]
    shutil.copy(
        copy / "images" / coco["images"][0]["file_name"],
        copy / "images" / coco["images"][-1]["file_name"],
    )
    (copy / "annotations.json").write_text(json.dumps(coco))
    label = sorted((copy / "labels").glob("*.txt"))[-1]
    label.write_text(label.read_text() + "0 nan 0.5 0.1 0.1\n")
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kept_samples, "SETTLE_NS", -(10**12))
    return copy


def assert_same(a: Samples, b: Samples) -> None:
    """Every field a listing gives, equal."""
    assert a.columns.keys() == b.columns.keys()
    for name, column in a.columns.items():
        if isinstance(column, LabelColumn):
            other = b.columns[name]
            assert isinstance(other, LabelColumn) and column.part == other.part
            assert column.label_files() == other.label_files()
            held = [(c.files.classes, c.files.among, c.files.kpt_shape) for c in (column, other)]
            assert held[0] == held[1]
        elif column.dtype == object:
            assert len(column) == len(b.columns[name])
            for x, y in zip(column, b.columns[name], strict=True):
                assert x.dtype == y.dtype and x.shape == y.shape
                np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(column, b.columns[name])
    np.testing.assert_array_equal(a.sizes, b.sizes)
    assert a.sizes.dtype == b.sizes.dtype
    assert (a.class_names, a.files, a.rejected) == (b.class_names, b.files, b.rejected)
    assert (a.ignored, a.notes, a.listed) == (b.ignored, b.notes, b.listed)
    assert (a.flip_indices, a.sized) == (b.flip_indices, b.sized)
    assert (a.declared, a.normalised) == (b.declared, b.normalised)


def counting(monkeypatch: pytest.MonkeyPatch, source: SourceConfig) -> list[int]:
    """How many times the source lists its samples (parses its annotations) from now on."""
    calls: list[int] = []
    real = type(source)._samples

    def listed(self, *args, **kwargs) -> Samples:
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(source), "_samples", listed)
    return calls


@pytest.mark.parametrize("kind", KINDS)
def test_a_later_start_takes_the_samples_kept_and_reads_nothing(
    kind: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Equal in every field to a listing (the COCO set's missing image left out, its image
    without annotations noted), and another process's shard takes them too."""
    source = KINDS[kind](root)
    first = source.list_samples()
    assert len(first) >= 10 and (kind != "coco" or (first.rejected and first.notes))
    reads_labels = kind.startswith("yolo") and kind != "yolo deferred"
    assert not reads_labels or any("finite numbers" in r for r in first.rejected.values())
    assert (first.declared or first.normalised) == ("deferred" in kind) != first.sized
    calls = counting(monkeypatch, source)
    read: list[str] = []
    real = checks.image_header
    monkeypatch.setattr(
        checks, "image_header", lambda path, *a: read.append(path) or real(path, *a)
    )
    again = source.list_samples()
    assert calls == [] and read == []
    assert_same(again, first)
    shard = source.model_copy(update={"shard_id": 1, "num_shards": 2}).samples()
    assert calls == [] and shard.paths == first.shard(1, 2).paths


def _rewrite_annotation(root: Path) -> None:
    coco = json.loads((root / "annotations.json").read_text())
    coco["annotations"][0]["bbox"][0] += 1
    (root / "annotations.json").write_text(json.dumps(coco))


def _replace_image(root: Path) -> None:
    for folder in ("images", "JPEGImages"):
        path = sorted((root / folder).glob("*.jpg"))[0]
        Image.new("RGB", (300, 200), (1, 2, 3)).save(path)


def _remove_image(root: Path) -> None:
    for folder in ("images", "JPEGImages"):
        sorted((root / folder).glob("*.jpg"))[1].unlink()


def _add_missing_image(root: Path) -> None:
    Image.new("RGB", (8, 8)).save(root / "images" / "missing.jpg")
    Image.new("RGB", (8, 8)).save(root / "JPEGImages" / "missing.jpg")


def _remove_label_file(root: Path) -> None:
    sorted((root / "labels").glob("*.txt"))[0].unlink()
    sorted((root / "Annotations").glob("*.xml"))[0].unlink()


def _rewrite_label_files(root: Path) -> None:
    """A YOLO label file and a VOC XML file each rewritten in place, one box moved."""
    label = sorted((root / "labels").glob("*.txt"))[0]
    first, *rest = label.read_text().splitlines()
    cls, x, *box = first.split()
    label.write_text("\n".join([" ".join([cls, f"{float(x) + 0.01:.6f}", *box]), *rest]) + "\n")
    xml = sorted((root / "Annotations").glob("*.xml"))[0]
    text = xml.read_text()
    start = text.index("<xmin>") + len("<xmin>")
    end = text.index("</xmin>")
    xml.write_text(text[:start] + str(int(text[start:end]) + 1) + text[end:])


def _rename_a_class(root: Path) -> None:
    """A class renamed in YOLO's data.yaml and among COCO's categories."""
    yaml = root / "data.yaml"
    if yaml.exists():
        yaml.write_text(yaml.read_text().replace("0: circle", "0: disc"))
    coco = json.loads((root / "annotations.json").read_text())
    coco["categories"][0]["name"] = "disc"
    (root / "annotations.json").write_text(json.dumps(coco))


CHANGES: dict[str, Callable[[Path], None]] = {
    "annotation": _rewrite_annotation,
    "image replaced": _replace_image,
    "image removed": _remove_image,
    "image added": _add_missing_image,
    "label file removed": _remove_label_file,
    "label file rewritten": _rewrite_label_files,
    "class renamed": _rename_a_class,
}
UNNAMED = "yolo deferred, no class file"
TOUCHES = {
    "annotation": {"coco", "coco deferred"},
    "image replaced": {"coco", "yolo", "voc"},
    "image removed": {"coco", "yolo", "voc", "yolo deferred", UNNAMED},
    "image added": {"coco", "yolo", "voc", "voc deferred", "yolo deferred", UNNAMED},
    "label file removed": {"yolo", "voc", "voc deferred", "yolo deferred", UNNAMED},
    "label file rewritten": {"yolo", "voc", "voc deferred", UNNAMED},
    "class renamed": {"coco", "yolo", "coco deferred", "yolo deferred"},
}
"""The sources whose samples each change touches: a listing that leaves the headers to the
background check gives the same samples whatever an image holds (the check refuses a file
that differs from what its annotations declare), and where it reads no label file, whatever
a label file holds (the check reads it as its batch comes)."""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("change", CHANGES)
def test_each_change_is_listed_anew(kind: str, change: str, root: Path) -> None:
    """After a change the kept samples are not taken: the next start gives what a listing
    with no record gives."""
    source = KINDS[kind](root)
    before = source.list_samples()
    CHANGES[change](root)
    after = source.list_samples()
    shutil.rmtree(root.parent / "cache" / "samples")
    assert_same(after, source.list_samples())
    differs = (
        after.paths != before.paths
        or after.class_names != before.class_names
        or after.rejected != before.rejected
        or after.ignored != before.ignored
        or after.notes != before.notes
        or not np.array_equal(after.sizes, before.sizes)
        or any(
            not np.array_equal(a, b) for a, b in zip(targets(after), targets(before), strict=True)
        )
    )
    assert differs == (kind in TOUCHES[change])


def test_a_listing_whose_files_changed_near_its_start_is_not_kept(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files written within the settling time of the listing (here, all of them) keep no
    record: a change in the same tick of the clock would keep a file's key."""
    monkeypatch.setattr(kept_samples, "SETTLE_NS", 10**12)
    source = KINDS["coco"](root)
    calls = counting(monkeypatch, source)
    source.list_samples()
    source.list_samples()
    assert calls == [1, 1] and not list((root.parent / "cache" / "samples").glob("*.npz"))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other format"])
def test_a_damaged_record_is_listed_anew(
    damage: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = KINDS["coco"](root)
    first = source.list_samples()
    (record,) = (root.parent / "cache" / "samples").glob("*.npz")
    data = record.read_bytes()
    if damage == "garbage":
        record.write_bytes(b"not a record")
    elif damage == "truncated":
        record.write_bytes(data[: len(data) // 2])
    else:
        monkeypatch.setattr(kept_samples, "FORMAT", kept_samples.FORMAT + 1)
    calls = counting(monkeypatch, source)
    assert_same(source.list_samples(), first)
    assert calls == [1]
    source.list_samples()
    assert calls == [1]  # (kept again)


def test_other_settings_are_listed_anew(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A setting the samples depend on (COCO's ``keypoints``, VOC's ``classes``) has a
    record of its own."""
    coco = KINDS["coco"](root)
    coco.list_samples()
    calls = counting(monkeypatch, coco)
    plain = coco.model_copy(update={"keypoints": False})
    assert "keypoints" not in plain.list_samples().columns and calls == [1]
    voc = KINDS["voc"](root)
    every = voc.list_samples()
    named = voc.model_copy(update={"classes": list(reversed(every.class_names))})
    assert named.list_samples().class_names == list(reversed(every.class_names))


def test_samples_all_left_out_are_kept_too(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing that left every sample out is read back as it was (nothing to train on,
    which ``make_dataset`` says by name)."""
    for image in (root / "images").glob("*.jpg"):
        image.unlink()
    source = KINDS["coco"](root)
    first = source.list_samples()
    assert len(first) == 0 and first.rejected
    calls = counting(monkeypatch, source)
    assert_same(source.list_samples(), first)
    assert calls == []


def test_a_listing_that_read_no_header_watches_its_annotations_alone(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A COCO listing that left the headers to the background check takes its record back
    while only images changed (a ``stat`` of the COCO file, none of an image): what an
    image holds is the check's to hold against the sizes declared."""
    source = KINDS["coco deferred"](root)
    first = source.list_samples()
    assert first.declared and first.listed is None and not first.rejected
    _replace_image(root)
    _remove_image(root)
    calls = counting(monkeypatch, source)
    stated = stats(monkeypatch)
    assert_same(source.list_samples(), first)
    assert calls == [] and stated == [[str(root / "annotations.json")]]


def stats(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The files each ``stat`` of the kept samples asks for from now on."""
    stated: list[list[str]] = []
    real = kept_samples.stat_keys
    monkeypatch.setattr(kept_samples, "stat_keys", lambda p: stated.append(list(p)) or real(p))
    return stated


@pytest.mark.parametrize("kind", ["yolo deferred", UNNAMED, "voc deferred"])
def test_a_folder_listing_that_read_no_header_holds_its_images_by_name(
    kind: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A YOLO or VOC listing that left the headers to the background check takes its record
    back while an image was rewritten (a ``stat`` of the class, label or XML files and of the
    files left out, none of an image), and lists anew once an image is gone: the images are
    held by name, what each holds is the check's to hold against its boxes or declared size."""
    source = KINDS[kind](root)
    first = source.list_samples()
    assert (first.normalised or first.declared) and first.listed is None
    _replace_image(root)
    calls = counting(monkeypatch, source)
    stated = stats(monkeypatch)
    assert_same(source.list_samples(), first)
    if kind == "yolo deferred":  # (the check reads the label files)
        read = [root / "data.yaml"]
    elif kind == UNNAMED:
        read = sorted((root / "labels").glob("*.txt"))
    else:
        read = sorted((root / "Annotations").glob("*.xml"))
    left_out = list(first.rejected)  # (watched, as files left out are)
    assert calls == [] and stated == [[*map(str, read), *left_out]]
    _remove_image(root)
    again = source.list_samples()  # (a VOC file still names it: the check finds it missing)
    assert calls == [1] and len(again) == len(first) - kind.startswith("yolo")
