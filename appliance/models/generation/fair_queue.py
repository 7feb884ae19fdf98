"""A bounded, first-come-first-served queue in front of a model that runs one request at a time.

`queue_size` requests may wait while `slots` run; one more is refused at once with GeneratorBusy,
and a request that waits longer than `timeout_s` is refused too. Fairness is real: a finished
request hands its slot directly to the oldest waiter (a ticket queue under one condition
variable), so no late arrival can barge in the way it can with a bare Lock.

Admission (`enter`) never blocks, so a caller learns "busy" before it starts, e.g. before an HTTP
API sends response headers; waiting (`wait`) is a separate, blocking step.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from appliance.errors import GeneratorBusy, GeneratorError

T = TypeVar("T")

WAITING, RUNNING, DONE = "waiting", "running", "done"


class Ticket:
    """One request's place in the queue."""

    __slots__ = ("entered_at", "number", "started_at", "state")

    def __init__(self, number: int, entered_at: float) -> None:
        self.number = number
        self.entered_at = entered_at
        self.started_at: float | None = None
        self.state = WAITING

    @property
    def wait_ms(self) -> float:
        """How long the request waited for its slot (0 while it still waits or never ran)."""
        return 0.0 if self.started_at is None else (self.started_at - self.entered_at) * 1000.0


class FairQueue:
    def __init__(
        self,
        queue_size: int,
        timeout_s: float,
        *,
        slots: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if queue_size < 0 or slots < 1 or timeout_s <= 0:
            raise ValueError("queue_size must be >= 0, slots >= 1 and timeout_s > 0")
        self.queue_size = queue_size
        self.timeout_s = timeout_s
        self.slots = slots
        self._clock = clock
        self._cond = threading.Condition()
        self._waiting: deque[Ticket] = deque()
        self._running = 0
        self._issued = 0

    def enter(self) -> Ticket:
        """Take a place without blocking: running at once if a slot is free, else waiting, else busy."""
        with self._cond:
            self._issued += 1
            ticket = Ticket(self._issued, self._clock())
            if self._running < self.slots and not self._waiting:
                self._start(ticket)
            elif len(self._waiting) < self.queue_size:
                self._waiting.append(ticket)
            else:
                raise GeneratorBusy(
                    f"the model is busy: {len(self._waiting)} requests are waiting (setting generator.queue_size)"
                )
            return ticket

    def wait(self, ticket: Ticket) -> float:
        """Block until the ticket runs; return the wait in ms. Refuse with GeneratorBusy after timeout_s."""
        with self._cond:
            deadline = ticket.entered_at + self.timeout_s
            while ticket.state == WAITING:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    self._waiting.remove(ticket)
                    ticket.state = DONE
                    raise GeneratorBusy(
                        f"the model is busy: waited {self.timeout_s:g} s for a free slot "
                        "(setting generator.queue_timeout_s)"
                    )
                self._cond.wait(remaining)
            if ticket.state != RUNNING:
                raise GeneratorError("the request was cancelled while it waited for the model")
            return ticket.wait_ms

    def leave(self, ticket: Ticket) -> None:
        """Give the slot (or the place in line) back; safe to call more than once."""
        with self._cond:
            if ticket.state == RUNNING:
                self._running -= 1
                if self._waiting and self._running < self.slots:
                    self._start(self._waiting.popleft())  # hand-off: the oldest waiter, never a newcomer
                self._cond.notify_all()
            elif ticket.state == WAITING:
                self._waiting.remove(ticket)
                self._cond.notify_all()  # its own waiting thread, if any, must see it is out
            ticket.state = DONE

    def cancel(self, ticket: Ticket) -> None:
        """Take a request out of the line if it is still waiting; a running one is left alone."""
        with self._cond:
            if ticket.state == WAITING:
                self.leave(ticket)

    @contextmanager
    def slot(self) -> Iterator[Ticket]:
        """enter + wait + leave, for callers that don't need the non-blocking admission step."""
        ticket = self.enter()
        try:
            self.wait(ticket)
            yield ticket
        finally:
            self.leave(ticket)

    def run(self, fn: Callable[[], T]) -> T:
        """Run `fn` in a slot (one request at a time per slot, in arrival order)."""
        with self.slot():
            return fn()

    def depth(self) -> int:
        """Requests waiting plus running, for metrics."""
        with self._cond:
            return len(self._waiting) + self._running

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def _start(self, ticket: Ticket) -> None:
        ticket.state = RUNNING
        ticket.started_at = self._clock()
        self._running += 1
