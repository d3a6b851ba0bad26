"""Check a config and print it normalized (every default filled in), or list its errors."""

from __future__ import annotations

import argparse

from daliaug.config import load_config


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config", help="pipeline config (YAML or JSON), or a shipped config's name (imagenet_train)"
    )


def run(args: argparse.Namespace) -> int:
    print(load_config(args.config).to_yaml(), end="")
    return 0
