"""torch.profiler-style control over the collector: profile, schedule,
record_function, step, key_averages; marks, counters and arguments."""
import ctypes
import functools
import threading

from ._lib import TRACE_READY, SummaryRow, lib

_ids = {}  # name -> interned id (interning hashes the name: once per name)
_tls = threading.local()
_shapes = [True]  # record_function(args=...) records shapes (off inside profile(record_shapes=False))
_begin, _end = lib.xsprof_region_begin_id, lib.xsprof_region_end


def _id(name):
    i = _ids.get(name)
    if i is None:
        v = ctypes.c_uint32()
        st = lib.xsprof_name_intern(name.encode(), ctypes.byref(v))
        if st:
            raise ValueError("xsprof: region name %r refused: %s" % (name, lib.xsprof_status_string(st).decode()))
        i = _ids[name] = v.value
    return i


def _name_thread():
    """A Python thread's track is named after the thread, at its first region."""
    _tls.named = True
    lib.xsprof_thread_name(threading.current_thread().name.encode())


def arg(key, value):
    """An argument of the innermost open region: int, float, str, or a shape
    (any object with .shape, or a list/tuple of ints)."""
    k = key.encode()
    shape = getattr(value, "shape", None)
    if shape is not None or (isinstance(value, (list, tuple)) and all(isinstance(d, int) for d in value)):
        dims = [int(d) for d in (shape if shape is not None else value)]
        return lib.xsprof_region_arg_shape(k, (ctypes.c_int64 * max(len(dims), 1))(*dims), len(dims))
    if isinstance(value, (bool, int)):
        return lib.xsprof_region_arg_int(k, int(value))
    if isinstance(value, float):
        return lib.xsprof_region_arg_double(k, value)
    return lib.xsprof_region_arg_string(k, str(value).encode())


class record_function:  # pylint: disable=invalid-name
    """A region around a block (`with`) or every call of a function (decorator).
    An exception leaving the block ends the region and goes on."""
    __slots__ = ("name", "args", "_id")

    def __init__(self, name, args=None):
        self.name, self.args, self._id = name, args, _id(name)

    def __enter__(self):
        if not hasattr(_tls, "named"):
            _name_thread()
        _begin(self._id)
        if self.args:
            for k, v in self.args.items():
                if _shapes[0] or not hasattr(v, "shape"):
                    arg(k, v)
        return self

    def __exit__(self, exc_type, exc, tb):
        _end()
        return False

    def __call__(self, fn):
        name = self.name

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with record_function(name):
                return fn(*a, **kw)
        return wrapper


def mark(name):
    """An instant on the calling thread."""
    return lib.xsprof_instant(name.encode())


def counter(name, value):
    """A counter sample (a track of its own in the trace)."""
    return lib.xsprof_counter_set(name.encode(), float(value))


def step():
    """End step N (region ProfilerStep#N) and begin the next; advances the schedule."""
    return lib.xsprof_step()


class schedule:  # pylint: disable=invalid-name,too-few-public-methods
    """wait steps off, warmup steps off, active steps recorded; repeat times (0: forever)."""

    def __init__(self, wait=0, warmup=0, active=1, repeat=0):
        if wait < 0 or warmup < 0 or active < 1 or repeat < 0:
            raise ValueError("xsprof.schedule: wait, warmup, repeat >= 0 and active >= 1")
        self.wait, self.warmup, self.active, self.repeat = wait, warmup, active, repeat

    def __repr__(self):
        return "schedule(wait=%d, warmup=%d, active=%d, repeat=%d)" % (self.wait, self.warmup, self.active,
                                                                       self.repeat)


