"""A fix to the pinned Snakemake's scheduler (9.27.1), applied by the Snakefile.

After every scheduling pass, Snakemake arms a timer that wakes the scheduler once the job rate
limit's timespan has passed (`JobScheduler._schedule_reevalutation`), and the pass that timer wakes
arms another: a chain that never ends. Every finished job wakes the scheduler too, which starts
one more chain. So a run holds one timer thread per job finished, each waking the scheduler every
timespan (snakemake issue 2967, pull request 3744), and every pass looks at every ready job. In the
tuned study (6,724 jobs) the main process held 403 threads and took a third of a core after 397
jobs, and it would take more with every job. One timer armed at a time wakes the scheduler as the
rate limit needs: a pass while it is armed arms none, and it fires within the timespan anyway."""

import threading

from snakemake.scheduling.job_scheduler import JobScheduler

_ARMING = threading.Lock()


def _schedule_once(scheduler, delay):
    """Arm the scheduler's wake-up in `delay` seconds unless one is armed already."""
    with _ARMING:
        if getattr(scheduler, "_wake_armed", False):
            return
        scheduler._wake_armed = True

    def wake():
        scheduler._wake_armed = False
        scheduler._open_jobs.release()

    threading.Timer(delay, wake).start()


def single_wake_timer():
    """Replace JobScheduler's re-evaluation timer by _schedule_once (idempotent). Refuses a
    Snakemake whose scheduler has no such method: the fix would silently not apply."""
    if not hasattr(JobScheduler, "_schedule_reevalutation"):
        raise RuntimeError(
            "expril.workflow.scheduler: this Snakemake's JobScheduler has no _schedule_reevalutation; "
            "the fix is for Snakemake 9.27.1 (requirements.lock): check whether it is still needed"
        )
    JobScheduler._schedule_reevalutation = _schedule_once
