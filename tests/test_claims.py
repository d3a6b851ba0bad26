"""The GPU claims of README.md and bench/README.md are the records' (``bench/claims.py``):
each claim block is what the script writes from the committed GPU records, and no GPU figure
(images/s, a ratio, a percentage) stands outside the blocks unless a GPU record holds it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import claims

ROOT = Path(__file__).parents[1]
GPU = re.compile(r"\bGPUs?\b|H[12]00|nvJPEG|DALI-GPU|gpu_suite|NVML|hardware decoder", re.I)
"""Words that make a sentence a GPU claim..."""
NEGATED = re.compile(r"\b(?:without|no|not on|never on) (?:a |any |the )?(?:CUDA )?GPUs?\b", re.I)
"""... unless they say there was none (a CPU figure "measured without a GPU")."""
CLAIM = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)(?:\s*(?:images/s|img/s)|x\b|\s?%)")
"""A figure as the READMEs write a rate, a ratio or a percentage."""
SENTENCE = re.compile(r"(?<=[.:])\s+(?=[A-Z(*`])|;\s|\n\s*\n|\n(?=\s*[-|])")
"""Where one claim's context ends: a sentence, a paragraph, a list item or a table row."""


@pytest.mark.parametrize("path", claims.FILES)
def test_each_claim_block_is_what_the_script_writes(path: str) -> None:
    text = (ROOT / path).read_text()
    assert claims.rendered(path, text) == text, f"run python -m bench.claims ({path})"


def unrecorded(text: str, held: set[str]) -> list[str]:
    """The GPU figures of ``text`` outside its claim blocks that no record holds, each with
    its sentence."""
    found = []
    for sentence in SENTENCE.split(claims.outside_blocks(text)):
        if not GPU.search(NEGATED.sub("", sentence)):
            continue
        for figure in CLAIM.findall(sentence):
            if figure not in held and figure.replace(",", "") not in held:
                found.append(f"{figure}: {' '.join(sentence.split())[:160]}")
    return found


@pytest.mark.parametrize("path", claims.FILES)
def test_no_gpu_figure_stands_outside_the_records(path: str) -> None:
    held = claims.record_figures()
    assert not unrecorded((ROOT / path).read_text(), held)


def test_an_invented_gpu_figure_is_found() -> None:
    held = claims.record_figures()
    assert "13,301" in held and "0.68" in held and "8.5" in held
    assert unrecorded("On the H200 the loader ran at 99,999 images/s, 1.47x DALI's.", held) == [
        "99,999: On the H200 the loader ran at 99,999 images/s, 1.47x DALI's.",
        "1.47: On the H200 the loader ran at 99,999 images/s, 1.47x DALI's.",
    ]
    assert not unrecorded("On the CPU VM it ran at 99,999 images/s.", held)
