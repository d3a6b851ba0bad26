"""Which decoder ran: nvImageCodec's log, as DALI prints it, counted by decoder kind
(:mod:`daliaug.tools.decoders`), and the selftest's decode-window check that fails when windows
go to the CPU. The log lines are stubbed in nvImageCodec 0.9's words (its sources and the
strings of the shipped library); the CPU run below captures the real ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from daliaug.tools.decoders import (
    UNKNOWN,
    account,
    captured_stderr,
    decode_windows,
    decoder_log,
    plain_windows,
    windows,
)
from daliaug.tools.demo_data import write_classification_dataset
from daliaug.tools.selftest import NVJPEG_MEAN_ERROR, decoder_check
from tests.helpers import structured_image, write_image_dir

INFO, WARNING = "\x1b[0;32m[INFO] \x1b[0m", "\x1b[0;33m[WARNING] \x1b[0m"
ROI_WARNING = (
    f"{WARNING}[nvjpeg_cuda_decoder] ROI decode with fancy upsampling may produce wrong results "
    "on image edge (1 pixel wide) with nvJPEG < 13.2 (available in CTK 13.3). To enable anyway, "
    "set enable_roi_fancy_upsampling=1\n"
)


def processed(decoder: str, samples: range, thread: int = 0) -> str:
    return "".join(f"{INFO}[nvimgcodec] {thread}: {decoder} process #{i}\n" for i in samples)


def test_windows_refused_for_fancy_upsampling_count_as_cpu_fallback() -> None:
    # What the H200 run of 2026-11-26 printed for each window: nvJPEG refused it, and
    # libjpeg-turbo decoded it on the host.
    log = (
        f"{INFO}[nvimgcodec] ImageGenericDecoder::decode num_samples=3\n"
        + ROI_WARNING * 3
        + processed("libjpeg_turbo_decoder", range(3), thread=2)
    )
    result = account(log, images=3)
    assert result.count("cpu") == 3 and result.count("hardware") == 0
    assert result.roi_fancy_refusals == 3
    assert result.cpu_fallback
    assert "CPU fallback through libjpeg_turbo_decoder" in result.summary()
    assert "3 decode windows refused by nvJPEG for fancy upsampling" in result.summary()


def test_hardware_and_cuda_decoders_are_told_apart() -> None:
    log = (
        f"{INFO}[nvjpeg_hw_decoder] Using HW batch-single decode path for batch of 26\n"
        f"{INFO}[nvjpeg_hw_decoder] Using HW batch-single decode path for batch of 26\n"
        + processed("nvjpeg_cuda_decoder", range(52, 64), thread=1)
    )
    result = account(log, images=64)
    assert (result.count("hardware"), result.count("cuda"), result.count("cpu")) == (52, 12, 0)
    assert not result.cpu_fallback
    assert result.summary() == "64 images: hardware 52, cuda 12"


def test_images_the_log_does_not_name_are_unknown_never_gpu_beyond_nvimgcodec_09() -> None:
    result = account(processed("nvjpeg_cuda_decoder", range(4)), images=10, codec="0.10.0")
    assert result.decoders == {"nvjpeg_cuda_decoder": 4, UNKNOWN: 6}
    assert result.count("unknown") == 6 and not result.named
    assert result.summary() == "10 images: cuda 4, unknown 6"


GPU_LOG = Path(__file__).parents[1] / "data" / "nvimgcodec-gpu-windows-h200.log"
"""nvImageCodec 0.9.0.20's log (DALI 2.4, ``DALI_NVIMGCODEC_LOG_LEVEL=5``) of the selftest's
152 demo JPEG windows decoded on an NVIDIA H200 (2026-11-29): no line names an image."""


def test_on_nvimgcodec_09_what_no_line_names_is_the_hardware_decoders() -> None:
    """The H200's real log: its 152 windows in 5 batches, none named, none failed: the
    hardware decoder's (the one decoder without a per-image line), said to be inferred. With a
    CPU fallback or a GPU without the hardware decoder, nothing is inferred."""
    result = account(GPU_LOG.read_text(), codec="0.9.0.20")
    assert result.decoders == {"nvjpeg_hw_decoder": 152} and result.inferred == 152
    assert result.named and not result.cpu_fallback
    assert "152 of them named by no line: the hardware decoder's" in result.summary()
    mixed = account(processed("libjpeg_turbo_decoder", range(2)), images=5, codec="0.9.0.20")
    assert mixed.count("cpu") == 2 and mixed.count("hardware") == 3 and mixed.cpu_fallback
    no_engine = f"{INFO}[nvjpeg_hw_decoder] HW decoder not supported by this platform. Skip.\n"
    assert account(no_engine, images=3, codec="0.9.0.20").count("unknown") == 3


REAL_LOG = Path(__file__).parents[1] / "data" / "nvimgcodec-cpu-windows.log"
"""nvImageCodec 0.9's log (level 4) of 128 demo JPEG windows decoded by DALI 2.4 on the CPU
(4 batches of 32), captured on this project's CPU machine with decoder_log()."""


