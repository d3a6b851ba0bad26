"""``ImageDataGenerator``: Keras' constructor, methods and meaning, on daliaug's pipelines.

The constructor's arguments become one daliaug config (:meth:`ImageDataGenerator.config`):
geometry as the ``keras_affine`` transform (fused into the one warp), ``channel_shift_range``
and ``brightness_range`` as the ``channel_shift`` and ``brightness`` transforms, ``rescale`` and
the featurewise statistics as the output normalization; ``flow*`` hand it to ``make_dataset``.
What cannot run in the DALI graph (see :data:`OFF_GRAPH`) puts the pipeline on the TensorFlow
backend, with one warning per option naming its cost.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from daliaug.config import Config, load_config
from daliaug.epoch import resolve_seed
from daliaug.errors import BackendWarning
from daliaug.keras.after_pipeline import Outputs, Save
from daliaug.keras.backends import tensorflow_only
from daliaug.keras.flows import COLOR_MODES, check_file_flow, make_flow
from daliaug.keras.samples import (
    UNIT,
    Levels,
    Listing,
    list_dataframe,
    list_directory,
    split_range,
    to_levels,
)
from daliaug.keras.single import apply_transform
from daliaug.keras.standardize import Standardization
from daliaug.sources.arrays import array_samples
from daliaug.sources.base import Samples
from daliaug.transforms.keras_affine import KerasAffine

FILL_MODES = ("constant", "nearest", "reflect", "wrap")
OUTPUT_DTYPES = ("float32", "float16")
CLASS_MODES = {"categorical": "categorical", "binary": "float", "sparse": "float"}
"""Keras' ``class_mode`` -> daliaug's ``label_mode`` (``input`` and ``None`` map to ``input``
and ``none``)."""

TF_BACKEND = "so the pipeline runs on daliaug's TensorFlow backend (CPU) instead of DALI"
OFF_GRAPH = {
    "fill_mode": f"DALI's warp has no reflect or wrap border, {TF_BACKEND}",
    "preprocessing_function": (
        "your Python function runs on every image after the pipeline, in a tf.numpy_function "
        f"on the CPU (one Python call per image, holding the GIL), {TF_BACKEND}"
    ),
    "samplewise_center": f"per-image statistics run as a TensorFlow stage after the pipeline, "
    f"{TF_BACKEND}",
    "samplewise_std_normalization": "per-image statistics run as a TensorFlow stage after the "
    f"pipeline, {TF_BACKEND}",
    "zca_whitening": "a (height*width*channels)^2 matrix product per image runs as a TensorFlow "
    f"stage after the pipeline, {TF_BACKEND}",
}
"""Options that cannot run in the DALI graph, and what that costs."""


DEPRECATED_DATAFRAME_ARGUMENTS = {
    "has_ext": "has_ext is deprecated, filenames in the dataframe have to match the exact "
    "filenames in disk.",
    "sort": "sort is deprecated, batches will be created in the same order than the filenames "
    "provided if `shuffle` is set to `False`.",
    "drop_duplicates": "drop_duplicates is deprecated, you can drop duplicates by using the "
    "pandas.DataFrame.drop_duplicates method.",
}
"""Keras' deprecated ``flow_from_dataframe`` arguments, with its warnings."""


def _warn(message: str, stacklevel: int = 3) -> None:
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


