"""Sequence stand-ins shared by the tests of input checks."""

from collections.abc import Sequence


class Untouchable(Sequence):
    """``count`` entries that must not be read (a message too long to look at): a check that
    reads any entry fails, so a refusal by length alone is proven without a timer."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        raise AssertionError(f'entry {index} read')