def test_the_real_log_names_every_image_and_gives_the_batches() -> None:
    result = account(REAL_LOG.read_text())  # the images: from the batches' lines
    assert result.decoders == {"libjpeg_turbo_decoder": 128}
    assert result.named and result.cpu_fallback and result.no_hardware


def test_records_survive_lines_merged_by_two_threads() -> None:
    """Two threads' writes interleaved: one line's colour prefix and text parted by the
    other's, line ends lost, a line cut before its number."""
    lines = REAL_LOG.read_text().splitlines(keepends=True)
    records = [line for line in lines if " process #" in line]
    merged = []
    for a, b in zip(records[0::2], records[1::2], strict=True):
        prefix, text = a.split("[nvimgcodec] ", 1)
        merged.append(prefix + b.rstrip("\n") + "[nvimgcodec] " + text.rstrip("\n") + " ")
    merged[0] = merged[0].replace("#", "#\n", 1)
    result = account("".join(merged))
    assert result.decoders == {"libjpeg_turbo_decoder": 128}


def test_images_no_decoder_took_fail() -> None:
    log = processed("nvjpeg_cuda_decoder", range(1)) + (
        "\x1b[1;35m[DEBUG] \x1b[0m[nvimgcodec] 0: nvjpeg_cuda_decoder set failure #1 status=64\n"
    )
    result = account(log, images=2)
    assert result.failed == 1 and result.cpu_fallback
    assert "1 images no decoder accepted" in result.summary()


def test_a_gpu_without_a_hardware_decoder_is_named() -> None:
    log = f"{INFO}[nvjpeg-ext] HW decoder not supported by this platform. Skip.\n"
    result = account(log + processed("nvjpeg_cuda_decoder", range(2)), images=2)
    assert result.no_hardware and not result.cpu_fallback
    assert result.summary().endswith("no hardware JPEG decoder on this GPU")


def test_an_empty_log_says_the_variable_was_not_read() -> None:
    assert "DALI_NVIMGCODEC_LOG_LEVEL" in account("").summary()


def test_standard_error_of_c_code_is_captured() -> None:
    import ctypes

    libc = ctypes.CDLL(None)
    with captured_stderr() as text:
        libc.write(2, b"from C\n", 7)
    assert text == ["from C\n"]


def test_windows_lie_inside_their_images() -> None:
    sizes = np.array([[300, 400], [7, 5], [1, 1]])
    starts, shapes = windows(sizes)
    wh = sizes[:, ::-1]
    assert np.all(shapes >= 1) and np.all(starts >= 0)
    assert np.all(starts + shapes <= wh)


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], np.ndarray]:
    root = tmp_path_factory.mktemp("decoders")
    write_image_dir(root, {"a": [structured_image(60 + 7 * i, 80, i) for i in range(6)]}, "jpg")
    paths = sorted(str(p) for p in Path(root).rglob("*.jpg"))
    return paths, np.array([[60 + 7 * i, 80] for i in range(6)])


