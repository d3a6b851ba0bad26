"""What a source yields: the list of samples of one epoch, checked before any decoding."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from daliaug.errors import DataError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
_MAGIC = {b"\xff\xd8\xff": "JPEG", b"\x89PNG\r\n\x1a\n": "PNG"}


@dataclass(frozen=True)
class FileSamples:
    """Encoded image files with integer labels; one epoch is one pass over ``paths``."""

    paths: list[str]
    labels: np.ndarray
    class_names: list[str]

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def subset(self, indices: Sequence[int] | np.ndarray) -> FileSamples:
        """The samples at ``indices``, with the same class names."""
        idx = np.asarray(indices, dtype=np.int64)
        return FileSamples([self.paths[i] for i in idx], self.labels[idx], self.class_names)

    def split(self, fraction: float, seed: int = 0) -> tuple[FileSamples, FileSamples]:
        """A reproducible ``(1 - fraction, fraction)`` random split, e.g. train and validation."""
        order = np.random.default_rng(seed).permutation(len(self))
        cut = len(self) - max(1, round(fraction * len(self)))
        return self.subset(np.sort(order[:cut])), self.subset(np.sort(order[cut:]))


class SourceConfig(BaseModel):
    """Base of the ``source`` section; concrete sources are tagged by ``type``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    registry: ClassVar[dict[str, type[SourceConfig]]] = {}

    type: str

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: object) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        name = cls.model_fields["type"].default
        if isinstance(name, str):
            SourceConfig.registry[name] = cls

    def samples(self) -> FileSamples:
        """List and check the samples; raises :class:`DataError` naming the bad path."""
        raise NotImplementedError


def image_format(path: str) -> str:
    """'JPEG' or 'PNG' from the file's first bytes; :class:`DataError` if neither."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise DataError(f"cannot read image file {path}: {e.strerror or e}") from e
    if not head:
        raise DataError(f"image file {path} is empty")
    for magic, name in _MAGIC.items():
        if head.startswith(magic):
            return name
    raise DataError(f"{path} is not a JPEG or PNG image (its first bytes are {head[:4]!r})")


def check_image_files(paths: Sequence[str], threads: int = 8) -> None:
    """Check that every file exists and starts like a JPEG or PNG, in parallel."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(image_format, paths, chunksize=256):
            pass


def is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file()


def find_undecodable(paths: Sequence[str]) -> tuple[str, str] | None:
    """The first file that PIL cannot fully decode, with the reason; ``None`` if all decode."""
    from PIL import Image

    for path in paths:
        try:
            with Image.open(path) as im:
                im.load()
        except Exception as e:  # PIL raises many types for broken files
            return path, f"{type(e).__name__}: {e}"
    return None
