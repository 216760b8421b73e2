"""The fix to Snakemake's scheduler timers (expril.workflow.scheduler), with known answers."""

import threading
from types import SimpleNamespace

from snakemake.scheduling.job_scheduler import JobScheduler

from expril.workflow import scheduler


def test_one_wake_up_is_armed_however_many_passes_ask(monkeypatch):
    """100 passes ask for a wake-up: one timer is armed, it wakes the scheduler once, and the next
    pass can arm a new one. The timers wait for the test's event, not for a delay, so a busy host
    cannot fire one between passes."""
    elapse = threading.Event()
    armed = []

    class Timer(threading.Timer):
        def __init__(self, *args):
            super().__init__(*args)
            armed.append(self)

        def run(self):
            elapse.wait()
            super().run()

    monkeypatch.setattr(threading, "Timer", Timer)
    fake = SimpleNamespace(_open_jobs=threading.Semaphore(0))
    for _ in range(100):
        scheduler._schedule_once(fake, 0.0)
    assert len(armed) == 1 and armed[0].is_alive()
    elapse.set()
    armed[0].join()
    assert fake._open_jobs.acquire(blocking=False)
    assert not fake._open_jobs.acquire(blocking=False)  # woken once, not 100 times
    scheduler._schedule_once(fake, 0.0)
    assert len(armed) == 2
    armed[1].join()
    assert fake._open_jobs.acquire(blocking=False)


def test_the_snakefile_replaces_snakemakes_timer():
    """Applied (as the Snakefile does), JobScheduler arms through _schedule_once."""
    scheduler.single_wake_timer()
    assert JobScheduler._schedule_reevalutation is scheduler._schedule_once
