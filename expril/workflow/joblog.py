"""A job's log, set up before anything heavy is imported, so that an import error reaches it."""

import logging
import sys


def setup_logging(path):
    """Send this process's stderr and log records to the job's log file."""
    sys.stderr = open(path, "w", buffering=1)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True
    )
