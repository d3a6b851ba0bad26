"""The window-decode canary (:mod:`daliaug.engines.dali.canary`): both outcomes of its child
(stand-in children here: no GPU), its cache per host, ``decode_window: auto`` following it with
one warning, and ``whole`` giving the same pixels as ``roi`` on DALI's CPU decoder."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from daliaug.config import load_config
from daliaug.engines.dali import canary
from daliaug.errors import BackendWarning, ConfigError
from daliaug.tools.decoders import decode_windows, windows
from tests.helpers import structured_image, write_image_dir

CRASH = (
    "import faulthandler, os, signal; faulthandler.enable(); os.kill(os.getpid(), signal.SIGSEGV)"
)
FAILURE = "import sys; sys.exit('RuntimeError: nvImageCodec INTERNAL_ERROR in decode')"


def child(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path))
    canary._gpu_window_mode.cache_clear()
    yield tmp_path
    canary._gpu_window_mode.cache_clear()


def test_a_child_killed_by_a_signal_fails_the_canary_naming_it() -> None:
    outcome = canary.run_child(child(CRASH))
    assert not outcome.passed
    assert "killed by SIGSEGV" in outcome.reason
    assert "Fatal Python error: Segmentation fault" in outcome.reason  # faulthandler's line


def test_a_child_that_errs_or_hangs_fails_the_canary() -> None:
    erred = canary.run_child(child(FAILURE))
    assert not erred.passed and "exited with code 1: RuntimeError: nvImageCodec" in erred.reason
    hung = canary.run_child(child("import time; time.sleep(30)"), timeout=0.5)
    assert not hung.passed and "hung" in hung.reason


def test_a_child_must_say_it_decoded() -> None:
    assert not canary.run_child(child("pass")).passed  # exit 0 alone proves nothing
    assert canary.run_child(child(f"print({canary.PASSED!r})")).passed


@pytest.mark.slow
def test_the_real_child_decodes_its_windows_on_dalis_cpu() -> None:
    outcome = canary.run_child(canary.child_command("cpu", 0))
    assert outcome.passed, outcome.reason


def test_the_outcome_is_cached_per_host(cache: Path) -> None:
    marker = cache / "ran"
    code = f"open({str(marker)!r}, 'a').write('x'); raise SystemExit('boom')"
    first = canary.canary(0, command=child(code))
    again = canary.canary(0, command=child(code))
    assert not first.passed and not first.cached
    assert again == canary.Canary(False, first.reason, cached=True)
    assert marker.read_text() == "x"  # the child ran once
    assert len(list((cache / "canary").glob("*.json"))) == 1
    assert canary.canary(1, command=child(f"print({canary.PASSED!r})")).passed  # another GPU


def test_auto_follows_the_canary_on_the_gpu_and_says_why_once(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = canary.Canary(False, "the window-decode canary was killed by SIGSEGV")
    monkeypatch.setattr(canary, "canary", lambda device_id: failed)
    monkeypatch.setattr(canary, "dali_gpu_count", lambda: 1)
    with pytest.warns(BackendWarning, match="whole images on GPU 0.*SIGSEGV.*nvImageCodec#55"):
        assert canary.window_mode("auto", "gpu", 0) == "whole"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert canary.window_mode("auto", "gpu", 0) == "whole"  # said once
        assert canary.window_mode("roi", "gpu", 0) == "roi"  # asked for
        assert canary.window_mode("auto", "cpu", 0) == "roi"  # no canary on the CPU
        assert canary.window_mode("whole", "cpu", 0) == "whole"


def test_auto_decodes_windows_where_the_canary_passed(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(canary, "canary", lambda device_id: canary.Canary(True, "ok"))
    monkeypatch.setattr(canary, "dali_gpu_count", lambda: 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert canary.window_mode("auto", "gpu", 0) == "roi"


def test_without_a_gpu_a_gpu_graph_keeps_its_windows_and_no_canary_runs(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defining a GPU graph where DALI sees no GPU (the graph checks) runs no child."""
    monkeypatch.setattr(canary, "canary", lambda device_id: pytest.fail("the canary ran"))
    monkeypatch.setattr(canary, "dali_gpu_count", lambda: 0)
    assert canary.window_mode("auto", "gpu", 0) == "roi"


def test_a_bad_decode_window_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="decode_window"):
        load_config({"source": {"type": "arrays"}, "image_size": 8, "decode_window": "crop"})


def test_whole_gives_the_pixels_of_roi_on_dalis_cpu(tmp_path: Path) -> None:
    sizes = [(61 + 9 * i, 83 + 5 * i) for i in range(6)]
    write_image_dir(
        tmp_path, {"a": [structured_image(h, w, i) for i, (h, w) in enumerate(sizes)]}, "jpg"
    )
    paths = sorted(str(p) for p in tmp_path.rglob("*.jpg"))
    starts, shapes = windows(np.array(sizes))
    roi, _ = decode_windows(paths, starts, shapes, "cpu", batch_size=4)
    whole, _ = decode_windows(paths, starts, shapes, "cpu", batch_size=4, decode_window="whole")
    for a, b, (w, h) in zip(roi, whole, shapes.astype(int), strict=True):
        assert a.shape == b.shape == (h, w, 3)
        np.testing.assert_array_equal(a, b)
