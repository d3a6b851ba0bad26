"""Long runs: every bad file named wherever it fails, the full check and its cache, the skip
policy, determinism and resuming, Ctrl-C, and processes sharing the cache."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import daliaug
from daliaug.errors import DataError, DataWarning, carried_error, readable
from tests.helpers import BACKENDS, config_for, structured_image, write_image_dir

ROOT = Path(__file__).parents[1]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own (the check's results, skip lists)."""
    monkeypatch.setenv("DALIAUG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def folders(root: Path, count: int = 12) -> Path:
    """Two class folders of JPEGs (then broken by the tests)."""
    images = [structured_image(40 + i % 3, 48, seed=i) for i in range(count)]
    return write_image_dir(root, {"a": images[::2], "b": images[1::2]}, fmt="jpg")


def truncate(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def test_a_file_that_cannot_be_decoded_is_named_before_training(
    backend: str, tmp_path: Path, cache: Path
) -> None:
    bad = truncate(folders(tmp_path / "data") / "b" / "0002.jpg")
    config = config_for(tmp_path / "data", backend=backend)
    with pytest.raises(DataError, match=f"1 of 12 files cannot be used: .*{bad}") as error:
        daliaug.make_dataset(config)
    assert error.value.exit_code == 3 and "truncated" in str(error.value)


def test_skip_leaves_bad_files_out_and_lists_them(
    backend: str, tmp_path: Path, cache: Path
) -> None:
    data = folders(tmp_path / "data")
    bad = [truncate(data / "a" / "0001.jpg"), data / "b" / "0003.jpg"]
    bad[1].write_bytes(b"not an image at all")
    source = {"type": "directory", "path": str(data), "on_error": "skip"}
    config = config_for(data, source=source, backend=backend, batch_size=5)
    with pytest.warns(DataWarning, match=r"left out 2 unusable files .* 10 samples remain") as w:
        ds = daliaug.make_dataset(config)
    listed = Path(str(w[0].message).rsplit(" in ", 1)[1])
    assert sorted(line.split("\t")[0] for line in listed.read_text().splitlines()) == sorted(
        str(p) for p in bad
    )
    for _ in range(2):  # every epoch, without them
        assert sum(int(b[1].shape[0]) for b in ds) == 10


def test_segmentation_pairs_are_skipped_together(tmp_path: Path, cache: Path) -> None:
    from daliaug.tools.demo_data import write_segmentation_dataset

    root = write_segmentation_dataset(tmp_path / "seg", count=6, size=(32, 40))
    masks = sorted((root / "masks").glob("*.png"))
    truncate(masks[2])
    source = {
        "type": "segmentation",
        "images": str(root / "images"),
        "masks": str(root / "masks"),
        "num_classes": 5,
        "on_error": "skip",
    }
    with pytest.warns(DataWarning, match="5 samples remain"):
        samples = daliaug.make_dataset(config_for(root, source=source, batch_size=6))
    images, targets = next(iter(samples))
    assert images.shape[0] == targets.shape[0] == 5


def test_headers_declaring_absurd_sizes_are_named(tmp_path: Path, cache: Path) -> None:
    data = folders(tmp_path / "data")
    bomb = data / "a" / "0000.jpg"
    raw = bytearray(bomb.read_bytes())
    sof = raw.find(b"\xff\xc0")
    raw[sof + 5 : sof + 9] = b"\xff\xf0\xff\xf0"  # 65520 x 65520
    bomb.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=f"{bomb} declares 65520x65520 pixels .*268,435,456"):
        daliaug.make_dataset(config_for(data))


def test_a_file_changed_after_the_check_is_named_when_read(
    backend: str, tmp_path: Path, cache: Path
) -> None:
    data = folders(tmp_path / "data")
    ds = daliaug.make_dataset(config_for(data, backend=backend))
    changed = truncate(data / "a" / "0004.jpg")
    with pytest.raises(DataError, match=f"{changed} changed after daliaug checked it"):
        for _ in ds:
            pass
    # a stage after the dataset: TensorFlow's error, carrying daliaug's
    with pytest.raises(Exception) as error:
        for _ in ds.map(lambda *batch: batch):
            pass
    carried = carried_error(error.value)
    assert isinstance(carried, DataError) and str(changed) in str(carried)


@pytest.mark.slow
def test_check_command_lists_bad_files_and_caches(tmp_path: Path, cache: Path) -> None:
    data = folders(tmp_path / "data", count=30)
    bad = truncate(data / "b" / "0005.jpg")
    env = {**os.environ, "DALIAUG_CACHE": str(cache), "COLUMNS": "250"}

    def check() -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "daliaug.cli", "check", str(data)]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)

    first, second = check(), check()
    for result in (first, second):
        assert result.returncode == 3, result.stderr
        assert str(bad) in result.stderr and "truncated" in result.stderr
    assert "│    30 │              0 │   1 │" in first.stderr
    assert "│    30 │             30 │   1 │" in second.stderr  # the cache answered


