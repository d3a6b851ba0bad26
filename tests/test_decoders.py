"""Which decoder ran: nvImageCodec's log, as DALI prints it, counted by decoder kind
(:mod:`daliaug.tools.decoders`), and the selftest's decode-window check that fails when windows
go to the CPU. The log lines are stubbed in nvImageCodec 0.9's words (its sources and the
strings of the shipped library); the CPU run below captures the real ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daliaug.tools.decoders import (
    UNNAMED,
    account,
    captured_stderr,
    decoder_log,
    windows,
)
from daliaug.tools.selftest import decoder_check
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


def test_gpu_images_the_log_does_not_name_are_counted_apart() -> None:
    result = account(processed("nvjpeg_cuda_decoder", range(4)), images=10)
    assert result.decoders == {"nvjpeg_cuda_decoder": 4, UNNAMED: 6}
    assert result.count("gpu") == 6 and not result.cpu_fallback


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


@pytest.mark.gpu
def test_on_the_gpu_no_window_goes_to_the_cpu(jpegs: tuple[list[str], np.ndarray]) -> None:
    check = decoder_check(*jpegs)
    assert check.passed, check.detail
    assert check.values["account"]["cpu"] == 0
