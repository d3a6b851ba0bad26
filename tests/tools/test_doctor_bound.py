"""``daliaug doctor``'s judgement on a GPU host, fed numbers: host-bound or GPU-bound, and the
knob to turn (:func:`daliaug.tools.doctor.input_bound`)."""

from __future__ import annotations

import pytest

from daliaug.tools.doctor import input_bound


def bound(
    rate: float, cpu_percent: float, *, cores: int = 16, threads: int = 4, gpu=None, load=0.65
):
    return input_bound(rate, cpu_percent, cores, threads, gpu, load, prefetch=2)


def test_all_cores_busy_is_host_bound_and_names_the_hardware_decoder() -> None:
    # The H200 run of 2026-11-26 read about 1.6 CPU ms/image; at 10,000 images/s that is
    # 16 cores' worth.
    result = bound(10_000, 100.0, threads=16)
    assert result.limit == "cores"
    assert result.busy_cores == pytest.approx(16.0)
    assert result.cpu_ms_per_image == pytest.approx(1.6)
    assert "host-bound" in result.message
    assert "hw_decoder_load (now 0.65)" in result.message
    assert "10,000 images/s" in result.message  # the cores' ceiling at that cost


def test_all_cores_busy_with_the_hardware_decoder_maxed_asks_for_cores() -> None:
    result = bound(5_000, 90.0, threads=16, load=0.99)
    assert result.limit == "cores"
    assert "hw_decoder_load" not in result.message.split("help:")[1]
    assert "more cores" in result.message


def test_busy_threads_with_cores_to_spare_asks_for_threads() -> None:
    # 3,000 images/s at 1.6 ms: 4.8 cores busy of 16, DALI at its 4 threads.
    result = bound(3_000, 30.0, threads=4, gpu=40.0)
    assert result.limit == "threads"
    assert result.busy_cores == pytest.approx(4.8)
    assert "num_threads towards 16" in result.message


def test_a_busy_gpu_and_an_idle_host_is_gpu_bound() -> None:
    result = bound(12_000, 25.0, threads=16, gpu=97.0)
    assert result.limit == "gpu"
    assert result.message.startswith("GPU-bound: GPU busy 97%")


def test_nothing_saturated_asks_for_prefetch() -> None:
    result = bound(8_000, 20.0, threads=16, gpu=50.0)
    assert result.limit == "queue"
    assert "prefetch (now 2)" in result.message


def test_without_nvml_the_gpu_is_named_unknown() -> None:
    result = bound(8_000, 20.0, threads=16)
    assert result.limit == "queue"
    assert "unknown (no NVML)" in result.message


def test_the_cores_come_before_the_threads() -> None:
    # 2 cores both busy, 4 threads: the cores are the limit, not the threads.
    assert bound(1_000, 95.0, cores=2, threads=4).limit == "cores"
