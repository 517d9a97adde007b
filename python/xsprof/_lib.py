"""The collector library, loaded with ctypes, and its C prototypes.

Which library: a copy already in the process (linked, or LD_PRELOAD) is
used as it is; otherwise libxsprof-mpi.so when mpi4py is installed and its
MPI module not yet imported (loaded RTLD_GLOBAL, so mpi4py's MPI calls bind
to its wrappers: recorded without LD_PRELOAD), else libxsprof.so. Loaded
after mpi4py.MPI, the MPI calls cannot be caught any more: one warning.
"""
import ctypes
import importlib.util
import os
import sys
import warnings

from . import _paths

TRACE_READY = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class SummaryRow(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("calls", ctypes.c_uint64), ("total_ns", ctypes.c_int64),
                ("self_ns", ctypes.c_int64), ("max_ns", ctypes.c_int64)]


_PROTOTYPES = {
    "xsprof_status_string": (ctypes.c_char_p, [ctypes.c_int]),
    "xsprof_name_intern": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32)]),
    "xsprof_region_begin_id": (ctypes.c_int, [ctypes.c_uint32]),
    "xsprof_region_end": (ctypes.c_int, []),
    "xsprof_region_arg_int": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int64]),
    "xsprof_region_arg_double": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_double]),
    "xsprof_region_arg_string": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p]),
    "xsprof_region_arg_shape": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int]),
    "xsprof_instant": (ctypes.c_int, [ctypes.c_char_p]),
    "xsprof_counter_set": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_double]),
    "xsprof_session_start": (ctypes.c_int, []),
    "xsprof_session_stop": (ctypes.c_int, []),
    "xsprof_session_active": (ctypes.c_int, []),
    "xsprof_finalize": (ctypes.c_int, []),
    "xsprof_thread_name": (ctypes.c_int, [ctypes.c_char_p]),
    "xsprof_schedule_set": (ctypes.c_int, [ctypes.c_int] * 4 + [TRACE_READY, ctypes.c_void_p]),
    "xsprof_schedule_stop": (ctypes.c_int, []),
    "xsprof_step": (ctypes.c_int, []),
    "xsprof_run_dir": (ctypes.c_char_p, []),
    "xsprof_summary_enable": (ctypes.c_int, [ctypes.c_int]),
    "xsprof_summary_reset": (ctypes.c_int, []),
    "xsprof_summary_get": (ctypes.c_int, [ctypes.POINTER(SummaryRow), ctypes.c_size_t,
                                          ctypes.POINTER(ctypes.c_size_t)]),
    "xsprof_summary_write": (ctypes.c_int, [ctypes.c_char_p]),
    "xsprof_log_handler_set": (ctypes.c_int, [LOG_FN, ctypes.c_void_p]),
    "xsprof_log_level_set": (ctypes.c_int, [ctypes.c_int]),
    "xsprof_log_level_get": (ctypes.c_int, []),
    "xsprof_region_threshold_set": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_double]),
}


def _in_process():
    """The copy already loaded (linked or preloaded), or None."""
    try:
        here = ctypes.CDLL(None)
        here.xsprof_region_begin_id  # pylint: disable=pointless-statement
        return here
    except (AttributeError, OSError):
        return None


def _load():
    here = _in_process()
    if here is not None:
        return here, "(already loaded in the process)"
    mpi_bound = "mpi4py.MPI" in sys.modules
    names = ["libxsprof.so"]
    if mpi_bound:
        warnings.warn("xsprof was imported after mpi4py.MPI: MPI calls are not recorded (import xsprof before "
                      "`from mpi4py import MPI`, or run with LD_PRELOAD=%s)"
                      % os.path.join(_paths.LIBDIR, "libxsprof-mpi.so"), RuntimeWarning, stacklevel=4)
    elif importlib.util.find_spec("mpi4py") is not None:
        names.insert(0, "libxsprof-mpi.so")
    for name in names:
        path = os.path.join(_paths.LIBDIR, name)
        if os.path.exists(path):
            # RTLD_GLOBAL: MPI symbols bound later (mpi4py) reach the wrappers
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
    raise ImportError("xsprof: no %s in %s (build xsprof, or reinstall it)" % (" or ".join(names), _paths.LIBDIR))


lib, library_path = _load()
for _name, (_res, _args) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args
