"""A dict that refuses to change, so a MemoryItem's metadata cannot drift."""

from __future__ import annotations

from typing import Any, NoReturn


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError("MemoryItem.metadata is frozen; build a new item with dataclasses.replace")


class FrozenDict(dict[str, Any]):
    """Still a ``dict`` for every reader; every mutator raises ``TypeError``."""

    __slots__ = ()

    __setitem__ = _refuse
    __delitem__ = _refuse
    update = _refuse
    pop = _refuse
    popitem = _refuse
    clear = _refuse
    setdefault = _refuse
    __ior__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        # dict's default pickling replays __setitem__, which we refuse.
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        import copy

        return FrozenDict({k: copy.deepcopy(v, memo) for k, v in self.items()})