def epoch_arrays(config: daliaug.Config, **kwargs: object) -> list[np.ndarray]:
    return [np.concatenate([b[0].numpy() for b in daliaug.make_dataset(config, **kwargs)])]


@pytest.mark.slow
def test_one_seed_gives_bitwise_identical_runs(backend: str, numbered_list: Path) -> None:
    source = {"type": "file_list", "path": str(numbered_list)}
    transforms = [
        {"type": "random_resized_crop", "scale": [0.3, 1.0]},
        {"type": "rotation", "angle": 30},
        {"type": "hue", "degrees": 20},
    ]
    config = config_for(
        numbered_list.parent, source=source, backend=backend, shuffle=True, transforms=transforms
    )

    def run() -> list[np.ndarray]:
        ds = daliaug.make_dataset(config)
        return [np.concatenate([b[0].numpy() for b in ds]) for _ in range(2)]

    first, second = run(), run()
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert not np.array_equal(first[0], first[1])


class Recorder:
    """A tiny model whose training steps record the labels of each batch they see."""

    def __init__(self) -> None:
        import keras

        seen = self.seen = []

        class Model(keras.Model):
            def train_step(self, data):
                seen.append(data[1].numpy().tolist())
                return super().train_step(data)

        inputs = keras.Input((64, 64, 3))
        x = keras.layers.GlobalAveragePooling2D()(keras.layers.Rescaling(1 / 255)(inputs))
        self.model = Model(inputs, keras.layers.Dense(23, activation="softmax")(x))
        self.model.compile("adam", "sparse_categorical_crossentropy", run_eagerly=True)


@pytest.mark.slow
@pytest.mark.parametrize("initial_epoch", [0, 2])
def test_fit_reads_the_data_epoch_of_each_keras_epoch_without_a_callback(
    backend: str, numbered_list: Path, initial_epoch: int
) -> None:
    """A plain ``fit`` reads data epochs 0, 1, 2, 3; ``make_dataset(initial_epoch=k)`` with
    ``fit(initial_epoch=k)`` reads k, k+1... (with validation data, as the demo runs it). On
    DALI too: the iterators Keras makes and never reads claim no epoch."""
    from daliaug.epoch import Epochs

    source = {"type": "file_list", "path": str(numbered_list)}
    config = config_for(
        numbered_list.parent, source=source, backend=backend, shuffle=True, batch_size=5
    )
    recorder = Recorder()
    recorder.model.fit(
        daliaug.make_dataset(config, initial_epoch=initial_epoch),
        validation_data=daliaug.make_dataset(config),
        epochs=4,
        initial_epoch=initial_epoch,
        verbose=0,
        shuffle=False,
    )
    epochs = Epochs.of(config, 23)
    expected = [b.tolist() for e in range(initial_epoch, 4) for b in epochs.batches(e)]
    assert recorder.seen == expected


