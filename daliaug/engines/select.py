"""Which engine and device a config runs on, decided without importing TensorFlow.

:func:`choose` is the one decision, for every framework and output: ``make_dataset``,
``DaliLoader``, preview, check and Keras' ``it[i]`` all ask it. A placement is ``gpu`` or
``cpu`` (DALI on that device), ``tf`` (the TensorFlow engine) or ``opencv`` (the OpenCV
engine); ``backend: auto`` gives DALI on the GPU where DALI sees one, else the fastest CPU path
for the output, source kind and plan (:func:`cpu_placement`).
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from collections.abc import Callable

from daliaug.config import Config
from daliaug.cuda import cuda_driver
from daliaug.engine_names import HOST_ENGINES, Choice, Device, Placement
from daliaug.errors import BackendError, BackendWarning, ConfigError, user_stacklevel
from daliaug.transforms.base import TF_ONLY_FILLS
from daliaug.transforms.policy import PolicyTransform

TF_CUDA_FIX = "install TensorFlow's CUDA build: pip install 'tensorflow[and-cuda]==2.21.*'"


def choose(
    config: Config,
    framework: str = "tensorflow",
    tf_sees_gpu: Callable[[], bool] | None = None,
) -> Choice:
    """The engine and device that run ``config`` here for ``framework``.

    ``tensorflow`` (a ``tf.data`` dataset) runs any engine where :func:`resolve_backend`
    places it; DALI on the GPU only where ``tf_sees_gpu()`` (the ``tf.data`` output's question,
    asked only then) says TensorFlow sees it too (:func:`_tensorflow_blind`). ``jax``, ``torch``
    and ``numpy`` run DALI (:func:`_without_tensorflow`), or the OpenCV engine where the config
    asks for it or ``auto`` finds it fastest on a CPU host (:func:`cpu_placement`).

    >>> from daliaug import load_config
    >>> choose(load_config({"source": {"type": "directory", "path": "."}, "backend": "tf"}))
    Choice(engine='tf', device='cpu')
    """
    placement = resolve_backend(config, framework)
    if placement == "opencv":
        return placed(placement)
    if framework != "tensorflow":
        return Choice("dali", _without_tensorflow(config, framework, placement))
    if placement == "gpu" and tf_sees_gpu is not None and not tf_sees_gpu():
        placement = _tensorflow_blind(config)
    return placed(placement)


def placed(placement: Placement) -> Choice:
    """The engine and device of a placement (``tf`` and ``opencv`` run on the CPU)."""
    if placement in HOST_ENGINES:
        return Choice(placement, "cpu")
    return Choice("dali", placement)


def named_choice(config: Config) -> Choice:
    """The engine ``backend`` names (``tf``, ``opencv``), else DALI on the device it names
    (``auto``: the GPU where DALI sees one): what a preview runs, never another engine."""
    if config.backend in HOST_ENGINES:
        return placed(config.backend)  # type: ignore[arg-type]
    return Choice("dali", resolve_device(config))


def _without_tensorflow(config: Config, framework: str, placement: Placement) -> Device:
    """Where DALI runs for ``framework`` (JAX, PyTorch, NumPy), which must not need TensorFlow
    (``auto`` takes DALI, on the GPU where it sees one, else on the CPU)."""
    if placement == "tf" and config.backend == "auto" and dali_installed():
        return resolve_device(config)
    if placement == "tf" and not dali_installed():
        raise BackendError(
            f"framework={framework!r} needs NVIDIA DALI, which is not installed here; install "
            "nvidia-dali-cuda120 (pip install 'nvidia-dali-cuda120==2.4.*') or OpenCV (pip "
            "install 'daliaug[opencv]', backend: opencv), or use framework='tensorflow' with "
            "backend: tf"
        )
    if placement == "tf":
        raise ConfigError(
            f"backend: {config.backend!r} runs TensorFlow ops here, but framework={framework!r} "
            "needs DALI (install nvidia-dali-cuda120, or use backend: cpu or gpu)"
        )
    return placement


def _tensorflow_blind(config: Config) -> Placement:
    """Where a ``tf.data`` dataset runs when DALI sees a GPU and TensorFlow (its CPU-only
    build) does not: ``backend: auto`` on the CPU's default (:func:`cpu_placement`), with a
    warning naming the fix; ``backend: gpu`` is an error."""
    if config.backend == "gpu":
        raise BackendError(
            f"backend: gpu: DALI sees a GPU but TensorFlow does not; {TF_CUDA_FIX} "
            "(or use backend: cpu to run DALI on the CPU)"
        )
    fallback = cpu_placement(config)
    ops = {"tf": "TensorFlow ops", "opencv": "OpenCV"}.get(fallback, "DALI's CPU operators")
    warnings.warn(
        f"DALI sees a GPU but TensorFlow does not, so the pipeline runs on the CPU with {ops}; "
        f"{TF_CUDA_FIX}",
        BackendWarning,
        stacklevel=user_stacklevel(),
    )
    return fallback


def dali_gpu_count() -> int:
    """CUDA devices DALI can use; 0 without a driver or GPU."""
    try:
        from nvidia.dali.backend import GetCUDADeviceCount
    except ImportError as e:
        raise BackendError(
            f"NVIDIA DALI is not installed ({e}); install nvidia-dali-cuda120"
        ) from e
    try:
        return int(GetCUDADeviceCount())
    except RuntimeError:
        return 0


def dali_device(requested: str, device_id: int = 0) -> Device:
    """Where DALI runs for ``requested`` (``cpu``, ``gpu``, or ``auto``: the GPU if DALI sees
    GPU ``device_id``); ``gpu`` without a usable GPU is an error."""
    count = dali_gpu_count()
    if requested == "cpu":
        return "cpu"
    if requested == "gpu":
        if count == 0:
            raise BackendError(
                "backend: gpu was requested but DALI sees no CUDA GPU on this machine; "
                "use backend: cpu (or auto) to run the same pipeline on the CPU"
            )
        if device_id >= count:
            raise BackendError(f"device_id: {device_id} but only {count} GPU(s) are visible")
        return "gpu"
    return "gpu" if count > device_id else "cpu"


def dali_lacks(config: Config, device: Device) -> list[str]:
    """The config's transforms that DALI cannot run on ``device``, ``transforms.<i> (<type>:
    why)``."""
    lacking = [
        (i, t.type, t.dali_lacking(config.channels)) for i, t in enumerate(config.transforms)
    ]
    return [
        f"transforms.{i} ({kind}: {lacks[device]})" for i, kind, lacks in lacking if device in lacks
    ]


def resolve_device(config: Config) -> Device:
    """``gpu`` or ``cpu`` for DALI as the config asks (see :func:`dali_device`); a transform
    DALI cannot run there is an error."""
    device = dali_device(config.backend, config.device_id)
    lacking = dali_lacks(config, device)
    if lacking:
        raise BackendError(
            f"{', '.join(lacking)}: DALI cannot run it on its {device}; make_dataset runs it on "
            "the TensorFlow engine (backend: tf or auto)"
        )
    return device


def _instead(lacking: list[str], device: Device) -> Placement:
    """The TensorFlow engine, with a warning, where DALI on ``device`` lacks a transform."""
    warnings.warn(
        f"{', '.join(lacking)}: the pipeline runs on daliaug's TensorFlow engine (CPU) instead "
        f"of DALI's {device}",
        BackendWarning,
        stacklevel=4,
    )
    return "tf"


def cpu_placement(config: Config, framework: str = "tensorflow") -> Placement:
    """The fastest CPU path for the config through ``framework``'s output, as measured by
    ``python -m bench.choose`` (bench/results/choose-*.md).

    The OpenCV engine where :func:`opencv_fastest` says it measured fastest and it is installed
    (:func:`opencv_installed`; without it, the rest of this rule, silently). Else DALI's CPU
    operators for segmentation (images and masks warped together) and for a policy
    (``rand_augment``, ``trivial_augment``, ``keras_rand_augment``, ...: DALI runs each
    operation only for the images that drew it, the TensorFlow engine runs every operation on
    every image and keeps the drawn one), the TensorFlow backend otherwise (arrays, directory,
    file_list, PNGs, TFRecords; other pixel stages too, AugMix's chains included: the
    TensorFlow engine computes them sample by sample, each running only its drawn operations,
    about 4x DALI's CPU operators' speed, bench/README), and always for a transform DALI's CPU
    lacks (with a ``BackendWarning`` where DALI's CPU operators would have been chosen). For
    JAX, PyTorch and NumPy a ``tf`` here means DALI on the CPU (:func:`_without_tensorflow`).
    """
    if opencv_fastest(config, framework) and opencv_installed():
        return "opencv"
    if not (config.source.type == "segmentation" or _has_policy(config)):
        return "tf"
    lacking = dali_lacks(config, "cpu")
    return _instead(lacking, "cpu") if lacking else "cpu"


def opencv_runs(config: Config) -> bool:
    """Whether the OpenCV engine can run the config: not a streamed source (TFRecords: it has
    no reader for them), nor ``fill: reflect`` or ``wrap`` (DALI's borders, which it
    shares)."""
    return config.source.streamed is None and config.fill not in TF_ONLY_FILLS


def opencv_fastest(config: Config, framework: str) -> bool:
    """Whether the OpenCV engine measured fastest on a CPU host for the config through
    ``framework``'s output (``python -m bench.choose``, interleaved, on a shared 2-core VM:
    bench/results/choose-20261129-1133.md, -1149.md and -1158.md).

    Through the NumPy output (the JAX and PyTorch outputs share its loaders) it beat DALI's CPU
    operators on files: a JPEG folder 2.45x the images/s (2.47 against 4.32 CPU ms per image),
    segmentation 1.57x, COCO JPEGs with boxes 1.38x, two pixel stages added 1.17x; not on
    in-memory arrays (DALI 1.57x: 32x32 images, where the engine's per-sample Python outweighs the
    pixels) nor for a policy (a tie, 1.01x). Through ``tf.data`` the TensorFlow engine and DALI
    keep their kinds: the OpenCV engine's batches reach ``tf.data`` through Python calls (a JPEG
    folder 0.95x the TF engine), and where it was ahead (segmentation, 1.81x the images/s at the
    same CPU per image) it is not chosen, because ``choose`` does not see a ``tf.distribute``
    strategy, which that engine is not wired to. A folder of PNGs measured slower on OpenCV
    (DALI 1.87x), but a config does not say its files' format: JPEG folders are taken as the
    rule. Masks from WebDataset shards were not measured: DALI's CPU operators, as for
    segmentation before."""
    if framework == "tensorflow" or not opencv_runs(config):
        return False
    source = config.source
    if source.type == "arrays" or (source.type == "webdataset" and source.segmentation):
        return False
    return not _has_policy(config)


def _has_policy(config: Config) -> bool:
    """Whether the plan holds a policy (``rand_augment``, ``trivial_augment``, ...)."""
    return any(isinstance(t, PolicyTransform) for t in config.plan.transforms)


@functools.cache
def opencv_installed() -> bool:
    """Whether the OpenCV engine can be imported here: OpenCV (the ``opencv`` extra) and its
    JPEG decoder, simplejpeg (imported once, at the first question)."""
    try:
        import cv2  # noqa: F401
        import simplejpeg  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_backend(config: Config, framework: str = "tensorflow") -> Placement:
    """Where ``make_dataset`` runs the config for ``framework``: ``backend: cpu`` and ``gpu``
    on DALI's device, ``tf`` on the TensorFlow backend, ``opencv`` on the OpenCV engine;
    ``auto`` on DALI's GPU where DALI sees GPU ``device_id``, else on :func:`cpu_placement`
    (without DALI: the OpenCV engine for JAX, PyTorch and NumPy where it is installed and runs
    the config, else the TensorFlow backend); DALI is imported only where a CUDA driver is
    found (:func:`cuda_driver`). ``DaliLoader`` (no TensorFlow) runs DALI on the CPU instead
    (:func:`resolve_device`)."""
    if config.backend in ("tf", "opencv"):
        return config.backend
    if config.backend == "auto":
        if not dali_installed():
            if framework != "tensorflow" and opencv_runs(config) and opencv_installed():
                return "opencv"
            return "tf"
        if cuda_driver() and dali_gpu_count() > config.device_id:
            lacking = dali_lacks(config, "gpu")
            return _instead(lacking, "gpu") if lacking else "gpu"
        return cpu_placement(config, framework)
    return resolve_device(config)


def dali_installed() -> bool:
    """Whether DALI can be imported here (found, not imported)."""
    try:
        return importlib.util.find_spec("nvidia.dali") is not None
    except ModuleNotFoundError:
        return False
