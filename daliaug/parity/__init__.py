"""Parity between the DALI pipeline (or the OpenCV engine) and the TensorFlow backend.

Both backends run the same configs on the same images with the same explicit per-sample
parameters (drawn here with NumPy); the harness reports, per transform, for the whole pipeline,
for the output stage and for the JPEG decoders alone, the maximum and mean absolute difference
and the share of values more than 2 apart on the 0..255 scale. ``daliaug parity CONFIG`` runs
it from the command line; ``python -m daliaug.parity`` writes and checks the stored TensorFlow
reference used on hosts without TensorFlow.

Importing this package imports neither TensorFlow nor DALI: the comparison against a stored
reference (:func:`check_reference`) needs DALI only, and only :func:`run_parity` and
:func:`write_reference` need TensorFlow.
"""

from __future__ import annotations

from daliaug.parity.harness import run_parity
from daliaug.parity.inputs import ParityInputs, builtin_inputs, user_inputs
from daliaug.parity.measure import Stats, border_band, inside_source, seeded_rows
from daliaug.parity.reference import check_reference, write_reference
from daliaug.parity.report import Report, Result, table

__all__ = [
    "ParityInputs",
    "Report",
    "Result",
    "Stats",
    "border_band",
    "builtin_inputs",
    "check_reference",
    "inside_source",
    "run_parity",
    "seeded_rows",
    "table",
    "user_inputs",
    "write_reference",
]