@pytest.mark.slow
def test_fit_interrupted_and_resumed_sees_the_same_data(backend: str, numbered_list: Path) -> None:
    """Keras' epochs read the data epochs of their numbers (EpochSync), so a run resumed at
    epoch k with model.fit(initial_epoch=k) sees what an uninterrupted run saw from k on."""
    import keras

    from daliaug.keras import EpochSync

    source = {"type": "file_list", "path": str(numbered_list)}
    config = config_for(
        numbered_list.parent, source=source, backend=backend, shuffle=True, batch_size=5
    )

    def fit(recorder: Recorder, epochs: int = 4, initial_epoch: int = 0, crash: bool = False):
        ds = daliaug.make_dataset(config)
        callbacks = [EpochSync(ds), *([Crash(recorder)] if crash else [])]
        recorder.model.fit(
            ds,
            epochs=epochs,
            initial_epoch=initial_epoch,
            verbose=0,
            shuffle=False,
            callbacks=callbacks,
        )

    class Crash(keras.callbacks.Callback):
        def __init__(self, recorder: Recorder) -> None:
            super().__init__()
            self.recorder = recorder

        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if len(self.recorder.seen) == 12:  # in the third epoch (5 batches each)
                raise KeyboardInterrupt

    whole, first, resumed = Recorder(), Recorder(), Recorder()
    fit(whole)
    with pytest.raises(KeyboardInterrupt):
        fit(first, crash=True)
    fit(resumed, initial_epoch=2)
    epochs = [sorted(x for batch in whole.seen[i : i + 5] for x in batch) for i in range(0, 20, 5)]
    assert all(e == list(range(23)) for e in epochs)  # each epoch holds every sample once
    assert whole.seen[:5] != whole.seen[5:10]  # in a new order
    assert first.seen[:12] == whole.seen[:12]
    assert resumed.seen == whole.seen[10:]  # epochs 2 and 3, as the uninterrupted run had them


def wait_for(process: subprocess.Popen, text: str, seconds: float) -> str:
    """The process's stderr up to the first line holding ``text``."""
    assert process.stderr is not None
    seen, deadline = "", time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        seen += line
        if text in line:
            return seen
    process.kill()
    pytest.fail(f"no {text!r} within {seconds} s: {seen[-2000:]}")


def as_from_a_shell() -> None:
    """Run in a child before it starts: Ctrl-C's signal as a shell leaves it to the programs it
    starts (default, unblocked), whatever the test process's own state is (a child inherits an
    ignored or blocked SIGINT: a pytest-xdist worker after other tests was seen leaving it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def ends_after(process: subprocess.Popen, sig: int, what: str, seconds: float = 20) -> str:
    """Sends ``sig``; the rest of the process's stderr once it has ended (a failure naming
    ``what`` where it runs on ``seconds`` later)."""
    process.send_signal(sig)
    try:
        return process.communicate(timeout=seconds)[1]
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"{what} did not end within {seconds:g} s of {signal.Signals(sig).name}")


@pytest.mark.slow
def test_ctrl_c_during_the_demo_ends_it_at_once(demo_dir: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "daliaug.cli", "demo", "--data", str(demo_dir)]
    env = {**os.environ, "DALIAUG_CACHE": str(tmp_path), "TF_CPP_MIN_LOG_LEVEL": "3"}
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, preexec_fn=as_from_a_shell
    )
    wait_for(process, "pipeline alone", 300)
    start = time.monotonic()
    rest = ends_after(process, signal.SIGINT, "the demo")
    assert process.returncode == 130 and time.monotonic() - start < 10
    lines = [line for line in rest.splitlines() if line.strip()]
    assert lines[-1] == "interrupted" and "Traceback" not in rest


FIT_SCRIPT = """
import sys, daliaug, keras
config = daliaug.load_config({{"source": {{"type": "directory", "path": {data!r}}},
    "image_size": 32, "batch_size": 4, "backend": {backend!r}, "num_threads": 1}})
