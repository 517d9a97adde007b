"""xsprof for Python: torch.profiler-style control of the xsprof collector
(profile, schedule, record_function, step, key_averages), marks, counters and
region arguments, then xsprof.merge() and xsprof.load() of merged.h5 into
pandas. Import it before `from mpi4py import MPI` to record MPI calls without
LD_PRELOAD. xsprof's own messages go to the logger "xsprof" (region_threshold
adds warnings). See the README, "From Python" and "Logging"."""
from ._lib import library_path
from ._log import region_threshold
from .data import Merged, load, merge
from .profiler import (EventList, FunctionEventAvg, arg, counter, key_averages, mark, profile, record_function,
                       run_dir, schedule, step)

__all__ = ["profile", "schedule", "record_function", "step", "key_averages", "mark", "counter", "arg", "run_dir",
           "merge", "load", "Merged", "EventList", "FunctionEventAvg", "library_path", "region_threshold"]
