/* instrument_overhead_plain.c — plain_fn: inst_fn without instrumentation. */
extern volatile int g_bench_sink;
void plain_fn(int i);
void plain_fn(int i) { g_bench_sink += i; }