inputs = keras.Input((32, 32, 3))
model = keras.Model(inputs, keras.layers.Dense(4)(keras.layers.Flatten()(inputs)))
model.compile("sgd", "mse")
print("training", file=sys.stderr, flush=True)
model.fit(daliaug.make_dataset(config), epochs=10000, verbose=0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_during_model_fit_ends_the_process(demo_dir: Path, backend: str) -> None:
    """A user's script: Python's KeyboardInterrupt ends it promptly (no hang in DALI's
    threads or TensorFlow's)."""
    script = FIT_SCRIPT.format(data=str(demo_dir), backend=backend)
    command = [sys.executable, "-c", script]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_shell
    )
    try:
        wait_for(process, "training", 300)
        time.sleep(3)
        process.send_signal(signal.SIGINT)
        try:
            _, rest = process.communicate(timeout=20)
        except subprocess.TimeoutExpired as first:
            # Keras imports JAX, whose garbage-collection callback can be running when the
            # signal lands: Python then prints the KeyboardInterrupt as "Exception ignored" and
            # goes on, as for any exception in a gc callback. A user presses Ctrl-C again; so
            # does this, only then.
            swallowed = first.stderr or b""
            if not isinstance(swallowed, str):
                swallowed = swallowed.decode(errors="replace")
            assert "Exception ignored in" in swallowed, swallowed[-2000:]
            rest = ends_after(process, signal.SIGINT, "model.fit, Ctrl-C pressed again,")
    finally:
        if process.poll() is None:  # never left training for 10,000 epochs
            process.kill()
    assert process.returncode in (1, 130, -signal.SIGINT) and "KeyboardInterrupt" in rest


EXIT_SCRIPT = """
import time
import tensorflow as tf
from daliaug.outputs.tfdata.streams import counted
from daliaug.epoch import EpochClock

def slow(epoch, first):
    for i in range(100):
        time.sleep(0.5)  # a chunk being computed when the script ends
        yield i

stream = counted(slow, tf.TensorSpec((), tf.int64), EpochClock())
iterator = iter(stream.prefetch(4))
print(next(iterator).numpy(), flush=True)
time.sleep(0.7)  # the prefetching thread is inside a call now
"""


@pytest.mark.slow
def test_a_script_ending_while_a_stream_is_read_exits(tmp_path: Path) -> None:
    """A script that ends while its dataset's stream is inside a Python call (an iterator left
    half read) exits: the streams end at interpreter exit, before the iterator is destroyed
    (without that, the teardown holds the GIL the call waits for, and the process hangs)."""
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "0" and time.monotonic() - started < 60


CACHE_JOB = """
import sys
from pathlib import Path
from daliaug.sources.tfrecord import TFRecordSource
from daliaug.tools.demo_sources import demo_sources
from daliaug.sources.checks import check_files
from daliaug.engines.dali.verify import undecodable
train, _ = demo_sources(TFRecordSource(path="unused"))
records = train.samples()
images = sorted(str(p) for p in Path(sys.argv[1]).rglob("*.jpg"))
result = check_files(images, "dali-cpu", lambda paths: undecodable(paths, "cpu"))
print(len(records), result.files, len(result.bad))
"""


