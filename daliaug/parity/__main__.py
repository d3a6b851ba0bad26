"""``python -m daliaug.parity``: write the stored TensorFlow reference, or check DALI against it.

``write-reference OUT.npz`` needs TensorFlow; ``check-reference REF.npz`` needs DALI only (for
the GPU host), prints a table and writes a JSON report with ``--json``. Exit code 0 when every
comparison is within tolerance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from daliaug.device import dali_device
from daliaug.epochs import resolve_seed
from daliaug.errors import DaliaugError
from daliaug.parity.reference import check_reference, write_reference
from daliaug.parity.report import table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m daliaug.parity", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    write = sub.add_parser("write-reference", help="store TF outputs (needs TensorFlow)")
    write.add_argument("out", type=Path)
    write.add_argument("--seed", type=int, help="parameter seed (default: a fresh one)")
    check = sub.add_parser("check-reference", help="run DALI against a stored reference")
    check.add_argument("reference", type=Path)
    check.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    check.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    console = Console()
    if args.command == "write-reference":
        seed = resolve_seed(args.seed)
        path = write_reference(args.out, seed)
        console.print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB, seed {seed})")
        return 0
    try:
        report = check_reference(args.reference, dali_device(args.device))
    except DaliaugError as e:
        console.print(f"error: {e}", markup=False)
        return e.exit_code
    console.print(table(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.as_dict(), indent=2))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
