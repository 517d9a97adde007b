/* instrument_overhead_fns.c — the measured functions of instrument_overhead:
 * inst_fn in a file compiled with -finstrument-functions (the entry and
 * exit hooks become an xsprof region), plain_fn the same without. */
volatile int g_bench_sink;
void inst_fn(int i);
void inst_fn(int i) { g_bench_sink += i; }
