"""Which Keras layers ``from_keras`` and ``split_model`` compile: containers flattened, the
augmentation a model starts with, and the Keras class each layer is converted as.

A ``Sequential`` or ``Pipeline`` counts as augmentation when it holds preprocessing layers and
nothing but them, layers of the user's own and Keras layers a stack of augmentation may hold
as well as a model (``GaussianNoise``, ``Lambda``...), which are then refused by name, never
dropped.
A model's augmentation is the chain of such layers that every use of its one input passes
through (``Input -> augment -> backbone``); a layer that augments in training elsewhere in the
model (after a layer of the user's own, or on a branch the raw input also reaches) is
``blocked``: refused by name, or left in the model.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from daliaug.keras.converters import CONVERTERS, Unsupported, label

PREPROCESSING = "keras.src.layers.preprocessing."

TRIVIAL = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__annotations__",
        "__firstlineno__",
        "__static_attributes__",
        "__orig_bases__",
        "__parameters__",
        "__init__",
        "get_config",
        "from_config",
    }
)
"""What a subclass of a Keras layer may define and still do what its base does: its name,
documentation, construction (the base's own ``__init__`` sets the attributes converters read)
and serialization."""


def is_container(layer: Any) -> bool:
    import keras

    return isinstance(layer, (keras.Sequential, keras.layers.Pipeline))


def is_preprocessing(layer: Any) -> bool:
    """Whether ``layer`` is one of Keras' preprocessing layers or a subclass of one."""
    return not is_container(layer) and any(
        cls.__module__.startswith(PREPROCESSING) for cls in type(layer).__mro__
    )


EITHER = tuple(
    f"keras.src.layers.{package}."
    for package in ("regularization", "core.lambda_layer", "core.identity", "activations")
)
"""Keras layers without weights that an augmentation stack may hold as well as a model
(``GaussianNoise``, ``Dropout``, ``Lambda``...): inside a ``Sequential`` or ``Pipeline`` of
augmentation they are refused by name; a layer with weights (or of shape, like ``Flatten``)
makes a container a model."""


def _foreign(layer: Any) -> bool:
    """A layer an augmentation container may hold, to be refused by name: the user's own (or
    another library's), or one of :data:`EITHER` (not a model, which is a backbone)."""
    import keras

    module = type(layer).__module__
    own = module.split(".")[0] != "keras"
    return not isinstance(layer, keras.Model) and (own or f"{module}.".startswith(EITHER))


def is_augmentation(layer: Any) -> bool:
    """A preprocessing layer, or a ``Sequential`` or ``Pipeline`` holding (nested or not) at
    least one and otherwise only such layers and :func:`_foreign` ones (to be refused by
    name)."""
    if not is_container(layer):
        return is_preprocessing(layer)
    inner = flatten(layer)
    return any(map(is_preprocessing, inner)) and all(
        is_preprocessing(x) or _foreign(x) for x in inner
    )


def flatten(layers: Any) -> list[Any]:
    """A ``Sequential``, a ``Pipeline``, a layer or a list of them as a flat list of layers."""
    if isinstance(layers, (list, tuple)):
        return [inner for layer in layers for inner in flatten(layer)]
    if is_container(layers):
        return flatten(list(layers.layers))
    return [layers]


def augments(layer: Any) -> bool:
    """Whether ``layer`` is a preprocessing layer that changes images in training only (a
    random one: what a model must not keep beside the pipeline's copy, nor lose silently)."""
    if not is_preprocessing(layer):
        return False
    base = _keras_base(type(layer)) or type(layer)
    entry = CONVERTERS.get(base.__name__)
    return entry is None or not (entry.deterministic or entry.at_inference)


def augmenting(layers: Any) -> Iterator[Any]:
    """The layers that augment in training among ``layers`` and inside the containers and
    models among them (not inside a preprocessing layer's own sub-layers)."""
    import keras

    for layer in layers:
        if augments(layer):
            yield layer
        elif is_container(layer) or isinstance(layer, keras.Model):
            yield from augmenting(layer.layers)


@dataclass
class Leading:
    """A model's leading augmentation (``layers``, top level: a container counts as one) and
    the first layer that augments elsewhere in the model (``blocked``: it and why)."""

    layers: list[Any]
    blocked: tuple[Any, str] | None = None


def leading(model: Any) -> Leading:
    """The leading augmentation of a ``keras.Model`` (see the module's docstring)."""
    import keras

    if isinstance(model, keras.Sequential):
        layers = [x for x in model.layers if not isinstance(x, keras.layers.InputLayer)]
        run = []
        for layer in layers:
            if not is_augmentation(layer):
                break
            run.append(layer)
        rest = layers[len(run) :]
        later = next(augmenting(rest), None)
        if later is None:
            return Leading(run)
        return Leading(run, (later, _after_stop(later, rest[0])))
    return _functional(model)


def _after_stop(layer: Any, stop: Any) -> str:
    """Why ``layer``, which augments, cannot leave a model whose augmentation ends at
    ``stop``."""
    where = (
        f"it sits in {label(stop)} among layers that are not Keras preprocessing layers"
        if any(x is layer for x in augmenting([stop]))
        else f"it comes after {label(stop)}, which is not a Keras preprocessing layer"
    )
    return (
        f"{label(layer)}: {where}, so daliaug's pipeline (which runs before the model) cannot "
        "take its place"
    )


def _functional(model: Any) -> Leading:
    """The chain from the one input along which every use of each tensor is the next layer."""
    nodes = _model_nodes(model)
    uses: dict[int, list[Any]] = {}
    for op, node in nodes:
        for tensor in {id(t): t for t in _flat(node.input_tensors)}:
            uses.setdefault(tensor, []).append(op)
    calls: dict[int, int] = {}
    for op, _ in nodes:
        calls[id(op)] = calls.get(id(op), 0) + 1
    outputs = {id(t) for t in _flat(model.outputs)}
    node_of = {id(op): node for op, node in nodes}
    tensor, run = model.inputs[0], []
    while True:
        users = uses.get(id(tensor), [])
        if id(tensor) in outputs or len(users) != 1:
            break
        (op,) = users
        node = node_of[id(op)]
        if not is_augmentation(op) or calls[id(op)] != 1 or len(_flat(node.output_tensors)) != 1:
            break
        run.append(op)
        tensor = _flat(node.output_tensors)[0]
    taken = {id(x) for x in run}
    later = next(augmenting(op for op, _ in nodes if id(op) not in taken), None)
    if later is None:
        return Leading(run)
    users = uses.get(id(tensor), [])
    if len(users) != 1 or id(tensor) in outputs:
        others = [label(op) for op in users if op is not later]
        others += ["the model's output"] * (id(tensor) in outputs)
        why = (
            f"{label(later)}: the images reach it on one path through the model, and "
            f"{' and '.join(others)} on another"
        )
    elif not is_augmentation(users[0]):
        return Leading(run, (later, _after_stop(later, users[0])))
    else:
        why = f"{label(users[0])}: the model calls it more than once"
    why += "; split_model moves only the layers every use of the input passes, each called once"
    return Leading(run, (later, why))


def _model_nodes(model: Any) -> list[tuple[Any, Any]]:
    """``(layer, node)`` for each call of a layer inside the functional ``model``."""
    from keras.src.ops.function import make_node_key

    return [
        (op, node)
        for op in model.operations
        for i, node in enumerate(op._inbound_nodes)
        if make_node_key(op, i) in model._nodes
    ]


def _flat(tensors: Any) -> list[Any]:
    import keras

    return list(keras.tree.flatten(tensors))


@functools.cache
def _keras_base(cls: type) -> type | None:
    """The first class in ``cls``'s ancestry that is one of ``keras.layers``' own."""
    import keras

    for base in cls.__mro__:
        if getattr(keras.layers, base.__name__, None) is base:
            return base
    return None


def converted_as(layer: Any) -> str:
    """The name of the Keras layer class ``layer`` is converted as: its own, or its base's for
    a subclass that provably does what its base does (it defines nothing but construction and
    serialization, nor sets methods on the instance); else :class:`Unsupported` naming it."""
    import keras

    if not isinstance(layer, keras.layers.Layer):
        raise Unsupported(f"{label(layer)}: not a Keras layer")
    cls = type(layer)
    base = _keras_base(cls) or cls
    if base is cls or base.__name__ not in CONVERTERS:
        return base.__name__
    own = cls.__mro__[: cls.__mro__.index(base)]
    defined = sorted({k for c in own for k in vars(c)} - TRIVIAL)
    wrapped = _keras_wrapped()
    defined += sorted(
        k
        for k, v in vars(layer).items()
        if callable(v) and k not in wrapped and callable(getattr(base, k, None))
    )
    if cls.__mro__[len(own) :] != base.__mro__:
        defined.append("other base classes")
    if defined:
        raise Unsupported(
            f"{label(layer)}: a subclass of {base.__name__} that defines "
            f"{', '.join(defined)}; daliaug converts a subclass as its base only where it "
            "changes nothing but construction and serialization"
        )
    return base.__name__


@functools.cache
def _keras_wrapped() -> frozenset[str]:
    """The methods Keras itself sets on every layer instance."""
    import keras

    return frozenset(k for k, v in vars(keras.layers.Layer()).items() if callable(v))
