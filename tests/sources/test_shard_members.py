"""Shard members read strictly: a member given twice, a json member without what the targets
need, keypoints that are not finite, labels that mix indices and names, a cls member that only
looks like digits, json nested past Python's recursion limit: each refuses its sample (or the
source) by name, never a silent guess or a bare traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daliaug.errors import DataError, DataWarning
from daliaug.prepare import prepare_samples
from tests.helpers import prepared
from tests.sources.test_webdataset import encode, wds_config, write_tar

IMAGE = encode(0)  # a 48x40 PNG


def rejected(tmp_path: Path, path: Path, **source: object) -> dict[str, str]:
    """The samples of ``path`` left out under ``on_error: skip``, by key."""
    config = wds_config(path, tmp_path, source={"on_error": "skip", **source})
    with pytest.warns(DataWarning, match="left out"):
        samples = prepared(config).samples
    return {key.rsplit("#", 1)[1]: why for key, why in samples.rejected.items()}


def test_a_member_given_twice_refuses_its_sample(tmp_path: Path) -> None:
    other = encode(1)
    path = write_tar(
        tmp_path / "s.tar",
        {
            "k": [("png", IMAGE[1]), ("cls", b"1"), ("png", encode(2)[1])],
            "j": [(other[0], other[1]), ("cls", b"0")],
        },
    )
    with pytest.raises(DataError) as e:
        prepare_samples(wds_config(path, tmp_path))
    assert f"{path}#k" in str(e.value) and "more than one png member" in str(e.value)
    assert "more than one png" in rejected(tmp_path, path)["k"]


def test_boxes_need_a_boxes_key(tmp_path: Path) -> None:
    """convert's own classification json (``{"label": 1}``) is no box list: refused, not
    read as an image without objects."""
    path = write_tar(
        tmp_path / "s.tar",
        {
            "a": {IMAGE[0]: IMAGE[1], "json": b'{"label": 1}'},
            "b": {IMAGE[0]: IMAGE[1], "json": json.dumps({"boxes": [], "labels": []}).encode()},
        },
    )
    why = rejected(tmp_path, path, targets="boxes")
    assert list(why) == ["a"] and "expected a mapping with a 'boxes' list" in why["a"]


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_keypoints_and_boxes_must_be_finite(tmp_path: Path, bad: str) -> None:
    points = '{"boxes": [[1, 1, 20, 20]], "labels": [0], "keypoints": [[[X, 5], [3, 4]]]}'.replace(
        "X", bad
    )
    box = '{"boxes": [[1, 1, X, 20]], "labels": [0]}'.replace("X", bad)
    fine = '{"boxes": [[1, 1, 20, 20]], "labels": [0], "keypoints": [[[2, 5], [3, 4]]]}'
    path = write_tar(
        tmp_path / "s.tar",
        {
            key: {IMAGE[0]: IMAGE[1], "json": text.encode()}
            for key, text in {"points": points, "box": box, "fine": fine}.items()
        },
    )
    why = rejected(tmp_path, path, targets="boxes")
    assert sorted(why) == ["box", "points"]
    assert f"{path}#points.json: box 0" in why["points"] and "not all finite" in why["points"]
    assert "is not finite" in why["box"]


def test_json_labels_mixing_indices_and_names_are_refused(tmp_path: Path) -> None:
    path = write_tar(
        tmp_path / "s.tar",
        {
            "one": {IMAGE[0]: IMAGE[1], "json": b'{"label": 1}'},
            "a": {IMAGE[0]: IMAGE[1], "json": b'{"label": "a"}'},
        },
    )
    source = {"label_member": "json"}
    with pytest.raises(DataError) as e:
        prepare_samples(wds_config(path, tmp_path, source=source))
    message = str(e.value)
    assert "mix class indices" in message and f"{path}#one" in message and f"{path}#a" in message
    names = prepare_samples(
        wds_config(path, tmp_path, source={**source, "class_names": ["z", "a"]})
    )
    assert names.labels.tolist() == [1, 1]  # index 1 and name "a" are the same class


@pytest.mark.parametrize("text", ["²", "٣"])  # str.isdigit, yet no ASCII number
def test_a_cls_member_that_is_no_ascii_number_is_named(tmp_path: Path, text: str) -> None:
    path = write_tar(
        tmp_path / "s.tar",
        {
            "odd": {IMAGE[0]: IMAGE[1], "cls": text.encode()},
            "ok": {IMAGE[0]: IMAGE[1], "cls": b"0"},
        },
    )
    assert "its cls member" in rejected(tmp_path, path)["odd"]


@pytest.mark.parametrize("targets", ["labels", "boxes"])
def test_json_nested_past_the_recursion_limit_is_named(tmp_path: Path, targets: str) -> None:
    deep = b'{"label": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    path = write_tar(
        tmp_path / "s.tar",
        {
            "deep": {IMAGE[0]: IMAGE[1], "json": deep},
            "ok": {IMAGE[0]: IMAGE[1], "json": b'{"label": 0, "boxes": [], "labels": []}'},
        },
    )
    why = rejected(tmp_path, path, label_member="json", targets=targets)
    assert "its json member is nested too deeply" in why["deep"]