@pytest.mark.slow
def test_two_processes_filling_the_cache_at_once(demo_dir: Path, tmp_path: Path) -> None:
    """Demo data, TFRecords and their index files, the check's results: made by two processes
    at the same time, each sees them whole."""
    env = {**os.environ, "DALIAUG_CACHE": str(tmp_path / "shared"), "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [sys.executable, "-c", CACHE_JOB, str(demo_dir)]
    processes = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err[-3000:]
        records, files, bad = map(int, out.split())
        assert records == 800 and files == len(list(demo_dir.rglob("*.jpg"))) and bad == 0
    leftovers = [p for p in (tmp_path / "shared").rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers


def test_check_results_are_stored_by_path_size_and_time(tmp_path: Path, cache: Path) -> None:
    from daliaug.sources.checks import check_files

    data = folders(tmp_path / "data", count=4)
    files = sorted(str(p) for p in data.rglob("*.jpg"))
    calls = []

    def decode(paths: list[str]):
        calls.append(list(paths))
        return iter(())

    assert check_files(files, "test", decode).cached == 0
    assert check_files(files, "test", decode).cached == 4 and len(calls) == 1
    os.utime(files[0], ns=(1, 1))
    result = check_files(files, "test", decode)
    assert result.cached == 3 and calls[-1] == [files[0]]


# ---------------------------------------------------------------- adversarial inputs (issue 26)

REFUSED = """
import json, sys
import numpy as np
import daliaug
base = {"source": {"type": "arrays"}, "image_size": 8, "batch_size": 2}
for fields in json.loads(sys.argv[1]):
    print("trying", json.dumps(fields), file=sys.stderr, flush=True)
    try:
        x, y = np.zeros((4, 8, 8, 3), np.uint8), np.zeros(4, int)
        next(iter(daliaug.make_dataset({**base, **fields}, x=x, y=y)))
        print(json.dumps(None), flush=True)
    except daliaug.ConfigError as e:
        print(json.dumps(str(e)), flush=True)
"""
CRASHED_THE_ENGINES = [
    ({"image_size": 1e30, "backend": "cpu"}, "image_size"),  # was SIGSEGV in DALI's plugin
    ({"num_threads": 1_000_000, "backend": "cpu"}, "num_threads"),  # was SIGABRT
    ({"num_threads": 1_000_000, "backend": "tf"}, "num_threads"),  # was SIGSEGV
    ({"batch_size": 10**9, "backend": "cpu"}, "batch_size"),  # was DALI's "Critical error"
    ({"seed": 1e23, "backend": "tf"}, "seed"),  # failed on one engine only
    ({"seed": -1, "backend": "cpu"}, "seed"),  # failed at the first batch
]


@pytest.mark.slow
def test_sizes_and_counts_that_crashed_the_engines_are_refused() -> None:
    """All in one process of their own, in turn, under a time limit: a signal death or a hang
    fails the test (naming the case it was trying) instead of ending the run."""
    import json

    cases = json.dumps([fields for fields, _ in CRASHED_THE_ENGINES])
    result = subprocess.run(
        [sys.executable, "-c", REFUSED, cases],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    errors = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(errors) == len(CRASHED_THE_ENGINES), result.stderr[-2000:]
    for (fields, named), error in zip(CRASHED_THE_ENGINES, errors, strict=True):
        assert error is not None and f"  {named}: " in error, (fields, error)


def test_the_memory_a_batch_needs_is_weighed_before_building(monkeypatch) -> None:
    """Refused with the numbers before anything is built (it used to fail at the first batch
    with an unnamed out-of-memory error or DALI's "Critical error")."""
    from daliaug import memory
    from daliaug.sources.arrays import array_samples

    assert memory.available_bytes() > 0  # read from /proc/meminfo (and a cgroup's limit)
    config = daliaug.load_config(
        {"source": {"type": "arrays"}, "image_size": 4096, "batch_size": 64, "prefetch": 3}
    )
    x, y = np.zeros((64, 8, 8, 3), np.uint8), np.zeros(64, int)
    per_sample = 8 * 8 * 3 + 4096 * 4096 * 3 * (4 + 4) + 4  # decoded, float32 warp and output
    assert memory.sample_bytes(config, array_samples(x, y)) == per_sample
    monkeypatch.setattr(memory, "available_bytes", lambda: 2**30)
    with pytest.raises(daliaug.ConfigError) as error:
        daliaug.make_dataset(config, x=x, y=y)
    assert (
        f"4 batches (prefetch 3 + 1) of 64 samples of {per_sample / 2**20:,.1f} MiB each "
        "(4096x4096x3 output float32, decoded images and float32 work copies) need 96.0 GiB; "
        "this machine has 1.0 GiB free"
    ) in str(error.value)


def odd_names(root: Path) -> dict[str, Path]:
    """Class folders holding what broke the listing, the check and its printing: a file name
    that is not UTF-8, names with rich markup, links up and to itself, a bad file with a long
    name, a file of another type."""
    data = folders(root, count=6)
    odd = os.fsdecode(b"\xff\xfe-not-utf8.jpg")
    shutil.copy(data / "a" / "0000.jpg", data / "a" / odd)
    markup = data / "b" / "[" / "x]"  # b/[/x]/
    markup.mkdir(parents=True)
    shutil.copy(data / "b" / "0000.jpg", markup / "[bold]kept.jpg")
    long = b"-a-long-name-that-a-terminal-table-would-cut" * 2
    bad = markup / os.fsdecode(b"[bold]\xff" + long + b".jpg")
    bad.write_bytes(b"\xff\xd8\xff not really a JPEG")
    (data / "a" / "up").symlink_to("..")
    (data / "a" / "loop").symlink_to(".")
    (data / "b" / "notes.bmp").write_bytes(b"BM")
    return {"data": data, "odd": data / "a" / odd, "bad": bad}


ODD = """
import sys, warnings
import daliaug
from daliaug.cli import main
warnings.simplefilter("ignore")
for backend in ("cpu", "tf"):
    source = {"type": "directory", "path": sys.argv[1], "on_error": "skip"}
    config = {"source": source, "image_size": 8, "batch_size": 3, "backend": backend}
    labels = sorted(int(v) for _, y in daliaug.make_dataset(config) for v in y)
    print(backend, labels, flush=True)
sys.exit(main(["check", sys.argv[1]]))
"""


@pytest.mark.slow
def test_odd_file_names_train_once_each_and_are_named_whole(tmp_path: Path, cache: Path) -> None:
    """Both engines read every image once, with its class's label, the non-UTF-8 name too;
    the check names the bad file readably and whole (not cut at 80 columns, no markup error),
    and the files and links it leaves out."""
    made = odd_names(tmp_path / "odd")
    env = {**os.environ, "DALIAUG_CACHE": str(cache), "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("COLUMNS", None)
    command = [sys.executable, "-c", ODD, str(made["data"])]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 3, f"exit {result.returncode}: {result.stderr[-3000:]}"
    labels = [0] * 4 + [1] * 4  # 3 + 1 in a (not UTF-8), 3 + 1 in b (markup), nothing twice
    assert result.stdout.splitlines() == [f"cpu {labels}", f"tf {labels}"]
    err = result.stderr
    assert "Traceback" not in err and "MarkupError" not in err
    shown = readable(str(made["bad"]))
    whole = f"{shown}: {shown} has a broken JPEG header"
    assert any(line.startswith(whole) for line in err.splitlines()), err
    assert f"{made['data'] / 'b' / 'notes.bmp'}: not a .jpg/.jpeg/.png file" in err
    assert f"{made['data'] / 'a' / 'up'}: a link to {made['data']}, inside the tree" in err
    listed = Path(err.rsplit("are listed in ", 1)[1].split()[0])
    assert listed.read_text().startswith(shown + "\t")


TERM = """
import sys, time
from pathlib import Path
import daliaug.cli.validate
from daliaug.cache import build_folder_atomically
from daliaug.cli import main

def build(tmp):
    (tmp / "half").write_text("written")
    print("building", file=sys.stderr, flush=True)
    time.sleep(120)

daliaug.cli.validate.run = lambda args: build_folder_atomically(Path(sys.argv[1]), build)
sys.exit(main(["validate", "unused"]))
"""


def test_sigterm_ends_a_command_like_ctrl_c(tmp_path: Path) -> None:
    """One line, exit code 143, and the cache as it was: the folder being built is gone."""
    command = [sys.executable, "-c", TERM, str(tmp_path / "cache" / "built")]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    wait_for(process, "building", 60)
    rest = ends_after(process, signal.SIGTERM, "the command")
    assert process.returncode == 143 and rest.strip() == "terminated"
    assert list((tmp_path / "cache").iterdir()) == []


WRITE = """
import sys
from pathlib import Path
from daliaug.tools.demo_data import write_classification_dataset
write_classification_dataset(Path(sys.argv[1]), per_class=2000, size=(64, 64))
"""


@pytest.mark.slow
def test_the_demo_data_a_killed_process_left_half_written_is_removed(tmp_path: Path) -> None:
    """``kill -9`` while the demo data is written leaves its temporary folder; the next run
    removes it (a running writer's stays)."""
    from daliaug.tools.demo_data import write_classification_dataset

    root = tmp_path / "train"
    process = subprocess.Popen([sys.executable, "-c", WRITE, str(root)], cwd=ROOT)
    left = tmp_path / f".train.tmp-{process.pid}"
    deadline = time.monotonic() + 120
    while not (left.is_dir() and len(list(left.rglob("*.*"))) > 20):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    process.kill()
    process.wait()
    running = tmp_path / f".train.tmp-{os.getpid()}-other"  # not a PID: kept
    running.mkdir()
    write_classification_dataset(root, per_class=1, size=(8, 8))
    assert sorted(p.name for p in tmp_path.iterdir()) == [running.name, "train"]
