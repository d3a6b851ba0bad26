"""Parity results: one row per comparison, a table for the terminal and a dict for JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rich.table import Table
from rich.text import Text

from daliaug.parity.measure import (
    MAX_DECODE_MEAN_ERROR,
    MAX_MEAN_ERROR,
    MAX_SHARE_OVER,
    OVER,
    Stats,
)

Kind = Literal["transform", "pipeline", "output", "decoder", "masks"]


@dataclass(frozen=True)
class Result:
    """One row of a parity report."""

    name: str
    kind: Kind
    stats: Stats

    @property
    def passed(self) -> bool:
        return self.stats.within(self.kind)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, **self.stats.as_dict(), "passed": self.passed}


@dataclass(frozen=True)
class Report:
    """A parity run: which backends were compared, with which seed, and the results."""

    backends: str
    seed: int
    results: list[Result] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Comparisons not made, each with the reason (an operation only one engine has)."""
    errors: dict[str, str] = field(default_factory=dict)
    """Comparisons whose engine raised, each with its error: failed, and named, so that one
    broken case hides none of the others."""

    @property
    def passed(self) -> bool:
        return not self.errors and all(r.passed for r in self.results)

    def as_dict(self) -> dict[str, Any]:
        return {
            "backends": self.backends,
            "seed": self.seed,
            "passed": self.passed,
            "results": [r.as_dict() for r in self.results],
            "skipped": self.skipped,
            "errors": self.errors,
        }


def table(report: Report) -> Table:
    """The report as a table: one row per comparison, the tolerances in the caption."""
    out = Table(title=f"parity: {report.backends} (seed {report.seed})")
    for column in ("comparison", "max |diff|", "mean |diff|", f"share > {OVER}", "result"):
        out.add_column(column, justify="left" if column == "comparison" else "right")
    for r in report.results:
        verdict = Text("ok", "green") if r.passed else Text("FAIL", "bold red")
        s = r.stats
        out.add_row(
            r.name, f"{s.max_error:.0f}", f"{s.mean_error:.4f}", f"{s.share_over:.3%}", verdict
        )
    for name, error in report.errors.items():
        out.add_row(name, "-", "-", "-", Text(f"FAIL: {error}", "bold red"))
    for name, reason in report.skipped.items():
        out.add_row(name, "-", "-", "-", Text(f"not compared: {reason}", "yellow"))
    out.caption = (
        f"uint8 scale; tolerance: mean <= {MAX_MEAN_ERROR} and share > {OVER} <= "
        f"{MAX_SHARE_OVER:.1%} (decoders: mean <= {MAX_DECODE_MEAN_ERROR}; masks: at most "
        f"{MAX_SHARE_OVER:.1%} of class indices differ); "
        "a 1-pixel band along each source border is not compared"
    )
    return out
