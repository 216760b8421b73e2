"""The fix to Snakemake's scheduler timers (expril.workflow.scheduler), with known answers."""

import threading
import time
from types import SimpleNamespace

from snakemake.scheduling.job_scheduler import JobScheduler

from expril.workflow import scheduler


def test_one_wake_up_is_armed_however_many_passes_ask():
    """100 passes ask for a wake-up in 0.2 s: one timer thread is armed, the scheduler is woken
    once, and the next pass can arm a new one."""
    fake = SimpleNamespace(_open_jobs=threading.Semaphore(0))
    before = threading.active_count()
    for _ in range(100):
        scheduler._schedule_once(fake, 0.2)
    assert threading.active_count() == before + 1
    assert fake._open_jobs.acquire(timeout=5)
    time.sleep(0.3)
    assert not fake._open_jobs.acquire(blocking=False)  # woken once, not 100 times
    scheduler._schedule_once(fake, 0.01)
    assert fake._open_jobs.acquire(timeout=5)


def test_the_snakefile_replaces_snakemakes_timer():
    """Applied (as the Snakefile does), JobScheduler arms through _schedule_once."""
    scheduler.single_wake_timer()
    assert JobScheduler._schedule_reevalutation is scheduler._schedule_once
