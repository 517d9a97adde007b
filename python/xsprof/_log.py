"""xsprof's own messages (thresholds, memory, session start/stop, problems)
through Python's logging: at import, a ctypes callback becomes the library's
log handler (xsprof_log_handler_set) and forwards each message to the logger
"xsprof" as "rank R: text", the rank also in the record (record.xsprof_rank).

Which messages: the library passes all of them (XSPROF_LOG, when set, still
caps it) and the logger's level decides, as for any logger. A program that
configured no logging at all (no handler anywhere) gets the same stderr lines
as a C program, "xsprof[rank R] warning: text", at XSPROF_LOG's level. So do
the messages of the library's start (before the import) and of its end once
the interpreter exits (xsprof's finalize inside mpi4py's MPI_Finalize: the
instances above a threshold not counted yet, the last memory check).
"""
import atexit
import logging
import os
import sys

from ._lib import LOG_FN, lib

logger = logging.getLogger("xsprof")

_LEVELS = (logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG)
_TAGS = ("error", "warning", "info", "debug")


def _env_level():
    """XSPROF_LOG as the C library reads it: None when unset."""
    v = os.environ.get("XSPROF_LOG", "")
    if not v:
        return None
    for i, name in enumerate(("error", "warn", "info", "debug")):
        if v.lower() == name or v == str(i):
            return i
    return -1 if v.lower() in ("off", "none") else None


_STDERR_LEVEL = _env_level()


@LOG_FN
def _forward(level, rank, text, _user):
    level = min(max(level, 0), 3)
    msg = text.decode("utf-8", "replace") if text else ""
    if logger.hasHandlers():
        if logger.isEnabledFor(_LEVELS[level]):
            logger.log(_LEVELS[level], "rank %d: %s", rank, msg, extra={"xsprof_rank": rank})
    elif level <= (1 if _STDERR_LEVEL is None else _STDERR_LEVEL):
        sys.stderr.write("xsprof[rank %d] %s: %s\n" % (rank, _TAGS[level], msg))


def region_threshold(name, ms):
    """Warn (logger "xsprof", WARNING) for each region `name` lasting longer
    than `ms` milliseconds, at most one message per name a second (the next
    counts those left out). "*": every region without its own; ms <= 0
    removes it. The same as XSPROF_WARN_REGION_MS=name=ms."""
    st = lib.xsprof_region_threshold_set(str(name).encode(), float(ms))
    if st:
        raise ValueError("xsprof.region_threshold(%r, %r): %s" % (name, ms, lib.xsprof_status_string(st).decode()))


def _uninstall(level):
    lib.xsprof_log_handler_set(LOG_FN(), None)
    lib.xsprof_log_level_set(level)


def _install():
    level = lib.xsprof_log_level_get()
    if _STDERR_LEVEL is None:
        lib.xsprof_log_level_set(3)  # everything: the logger's level decides
    lib.xsprof_log_handler_set(_forward, None)
    # Before the interpreter goes, since later messages must not call into a
    # finalized Python: they go to stderr at XSPROF_LOG's level. mpi4py's
    # MPI_Finalize (Py_AtExit), and with it xsprof's finalize, comes later.
    atexit.register(_uninstall, level)


_install()
