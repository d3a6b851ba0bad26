"""COCO detection annotations: a JSON file of ``images``, ``annotations`` and ``categories``
(instances, and person keypoints where the file has them)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from daliaug.config_files import read_text
from daliaug.errors import ConfigError, DataError
from daliaug.fields import FilePath
from daliaug.sources.annotations import BoxTable, detection_samples, int_array
from daliaug.sources.base import Samples, SourceConfig
from daliaug.sources.kept_samples import kept_samples


def _numbers(value: Any, count: int) -> list[float] | None:
    """``value`` as ``count`` finite numbers (not booleans), or ``None`` if it is not that."""
    if type(value) is not list or len(value) != count:
        return None
    if not all(type(v) in (int, float) for v in value):
        return None
    return value if math.isfinite(sum(value)) else None  # NaN and infinities sum to them


def _entries(data: dict[str, Any], key: str, needed: dict[str, type], origin: Path) -> list[dict]:
    """The list ``data[key]``, each entry a mapping with the ``needed`` keys of their types;
    a :class:`DataError` naming the file and the first entry that is not."""
    entries = data.get(key, [])
    if not isinstance(entries, list):
        raise DataError(f"COCO annotations {origin}: '{key}' must be a list")
    for i, entry in enumerate(entries):
        bad = not isinstance(entry, dict) or any(
            not isinstance(entry.get(k), t) or isinstance(entry.get(k), bool)
            for k, t in needed.items()
        )
        if bad:
            wanted = " with " + ", ".join(f"{k} ({t.__name__})" for k, t in needed.items())
            raise DataError(
                f"COCO annotations {origin}: {key}[{i}] must be a mapping"
                f"{wanted if needed else ''}, got {type(entry).__name__} {str(entry)[:200]}"
            )
    return entries


class CocoSource(SourceConfig):
    """A COCO ``annotations`` JSON and the ``images`` folder its ``file_name``s are relative to.

    Category ids map to class indices in ascending id order (``class_names``: their names).
    ``bbox`` (absolute ``[x, y, width, height]``) becomes ``xyxy``; ``iscrowd`` annotations are
    left out (``daliaug check`` counts them). With ``keypoints`` and categories that list
    keypoints (person keypoints), each box carries ``(x, y, visible)`` per keypoint (COCO's
    ``v`` 0 becomes 0, 1 and 2 become 1). An image without annotations is a sample with no
    boxes; the sizes the file declares are checked against the images' headers (when the
    listing reads them, else by the background check: :meth:`defers_headers`).
    """

    type: Literal["coco"] = "coco"
    annotations: FilePath
    images: FilePath
    keypoints: bool = True

    @property
    def detection(self) -> bool:
        return True

    def with_path(self, path: Path | str) -> CocoSource:
        """``path/annotations.json`` over ``path/images`` (the demo's layout)."""
        path = Path(path)
        update = {"annotations": path / "annotations.json", "images": path / "images"}
        return self.model_validate({**self.model_dump(), **update})

    def _read(self) -> dict[str, Any]:
        path = self.annotations.expanduser()
        text = read_text(path, "source.annotations: cannot read COCO annotations", ConfigError)
        try:
            data = json.loads(text)
        except RecursionError:
            raise DataError(f"COCO annotations {path} are nested too deeply") from None
        except ValueError as e:  # JSONDecodeError, a number too long to read
            raise DataError(f"COCO annotations {path} are not valid JSON: {e}") from None
        if not isinstance(data, dict) or not isinstance(data.get("images"), list):
            raise DataError(f"COCO annotations {path} must be a mapping with an 'images' list")
        return data

    def list_samples(self) -> Samples:
        """The samples, as kept from the last start where neither the annotations nor an
        image changed since (:mod:`daliaug.sources.kept_samples`)."""
        inputs = [str(self.annotations.expanduser())]
        return kept_samples(self.listing_settings(), inputs, self._samples)

    def _samples(self) -> Samples:
        origin = self.annotations.expanduser()
        data = self._read()
        categories = _entries(data, "categories", {"id": int, "name": str}, origin)
        images = _entries(data, "images", {"id": int, "file_name": str}, origin)
        if not images:
            raise DataError(f"COCO annotations {origin}: 'images' is empty: no image to train on")
        ids = sorted(c["id"] for c in categories)
        if len(set(ids)) != len(ids):
            raise DataError(f"COCO annotations {origin}: category ids repeat: {ids}")
        by_id = {c["id"]: c for c in categories}
        row: dict[int, int] = {}
        declares, sizes = [], []
        for i, image in enumerate(images):
            if row.setdefault(image["id"], i) != i:
                raise DataError(f"COCO annotations {origin}: image id {image['id']} repeats")
            size = (image.get("height"), image.get("width"))
            given = isinstance(size[0], int) and isinstance(size[1], int)
            declares.append(given)
            sizes.append(size if given else (0, 0))
        annotations = _entries(data, "annotations", {}, origin)
        num_keypoints = self._num_keypoints(categories, origin)
        sized = np.array(declares, bool), int_array(sizes).reshape(-1, 2)
        table, crowds = self._table(annotations, images, row, sized, ids, num_keypoints)
        root = str(self.images.expanduser())
        paths = [os.path.join(root, image["file_name"]) for image in images]
        notes: dict[str, str] = {}
        if crowds:
            notes[str(origin)] = f"{crowds} iscrowd annotations left out (crowd regions)"
        names = [by_id[cid]["name"] for cid in ids]
        defer = self.defers_headers(len(paths))
        return detection_samples(paths, table, names, {}, notes, defer=defer)

    def _table(
        self,
        annotations: list[dict[str, Any]],
        images: list[dict[str, Any]],
        row: dict[int, int],
        sized: tuple[np.ndarray, np.ndarray],
        ids: list[int],
        num_keypoints: int | None,
    ) -> tuple[BoxTable, int]:
        """The boxes of ``annotations`` over ``images`` (each one's row by its id, and the
        sizes they declare: ``sized``, as :class:`BoxTable` holds them), and how many crowd
        annotations were left out; an annotation whose category, box or keypoints cannot be
        read is a problem of its image."""
        origin = self.annotations.expanduser()
        index = {cid: i for i, cid in enumerate(ids)}
        at, boxes, labels, named, points = [], [], [], [], []
        problems: dict[int, list[str]] = {}
        crowds = 0
        zero = [0.0] * (3 * (num_keypoints or 0))

        def where(i: int) -> str:
            annotation = annotations[i]
            name = annotation.get("id", f"#{i}")
            return f"{origin}: annotation {name} (image_id {annotation.get('image_id')!r})"

        for i, annotation in enumerate(annotations):
            image_id = annotation.get("image_id")
            image = row.get(image_id) if type(image_id) is int else None
            if image is None:  # its box would be lost, or be another image's: the file is wrong
                raise DataError(f"{where(i)}: its image_id is not the id of an entry of 'images'")
            if annotation.get("iscrowd"):
                crowds += 1
                continue
            category = annotation.get("category_id")
            box = _numbers(annotation.get("bbox"), 4)
            if category not in index:
                problem = f"{where(i)}: category_id {category!r} is not in 'categories'"
            elif box is None:
                shown = str(annotation.get("bbox"))[:100]
                problem = f"{where(i)}: bbox {shown} is not [x, y, width, height]"
            else:
                problem = None
            if problem is not None:
                problems.setdefault(image, []).append(problem)
                continue
            x, y, w, h = box
            at.append(image)
            boxes.append((x, y, x + w, y + h))
            labels.append(index[category])
            named.append(i)
            if num_keypoints is None:
                continue
            given = annotation.get("keypoints")
            values = zero if given is None else _numbers(given, 3 * num_keypoints)
            if values is None:
                problems.setdefault(image, []).append(
                    f"{where(i)}: keypoints must be {3 * num_keypoints} numbers (x, y, v for "
                    f"each of {num_keypoints}), got {str(given)[:100]}"
                )
                values = zero
            points.append(values)
        order = np.argsort(np.array(at, np.int64), kind="stable")
        keypoints = None
        if num_keypoints is not None:
            keypoints = np.array(points, np.float32).reshape(-1, num_keypoints, 3)[order]
            keypoints[..., 2] = keypoints[..., 2] > 0
        table = BoxTable(
            origins=_Origins(str(origin), images),
            declares=sized[0],
            declared=sized[1],
            normalised=np.zeros(len(images), bool),
            image=np.array(at, np.int64)[order],
            boxes=np.array(boxes, np.float64).reshape(-1, 4)[order],
            labels=np.array(labels, np.int32)[order],
            keypoints=keypoints,
            problems=problems,
            where=lambda k: where(named[order[k]]),
        )
        return table, crowds

    def _num_keypoints(self, categories: list[dict], origin: Path) -> int | None:
        """How many keypoints each box carries: ``None`` without keypoints; the categories
        that list keypoints (COCO's person) must agree."""
        counts = {len(c["keypoints"]) for c in categories if isinstance(c.get("keypoints"), list)}
        if not self.keypoints or not counts:
            return None
        if len(counts) > 1:
            raise DataError(
                f"COCO annotations {origin}: categories list different numbers of keypoints "
                f"{sorted(counts)}; daliaug takes one set per file"
            )
        return counts.pop()


class _Origins(Sequence[str]):
    """Where each image's annotations are (``file: image id 3``), made only when a message
    asks (a string per image would cost a start at a million images)."""

    def __init__(self, origin: str, images: list[dict[str, Any]]) -> None:
        self._origin, self._images = origin, images

    def __len__(self) -> int:
        return len(self._images)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return f"{self._origin}: image id {self._images[i]['id']}"
