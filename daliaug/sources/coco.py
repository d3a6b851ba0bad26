"""COCO detection annotations: a JSON file of ``images``, ``annotations`` and ``categories``
(instances, and person keypoints where the file has them)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

import numpy as np

from daliaug.config_files import read_text
from daliaug.errors import ConfigError, DataError
from daliaug.fields import FilePath
from daliaug.sources.annotations import ImageAnnotations, detection_samples
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
    boxes; the sizes the file declares are checked against the images' headers.
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
        index = {cid: i for i, cid in enumerate(ids)}
        by_id = {c["id"]: c for c in categories}
        num_keypoints = self._num_keypoints(categories, origin)
        found: dict[int, ImageAnnotations] = {}
        for image in images:
            if image["id"] in found:
                raise DataError(f"COCO annotations {origin}: image id {image['id']} repeats")
            size = (image.get("height"), image.get("width"))
            declared = all(isinstance(v, int) for v in size)
            found[image["id"]] = ImageAnnotations(
                origin=f"{origin}: image id {image['id']}", size=size if declared else None
            )
        notes: dict[str, str] = {}
        crowds = 0
        for i, annotation in enumerate(_entries(data, "annotations", {}, origin)):
            image_id = annotation.get("image_id")
            image = found.get(image_id) if type(image_id) is int else None
            where = f"{origin}: annotation {annotation.get('id', f'#{i}')} (image_id {image_id!r})"
            if image is None:  # its box would be lost, or be another image's: the file is wrong
                raise DataError(f"{where}: its image_id is not the id of an entry of 'images'")
            if annotation.get("iscrowd"):
                crowds += 1
            else:
                self._add(image, annotation, where, index, num_keypoints)
        paths = [str(self.images.expanduser() / image["file_name"]) for image in images]
        if crowds:
            notes[str(origin)] = f"{crowds} iscrowd annotations left out (crowd regions)"
        names = [by_id[cid]["name"] for cid in ids]
        return detection_samples(paths, list(found.values()), names, {}, notes, num_keypoints)

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

    @staticmethod
    def _add(
        image: ImageAnnotations,
        annotation: dict[str, Any],
        where: str,
        index: dict[int, int],
        num_keypoints: int | None,
    ) -> None:
        """One annotation's box (and keypoints) onto ``image``, or the problem it has."""
        category = annotation.get("category_id")
        box = _numbers(annotation.get("bbox"), 4)
        if category not in index:
            image.problems.append(f"{where}: category_id {category!r} is not in 'categories'")
            return
        if box is None:
            shown = str(annotation.get("bbox"))[:100]
            image.problems.append(f"{where}: bbox {shown} is not [x, y, width, height]")
            return
        x, y, w, h = box
        image.add((x, y, x + w, y + h), index[category], where)
        if num_keypoints is None:
            return
        points = annotation.get("keypoints")
        if points is None:
            image.keypoints.append(np.zeros((num_keypoints, 3), np.float32))
            return
        values = _numbers(points, 3 * num_keypoints)
        if values is None:
            image.problems.append(
                f"{where}: keypoints must be {3 * num_keypoints} numbers (x, y, v for each of "
                f"{num_keypoints}), got {str(points)[:100]}"
            )
            return
        triples = np.array(values, np.float32).reshape(num_keypoints, 3)
        triples[:, 2] = triples[:, 2] > 0
        image.keypoints.append(triples)
