"""Strict config models tagged by a ``type`` field, each family with its own registry."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from daliaug.fields import STRICT


class Tagged(BaseModel):
    """An immutable config entry that rejects unknown keys and non-finite floats; concrete
    subclasses (those with a default ``type``) register themselves in their family's
    ``registry`` under that name."""

    model_config = STRICT
    registry: ClassVar[dict[str, type[Tagged]]]

    type: str

    @classmethod
    def tag(cls) -> str | None:
        """The ``type`` a concrete entry is registered under; ``None`` for a base class."""
        name = cls.model_fields["type"].default
        return name if isinstance(name, str) else None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        name = cls.tag()
        if name is not None:
            cls.registry[name] = cls
