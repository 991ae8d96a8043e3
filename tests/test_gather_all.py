"""The runs of an executor end before it does: ``gather_all`` cancels the others once when
the caller is cancelled (Ctrl-C) or one run fails, and returns only once each has cleaned
up (stopped its kernel, given back its Ray worker), even when cancelled again meanwhile."""

from __future__ import annotations

import asyncio

import pytest

from junobench.verify.executor import gather_all


class Runs:
    """Runs that take a while to clean up once cancelled (each its own while), and count
    their cancellations."""

    def __init__(self) -> None:
        self.cleaned: list[int] = []
        self.cancels: dict[int, int] = {}

    async def run(self, number: int, *, fail_after: float | None = None) -> int:
        try:
            await asyncio.sleep(fail_after if fail_after is not None else 3600)
            if fail_after is not None:
                raise ValueError(f"run {number} failed")
            return number
        except asyncio.CancelledError:
            self.cancels[number] = self.cancels.get(number, 0) + 1
            try:
                await asyncio.sleep(0.1 * (number + 1))  # stopping a kernel: a second cancel cuts it short
            except asyncio.CancelledError:
                self.cancels[number] += 1
                raise
            self.cleaned.append(number)
            raise


def test_the_results_come_in_the_order_of_the_runs():
    async def late(value: str, seconds: float) -> str:
        await asyncio.sleep(seconds)
        return value

    assert asyncio.run(gather_all(late("a", 0.05), late("b", 0), late("c", 0.01))) == ["a", "b", "c"]
    assert asyncio.run(gather_all()) == []


@pytest.mark.parametrize("cancels", [1, 2])
def test_a_cancelled_caller_goes_on_only_once_every_run_has_cleaned_up(cancels):
    runs = Runs()

    async def main() -> list[int]:
        caller = asyncio.ensure_future(gather_all(*(runs.run(i) for i in range(3))))
        await asyncio.sleep(0.05)
        for _ in range(cancels):  # Ctrl-C, and again while the runs stop
            caller.cancel()
            await asyncio.sleep(0.05)
        with pytest.raises(asyncio.CancelledError):
            await caller
        return sorted(runs.cleaned)

    assert asyncio.run(main()) == [0, 1, 2]
    assert runs.cancels == {0: 1, 1: 1, 2: 1}


def test_a_failed_run_stops_the_others_before_its_error_is_raised():
    runs = Runs()

    async def main() -> None:
        with pytest.raises(ValueError, match="run 1 failed"):
            await gather_all(runs.run(0), runs.run(1, fail_after=0.05), runs.run(2))
        assert sorted(runs.cleaned) == [0, 2]

    asyncio.run(main())
    assert runs.cancels == {0: 1, 2: 1}
