"""The board a report or a rewrite prices: a named one, a board of the firmware's core, or the default."""

from __future__ import annotations

from ..cost.mcu import McuProfile, get_profile

#: The board priced when neither a board nor a core is named.
DEFAULT_MCU = "stm32f746"


def board_for(mcu: str | McuProfile | None, target: str | None) -> McuProfile:
    """The board a report prices: ``mcu`` when given; else, with a ``target`` core, a board of that core
    (:data:`microinterp.cost.boards.DEFAULT_BOARD_OF_CORE`: its named profile, or a generic board at a typical
    clock); else :data:`DEFAULT_MCU`."""
    from ..cost.boards import DEFAULT_BOARD_OF_CORE
    from ..targets import get_target

    if isinstance(mcu, McuProfile):
        return mcu
    if mcu is not None:
        return get_profile(mcu)
    if target is not None:
        return get_profile(DEFAULT_BOARD_OF_CORE[get_target(target).core.name])
    return get_profile(DEFAULT_MCU)