def test_on_the_cpu_the_real_log_names_libjpeg_turbo_and_the_check_fails_loudly(
    jpegs: tuple[list[str], np.ndarray],
) -> None:
    paths, sizes = jpegs
    with decoder_log() as log:
        pass
    assert log == [""]
    check = decoder_check(paths, sizes, device="cpu")
    assert check.passed is False
    assert check.detail.startswith("decode windows fell back to the CPU: 6 images: cpu 6")
    assert "libjpeg_turbo_decoder" in check.detail
    assert check.values["largest_difference"] == 0  # the same decoder twice
    assert check.values["reference"] == "DALI's CPU decoder"


@pytest.fixture(scope="module")
def demo_jpegs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], np.ndarray]:
    """The demo's JPEGs (its validation split's generator: 96 x 96, quality 90, 4:2:0)."""
    root = write_classification_dataset(
        tmp_path_factory.mktemp("demo") / "val", per_class=8, seed=1
    )
    paths = sorted(str(p) for p in root.rglob("*.jpg"))
    return paths, np.array([Image.open(p).size[::-1] for p in paths])


def mean_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    diffs = [np.abs(x.astype(float) - y) for x, y in zip(a, b, strict=True)]
    return float(np.average([d.mean() for d in diffs], weights=[d.size for d in diffs]))


def test_non_fancy_window_references_differ_from_dalis_fancy_cpu_windows(
    demo_jpegs: tuple[list[str], np.ndarray],
) -> None:
    """The reference the selftest held GPU windows to (DALI's CPU decoder, always fancy) is
    beyond the decoders' tolerance from the same windows decoded as nvJPEG decodes them."""
    paths, sizes = demo_jpegs
    assert all(Image.open(p).layer[0][1:3] == (2, 2) for p in paths)  # 4:2:0 (luma 2 x 2)
    starts, shapes = windows(sizes)
    fancy, _ = decode_windows(paths, starts, shapes, "cpu")
    plain = plain_windows(paths, starts, shapes)
    assert [p.shape for p in plain] == [f.shape for f in fancy]
    difference = mean_difference(plain, fancy)  # 2.62 on the demo's 150 validation JPEGs
    assert difference > 2.0 > NVJPEG_MEAN_ERROR


def ycbcr(rgb: np.ndarray) -> np.ndarray:
    """JFIF's YCbCr of an RGB image (float)."""
    m = np.array([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])
    return rgb.astype(float) @ m.T + [0, 128, 128]


def test_the_non_fancy_reference_is_a_non_fancy_decode(
    demo_jpegs: tuple[list[str], np.ndarray],
) -> None:
    """Its luma is the JPEG's own (Pillow's Y plane, which no upsampling touches) and its chroma
    is one value per 2 x 2 block of the 4:2:0 grid (each sample repeated, as nvJPEG does without
    fancy upsampling); DALI's CPU decode has the same luma, chroma varying within the blocks."""
    paths, sizes = demo_jpegs
    whole = np.zeros((len(paths), 2), np.float32)
    plain = plain_windows(paths, whole, sizes[:, ::-1].astype(np.float32))
    fancy, _ = decode_windows(paths, whole, sizes[:, ::-1].astype(np.float32), "cpu")
    for path, p, f in zip(paths, plain, fancy, strict=True):
        with Image.open(path) as im:
            im.draft("YCbCr", im.size)
            luma = np.asarray(im)[..., 0]
        h, w = (p.shape[0] // 2) * 2, (p.shape[1] // 2) * 2
        spreads = []
        for image in (p, f):
            yuv = ycbcr(image)
            assert np.abs(yuv[..., 0] - luma).mean() < 0.5  # rounding to 8 bits only
            blocks = yuv[:h, :w, 1:].reshape(h // 2, 2, w // 2, 2, 2)
            spreads.append(float(np.ptp(blocks, axis=(1, 3)).mean()))
        assert spreads[0] < 0.3 < 1.0 < spreads[1], spreads


@pytest.mark.gpu
def test_on_the_gpu_no_window_goes_to_the_cpu(jpegs: tuple[list[str], np.ndarray]) -> None:
    check = decoder_check(*jpegs)
    assert check.passed, check.detail
    assert check.values["account"]["cpu"] == 0