class FunctionEventAvg:  # pylint: disable=too-few-public-methods
    """One row of key_averages(): times in microseconds, as torch.profiler."""
    __slots__ = ("key", "count", "cpu_time_total", "self_cpu_time_total", "cpu_time", "cpu_time_max")

    def __init__(self, r):
        self.key = r.name.decode("utf-8", "replace")
        self.count = int(r.calls)
        self.cpu_time_total = r.total_ns / 1e3
        self.self_cpu_time_total = r.self_ns / 1e3
        self.cpu_time = self.cpu_time_total / self.count
        self.cpu_time_max = r.max_ns / 1e3

    def __repr__(self):
        return "<%s count=%d total=%.1fus self=%.1fus>" % (self.key, self.count, self.cpu_time_total,
                                                         self.self_cpu_time_total)


class EventList(list):
    """key_averages() rows, sortable by any FunctionEventAvg attribute."""

    def sort_by(self, key="cpu_time_total", descending=True):
        return EventList(sorted(self, key=lambda e: getattr(e, key), reverse=descending))

    def table(self, sort_by="cpu_time_total", row_limit=20):
        rows = self.sort_by(sort_by) if sort_by else self
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        w = max([len("Name")] + [len(e.key) for e in rows])
        head = "%-*s %10s %14s %14s %12s %12s" % (w, "Name", "Calls", "Total (us)", "Self (us)", "Mean (us)",
                                                  "Max (us)")
        lines = [head, "-" * len(head)]
        lines += ["%-*s %10d %14.1f %14.1f %12.2f %12.2f" % (w, e.key, e.count, e.cpu_time_total,
                                                             e.self_cpu_time_total, e.cpu_time, e.cpu_time_max)
                  for e in rows]
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def key_averages():
    """This process's summary since the profile began: calls, total, self, mean, max per region name."""
    n = ctypes.c_size_t()
    lib.xsprof_summary_get(None, 0, ctypes.byref(n))
    rows = (SummaryRow * max(n.value, 1))()
    lib.xsprof_summary_get(rows, n.value, ctypes.byref(n))
    return EventList(FunctionEventAvg(rows[i]) for i in range(min(n.value, len(rows))))


def run_dir():
    """The directory this process writes its rank file into (XSPROF_OUTPUT)."""
    return lib.xsprof_run_dir().decode()


class profile:  # pylint: disable=invalid-name
    """with profile(schedule=schedule(wait=1, warmup=1, active=3, repeat=2),
    on_trace_ready=fn, record_shapes=True) as prof: ... prof.step()

    Without a schedule every step is recorded. on_trace_ready(prof) runs when
    an active window closes, with prof.cycle (0, 1, ...) and prof.run_dir
    (where the cycle's data is: xsprof.merge(prof.run_dir, out) after the
    run). Regions are recorded when the profile is on; the summary behind
    key_averages() covers the recorded ones since __enter__. record_shapes:
    whether record_function(args=...) records the shapes of objects with
    .shape."""

    def __init__(self, schedule=None, on_trace_ready=None, record_shapes=False):  # pylint: disable=redefined-outer-name
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.step_num = 0
        self.cycle = -1
        self._cb = TRACE_READY(self._ready)  # kept alive while the C side may call it

    def _ready(self, cycle, _user):
        self.cycle = cycle
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    @property
    def run_dir(self):
        return run_dir()

    def start(self):
        s = self.schedule or schedule(active=1_000_000_000, repeat=1)
        lib.xsprof_summary_reset()
        lib.xsprof_summary_enable(1)
        _shapes[0] = bool(self.record_shapes)
        if not hasattr(_tls, "named"):
            _name_thread()
        st = lib.xsprof_schedule_set(s.wait, s.warmup, s.active, s.repeat, self._cb, None)
        if st:
            raise ValueError("xsprof.profile: %s: %s" % (s, lib.xsprof_status_string(st).decode()))
        lib.xsprof_session_start()
        return self

    def step(self):
        self.step_num += 1
        lib.xsprof_step()

    def stop(self):
        lib.xsprof_schedule_stop()
        lib.xsprof_summary_enable(0)
        _shapes[0] = True

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    @staticmethod
    def key_averages():
        return key_averages()