class ImageDataGenerator:
    """Keras' ``ImageDataGenerator`` (same arguments, defaults, methods and meaning), whose
    ``flow``, ``flow_from_directory`` and ``flow_from_dataframe`` return daliaug datasets for
    ``model.fit`` (DALI on the GPU where present).

    Two arguments beyond Keras': ``keras_quirks`` (default ``True``) reproduces Keras' axis
    mix-ups (the centre of rotation, shear and zoom at ``(h/2, w/2)`` in ``(x, y)``, off by
    ``(h - w)/2`` on non-square images, and ``height_shift_range`` moving columns,
    ``width_shift_range`` rows); ``False`` centres on the image and shifts each range along its
    own axis. ``backend`` is daliaug's (``auto``, ``gpu``, ``cpu``, ``tf``).
    """

    def __init__(
        self,
        featurewise_center: bool = False,
        samplewise_center: bool = False,
        featurewise_std_normalization: bool = False,
        samplewise_std_normalization: bool = False,
        zca_whitening: bool = False,
        zca_epsilon: float = 1e-6,
        rotation_range: float = 0,
        width_shift_range: float | int | Sequence[float] = 0.0,
        height_shift_range: float | int | Sequence[float] = 0.0,
        brightness_range: Sequence[float] | None = None,
        shear_range: float = 0.0,
        zoom_range: float | Sequence[float] = 0.0,
        channel_shift_range: float = 0.0,
        fill_mode: str = "nearest",
        cval: float = 0.0,
        horizontal_flip: bool = False,
        vertical_flip: bool = False,
        rescale: float | None = None,
        preprocessing_function: Callable[[np.ndarray], Any] | None = None,
        data_format: str | None = None,
        validation_split: float = 0.0,
        interpolation_order: int = 1,
        dtype: str | None = None,
        *,
        keras_quirks: bool = True,
        backend: str = "auto",
    ) -> None:
        import keras

        data_format = data_format or keras.backend.image_data_format()
        dtype = np.dtype(dtype or keras.backend.floatx()).name
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(
                '`data_format` should be `"channels_last"` (channel after row and column) or '
                '`"channels_first"` (channel before row and column). '
                f"Received: {data_format}"
            )
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(
                "`validation_split` must be strictly between 0 and 1. "
                f" Received: {validation_split}"
            )
        if isinstance(zoom_range, (float, int)):
            zoom = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2 and all(isinstance(v, (float, int)) for v in zoom_range):
            zoom = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(
                "`zoom_range` should be a float or a tuple or list of two floats. "
                f"Received: {zoom_range}"
            )
        if brightness_range is not None and (
            not isinstance(brightness_range, (tuple, list)) or len(brightness_range) != 2
        ):
            raise ValueError(
                "`brightness_range should be tuple or list of two floats. "
                f"Received: {brightness_range}"
            )
        if fill_mode not in FILL_MODES:
            raise ValueError(f"Invalid fill_mode: {fill_mode!r}; expected one of {FILL_MODES}")
        if interpolation_order not in (0, 1):
            raise ValueError(
                f"interpolation_order {interpolation_order}: daliaug resamples with nearest "
                "neighbours (0) or bilinearly (1); SciPy's spline orders 2-5 are not supported"
            )
        if dtype not in OUTPUT_DTYPES:
            raise ValueError(f"dtype {dtype!r}: daliaug's pipelines output {OUTPUT_DTYPES}")
        if zca_whitening and not featurewise_center:
            featurewise_center = True
            _warn(
                "This ImageDataGenerator specifies `zca_whitening`, which overrides setting "
                "of `featurewise_center`."
            )
        if zca_whitening and featurewise_std_normalization:
            featurewise_std_normalization = False
            _warn(
                "This ImageDataGenerator specifies `zca_whitening` which overrides setting "
                "of`featurewise_std_normalization`."
            )
        if featurewise_std_normalization and not featurewise_center:
            featurewise_center = True
            _warn(
                "This ImageDataGenerator specifies `featurewise_std_normalization`, which "
                "overrides setting of `featurewise_center`."
            )
        if samplewise_std_normalization and not samplewise_center:
            samplewise_center = True
            _warn(
                "This ImageDataGenerator specifies `samplewise_std_normalization`, which "
                "overrides setting of `samplewise_center`."
            )
        self.featurewise_center = featurewise_center
        self.samplewise_center = samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = zca_whitening
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.brightness_range = brightness_range
        self.shear_range = shear_range
        self.zoom_range = zoom
        self.channel_shift_range = channel_shift_range
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.data_format = data_format
        self.channel_axis, self.row_axis, self.col_axis = (
            (3, 1, 2) if data_format == "channels_last" else (1, 2, 3)
        )
        self._validation_split = validation_split
        self.interpolation_order = interpolation_order
        self.dtype = dtype
        self.keras_quirks = keras_quirks
        self.backend = backend
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None
        self.zca_whitening_matrix: np.ndarray | None = None
        for option in self._off_graph():
            warnings.warn(
                f"ImageDataGenerator({option}=...): {OFF_GRAPH[option]}",
                BackendWarning,
                stacklevel=2,
            )

    # -- the config --------------------------------------------------------------------------

    def _off_graph(self) -> list[str]:
        """The options set that cannot run in the DALI graph."""
        set_ = {
            "fill_mode": self.fill_mode in ("reflect", "wrap"),
            "preprocessing_function": self.preprocessing_function is not None,
            "samplewise_center": self.samplewise_center,
            "samplewise_std_normalization": self.samplewise_std_normalization,
            "zca_whitening": self.zca_whitening,
        }
        return [option for option, on in set_.items() if on]

    def standardization(self) -> Standardization:
        """The standardization settings and the statistics ``fit`` computed (or were set)."""
        return Standardization(
            self.preprocessing_function,
            self.rescale,
            self.samplewise_center,
            self.samplewise_std_normalization,
            self.featurewise_center,
            self.featurewise_std_normalization,
            self.zca_whitening,
            self.mean,
            self.std,
            self.zca_whitening_matrix,
        )

    def transforms(self, levels: Levels = UNIT) -> list[dict[str, Any]]:
        """The augmentation as daliaug transforms, in Keras' order (geometry, channel shift,
        flips, brightness; flips are part of ``keras_affine``), on images of ``levels`` (the
        fill and the shift as levels)."""
        constant = self.fill_mode == "constant"
        fill: float | str = levels.level(float(self.cval)) if constant else self.fill_mode
        out: list[dict[str, Any]] = [
            {
                "type": "keras_affine",
                "rotation_range": self.rotation_range,
                "width_shift_range": self.width_shift_range,
                "height_shift_range": self.height_shift_range,
                "shear_range": self.shear_range,
                "zoom_range": tuple(self.zoom_range),
                "horizontal_flip": bool(self.horizontal_flip),
                "vertical_flip": bool(self.vertical_flip),
                "keras_quirks": self.keras_quirks,
                "fill": fill,
            }
        ]
        if self.channel_shift_range:
            intensity = self.channel_shift_range / levels.step
            out.append({"type": "channel_shift", "intensity": intensity})
        if self.brightness_range is not None:
            out.append({"type": "brightness", "factor": list(self.brightness_range)})
        return out

    def _backend(self, after: Sequence[str] = ()) -> str:
        """daliaug's backend: the TensorFlow one where an option, or the flow options
        ``after``, need a stage after the pipeline (a GPU-placed DALI dataset takes none) or a
        TensorFlow-only fill."""
        off = [*self._off_graph(), *after]
        tensorflow_only(off)
        if not off or self.backend in ("cpu", "tf"):
            return self.backend
        if self.backend == "gpu":
            raise ValueError(
                f"backend='gpu': {', '.join(off)} cannot run in the DALI graph and a GPU-placed "
                "DALI dataset takes no stage after it; use backend='auto', 'tf' or 'cpu'"
            )
        return "tf"

    def config(
        self,
        image_size: Sequence[int],
        channels: int,
        *,
        resize: bool = False,
        levels: Levels = UNIT,
        after: Sequence[str] = (),
        **fields: Any,
    ) -> Config:
        """The daliaug config of this generator for images of ``image_size`` (with ``resize``,
        files are first resized to it, fused into the same warp) on ``levels``, ``fields``
        added; ``after``: the flow options that need a stage after the pipeline."""
        standardization = self.standardization()
        transforms = self.transforms(levels)
        if resize:
            transforms.insert(0, {"type": "resize", "size": list(image_size)})
        backend = fields.pop("backend") if "backend" in fields else self._backend(after)
        output = {
            "dtype": "float32" if standardization.off_graph else self.dtype,
            "layout": "NHWC" if self.data_format == "channels_last" else "NCHW",
            **standardization.output(channels, levels),
        }
        return load_config(
            {
                "source": {"type": "arrays"},
                "image_size": list(image_size),
                "channels": channels,
                "transforms": transforms,
                "interpolation": "nearest" if self.interpolation_order == 0 else "linear",
                "fill_edge": "cut" if self.fill_mode == "constant" else "blend",
                "output": output,
                "backend": backend,
                **fields,
            }
        )

    def _outputs(self, targets: str, stacklevel: int, **fields: Any) -> Outputs:
        """The flow's stage after the pipeline (see :class:`Outputs`), with Keras' warning
        for statistics not fit (``stacklevel``: the user's call, counted from the caller)."""
        standardization = self.standardization()
        standardization.warn_unfit(stacklevel + 1)
        return Outputs(standardization, dtype=self.dtype, targets=targets, **fields)

    def _after(self, stacklevel: int, **flow_options: Any) -> list[str]:
        """The flow options set that need the stage after the pipeline (beyond the
        generator's own), with a warning naming them and the cost if that moves the pipeline
        to the TensorFlow backend (``stacklevel``: the user's call, counted from the caller)."""
        after = [name for name, value in flow_options.items() if value]
        tensorflow_only([*self._off_graph(), *after])  # off TensorFlow: refused, not warned
        if after and self.backend == "auto" and not self._off_graph():
            warnings.warn(
                f"{', '.join(after)}: run as a TensorFlow stage after the pipeline, {TF_BACKEND}",
                BackendWarning,
                stacklevel=stacklevel + 1,
            )
        return after

    # -- statistics and single images ----------------------------------------------------------

    def fit(self, x: Any, augment: bool = False, rounds: int = 1, seed: int | None = None) -> None:
        """Compute the featurewise mean and standard deviation and the ZCA matrix from ``x``
        (rank 4), after ``rescale`` (and random augmentation, ``rounds`` times), as Keras."""
        x = np.array(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(
                f"Input to `.fit()` should have rank 4. Got array with shape: {x.shape}"
            )
        if x.shape[self.channel_axis] not in (1, 3, 4):
            _warn(
                "Expected input to be images (as Numpy array) following the data format "
                f'convention "{self.data_format}" (channels on axis {self.channel_axis}), i.e. '
                f"expected either 1, 3 or 4 channels on axis {self.channel_axis}. However, it "
                f"was passed an array with shape {x.shape} ({x.shape[self.channel_axis]} "
                "channels)."
            )
        if seed is not None:
            np.random.seed(seed)
        if self.rescale:
            x *= self.rescale
        if augment:
            x = np.stack([self.random_transform(image) for _ in range(rounds) for image in x])
        axes = (0, self.row_axis, self.col_axis)
        if self.featurewise_center:
            self.mean = x.mean(axis=axes, keepdims=True)[0]
            x = x - self.mean
        if self.featurewise_std_normalization:
            self.std = x.std(axis=axes, keepdims=True)[0]
            x = x / (self.std + 1e-6)
        if self.zca_whitening:
            flat = x.reshape(len(x), -1)
            u, s, _ = np.linalg.svd(flat.T, full_matrices=False)
            self.zca_whitening_matrix = (u * (np.sqrt(len(x)) / (s + self.zca_epsilon))) @ u.T

    def standardize(self, x: np.ndarray) -> np.ndarray:
        """Keras' standardization of ``x`` (an image or a batch, statistics over all of it, as
        Keras), in place where ``x`` is a writable float array, and returned."""
        standardization = self.standardization()
        standardization.warn_unfit(stacklevel=2)
        tensorflow_only(["standardize"], "ImageDataGenerator.standardize")
        import tensorflow as tf

        image = tf.constant(np.asarray(x, np.float32))
        out = standardization.apply(image, None, per_image=False).numpy()
        if isinstance(x, np.ndarray) and x.flags.writeable and x.dtype.kind == "f":
            x[...] = out
            return x
        return out.astype(self.dtype)

    def _image_axes(self, shape: Sequence[int]) -> tuple[int, int, int]:
        """``(height, width, channels)`` of one image of ``shape``."""
        return shape[self.row_axis - 1], shape[self.col_axis - 1], shape[self.channel_axis - 1]

    def get_random_transform(
        self, img_shape: Sequence[int], seed: int | None = None
    ) -> dict[str, Any]:
        """Random parameters for one image of ``img_shape``, from Keras' distributions, as
        Keras' ``transform_parameters`` (NumPy's global generator seeds the draw unless
        ``seed`` is given, so ``np.random.seed`` makes it repeatable)."""
        from daliaug.epoch import NumpyRandom

        h, w, c = self._image_axes(img_shape)
        config = self.config((h, w), c, backend="tf")
        rng = np.random.default_rng(seed if seed is not None else np.random.randint(2**31))
        drawn = config.plan.draw(NumpyRandom(rng, 1))
        values = {key: float(np.asarray(v).reshape(-1)[0]) for key, v in drawn.items()}
        affine = config.transforms[0]
        assert isinstance(affine, KerasAffine)
        out = affine.to_keras({k: values[f"0.{k}"] for k in affine.params}, (h, w))
        kinds = {t.type: i for i, t in enumerate(config.transforms)}
        shift, bright = kinds.get("channel_shift"), kinds.get("brightness")
        out["channel_shift_intensity"] = None if shift is None else values[f"{shift}.intensity"]
        out["brightness"] = None if bright is None else values[f"{bright}.factor"]
        return out

    def apply_transform(self, x: np.ndarray, transform_parameters: Mapping[str, Any]) -> Any:
        """Keras' ``apply_transform`` on one image with explicit parameters (Keras' names,
        missing geometry as Keras defaults it; ``channel_shift_intensity`` and ``brightness``
        where given), computed from the same plan as the pipelines (see
        :func:`daliaug.keras.single.apply_transform`)."""
        tensorflow_only(["apply_transform"], "ImageDataGenerator.apply_transform")
        image = np.asarray(x, np.float32)
        if self.data_format == "channels_first":
            image = image.transpose(1, 2, 0)
        h, w, c = image.shape
        transforms = self.transforms()[:1]
        shift = transform_parameters.get("channel_shift_intensity")
        if shift is not None:
            transforms.append({"type": "channel_shift", "intensity": abs(float(shift))})
        brightness = transform_parameters.get("brightness")
        if brightness is not None:
            transforms.append({"type": "brightness", "factor": [float(brightness)] * 2})
        config = self.config((h, w), c, backend="tf", transforms=transforms)
        out = apply_transform(config, image, transform_parameters)
        return out.transpose(2, 0, 1) if self.data_format == "channels_first" else out

    def random_transform(self, x: np.ndarray, seed: int | None = None) -> Any:
        """``apply_transform`` with ``get_random_transform``'s parameters."""
        return self.apply_transform(x, self.get_random_transform(np.shape(x), seed))

    # -- flows -------------------------------------------------------------------------------

    def flow(
        self,
        x: Any,
        y: Any = None,
        batch_size: int = 32,
        shuffle: bool = True,
        sample_weight: Any = None,
        seed: int | None = None,
        save_to_dir: str | None = None,
        save_prefix: str = "",
        save_format: str = "png",
        ignore_class_split: bool = False,
        subset: str | None = None,
    ) -> Any:
        """Batches of in-memory images ``x`` (rank 4, any number of channels, any numeric
        range: see :func:`~daliaug.keras.samples.to_levels`), or ``(x, other inputs)``, with
        their targets ``y`` as given (float32) and ``sample_weight``: ``x``, ``(x, y)`` or
        ``(x, y, sample_weight)``, ``x`` being ``(images, *other inputs)`` for the second
        form. ``save_to_dir`` writes every image yielded there (see :class:`Save`: Python and
        PIL on each image, in the ``tf.data`` stage after the pipeline: slow, for looking at
        the augmentation, as in Keras)."""
        extras: list[np.ndarray] = []
        if isinstance(x, (tuple, list)):
            extras = [np.asarray(e) for e in x[1]] if isinstance(x[1], list) else [np.asarray(x[1])]
            x = x[0]
            for extra in extras:
                if len(x) != len(extra):
                    raise ValueError(
                        "All of the arrays in `x` should have the same length. Found a pair "
                        f"with: len(x[0]) = {len(x)}, len(x[?]) = {len(extra)}"
                    )
        if y is not None and len(x) != len(y):
            raise ValueError(
                "`x` (images tensor) and `y` (labels) should have the same length. Found: "
                f"x.shape = {np.asarray(x).shape}, y.shape = {np.asarray(y).shape}"
            )
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError(
                "`x` (images tensor) and `sample_weight` should have the same length. Found: "
                f"x.shape = {np.asarray(x).shape}, "
                f"sample_weight.shape = {np.asarray(sample_weight).shape}"
            )
        part = split_range(self._validation_split, subset, len(x))
        if subset is not None and y is not None and not ignore_class_split:
            cut = int(len(x) * self._validation_split)
            if not np.array_equal(np.unique(y[:cut]), np.unique(y[cut:])):
                raise ValueError(
                    "Training and validation subsets have different number of classes after "
                    "the split. If your numpy arrays are sorted by the label, you might want to "
                    "shuffle them."
                )
        x = np.asarray(x)[part]
        if x.ndim != 4:
            raise ValueError(
                "Input data in `NumpyArrayIterator` should have rank 4. You passed an array "
                f"with shape {x.shape}"
            )
        if x.shape[self.channel_axis] not in (1, 3, 4):
            _warn(
                'NumpyArrayIterator is set to use the data format convention "'
                f'{self.data_format}" (channels on axis {self.channel_axis}), i.e. expected '
                f"either 1, 3, or 4 channels on axis {self.channel_axis}. However, it was passed "
                f"an array with shape {x.shape} ({x.shape[self.channel_axis]} channels)."
            )
        images, levels = to_levels(x.transpose(0, 2, 3, 1) if self.channel_axis == 1 else x)
        y = None if y is None else np.asarray(y)[part]
        weights = None if y is None or sample_weight is None else np.asarray(sample_weight)[part]
        extras = [e[part] for e in extras]
        outputs = self._outputs(
            "none" if y is None else "table",
            2,
            levels=levels,
            table=None if y is None else np.asarray(y, np.float32),
            extras=tuple(extras),
            save=self._save(save_to_dir, save_prefix, save_format, 10**4),
        )
        after = self._after(2, **{"other inputs": extras, "save_to_dir": save_to_dir})
        targets = np.arange(len(images), dtype=np.float32) if outputs.indexed else y
        samples = (
            array_samples(images, targets, raw=True)
            if len(images)
            else Samples({"image": images}, [], np.zeros((0, 2), np.int32))
        )
        config = self.config(
            images.shape[1:3],
            images.shape[3],
            levels=levels,
            after=after,
            label_mode="none" if targets is None else "raw",
            batch_size=batch_size,
            shuffle=shuffle,
            seed=resolve_seed(seed),
        )
        attributes = {
            "x": x,
            "y": y,
            "x_misc": extras,
            "sample_weight": weights,
            **self._flow_attributes(save_to_dir, save_prefix, save_format),
        }
        return make_flow(config, samples, weights, outputs, self.data_format, attributes)

    def flow_from_directory(
        self,
        directory: str,
        target_size: tuple[int, int] = (256, 256),
        color_mode: str = "rgb",
        classes: list[str] | None = None,
        class_mode: str | None = "categorical",
        batch_size: int = 32,
        shuffle: bool = True,
        seed: int | None = None,
        save_to_dir: str | None = None,
        save_prefix: str = "",
        save_format: str = "png",
        follow_links: bool = False,
        subset: str | None = None,
        interpolation: str = "nearest",
        keep_aspect_ratio: bool = False,
    ) -> Any:
        """Batches of the images in ``directory/<class>/`` resized to ``target_size`` (fused
        into the one warp), with targets as ``class_mode`` says; ``save_to_dir`` as in
        :meth:`flow`."""
        if keep_aspect_ratio:
            raise ValueError(
                "keep_aspect_ratio=True is not supported by daliaug's ImageDataGenerator"
            )
        check_file_flow(
            color_mode,
            class_mode,
            interpolation,
            {"categorical", "binary", "sparse", "input", None},
        )
        listing = list_directory(
            str(directory), classes, follow_links, self._validation_split, subset, class_mode
        )
        return self._flow_files(
            listing,
            tuple(target_size),
            color_mode,
            class_mode,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            save=(save_to_dir, save_prefix, save_format),
            attributes={"directory": directory, "subset": subset},
        )

    def flow_from_dataframe(
        self,
        dataframe: Any,
        directory: str | None = None,
        x_col: str = "filename",
        y_col: Any = "class",
        weight_col: str | None = None,
        target_size: tuple[int, int] = (256, 256),
        color_mode: str = "rgb",
        classes: list[str] | None = None,
        class_mode: str | None = "categorical",
        batch_size: int = 32,
        shuffle: bool = True,
        seed: int | None = None,
        save_to_dir: str | None = None,
        save_prefix: str = "",
        save_format: str = "png",
        subset: str | None = None,
        interpolation: str = "nearest",
        validate_filenames: bool = True,
        **kwargs: Any,
    ) -> Any:
        """Batches of the image files named in a pandas ``dataframe`` (``x_col``, relative to
        ``directory``), with ``y_col`` as ``class_mode`` says: class names (a list of them per
        row: multi-hot ``categorical`` targets), numbers passed through (``raw``: one column or
        a list of them), or one output per column of a list (``multi_output``); ``weight_col``
        as sample weights. ``validate_filenames=False`` opens no file now: each file's header
        is read when its batch is first made, and daliaug's decode check is skipped (a file
        that fails then stops that epoch, as in Keras). ``save_to_dir`` as in :meth:`flow`."""
        for name, message in DEPRECATED_DATAFRAME_ARGUMENTS.items():
            if name in kwargs:
                warnings.warn(message, DeprecationWarning, stacklevel=2)
        if class_mode == "other":
            warnings.warn(
                '`class_mode="other"` is deprecated, please use `class_mode="raw"`.',
                DeprecationWarning,
                stacklevel=2,
            )
            class_mode = "raw"
        check_file_flow(
            color_mode,
            class_mode,
            interpolation,
            {"categorical", "binary", "sparse", "input", "raw", None, "multi_output"},
        )
        listing: Listing = list_dataframe(
            dataframe,
            directory,
            x_col,
            y_col,
            weight_col,
            classes,
            class_mode,
            validate_filenames,
            self._validation_split,
            subset,
        )
        return self._flow_files(
            listing,
            tuple(target_size),
            color_mode,
            class_mode,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            save=(save_to_dir, save_prefix, save_format),
            attributes={"directory": directory, "subset": subset, "x_col": x_col, "y_col": y_col},
        )

    def _flow_files(
        self,
        listing: Listing,
        target_size: tuple[int, int],
        color_mode: str,
        class_mode: str | None,
        *,
        batch_size: int,
        shuffle: bool,
        seed: int | None,
        save: tuple[str | None, str, str],
        attributes: dict[str, Any],
    ) -> Any:
        """The flow of ``listing``'s files resized to ``target_size``."""
        targets = listing.targets
        kind = {"none": "none", "input": "input"}.get(targets.label_mode, "table")
        outputs = self._outputs(kind, 3, outputs=targets.outputs, save=self._save(*save, 10**7))
        indexed = outputs.indexed
        outputs = dataclasses.replace(outputs, table=targets.rows() if indexed else None)
        after = self._after(3, multi_output=targets.outputs is not None, save_to_dir=save[0])
        config = self.config(
            target_size,
            COLOR_MODES[color_mode],
            resize=True,
            after=after,
            label_mode=outputs.pipeline_label_mode(targets.label_mode),
            batch_size=batch_size,
            shuffle=shuffle,
            seed=resolve_seed(seed),
        )
        if not listing.validated:
            config = config.model_copy(
                update={"source": config.source.model_copy(update={"check": "headers"})}
            )
        return make_flow(
            config,
            listing.samples(indexed=indexed),
            listing.weights,
            outputs,
            self.data_format,
            {
                "class_indices": {name: i for i, name in enumerate(listing.class_names)},
                "classes": listing.classes,
                "labels": listing.labels,
                "num_classes": len(listing.class_names),
                "filenames": listing.filenames,
                "filepaths": listing.filepaths,
                "class_mode": class_mode,
                "color_mode": color_mode,
                "target_size": target_size,
                "sample_weight": listing.weights,
                **self._flow_attributes(*save),
                **attributes,
            },
        )

    def _save(self, directory: str | None, prefix: str, format: str, hashes: int) -> Save | None:
        return None if not directory else Save(directory, prefix, format, self.data_format, hashes)

    def _flow_attributes(
        self, save_to_dir: str | None, save_prefix: str, save_format: str
    ) -> dict[str, Any]:
        """The attributes every Keras iterator has."""
        return {
            "image_data_generator": self,
            "save_to_dir": save_to_dir,
            "save_prefix": save_prefix,
            "save_format": save_format,
        }
