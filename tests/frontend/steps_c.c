/* tests/frontend/steps_c.c — a training loop in C: a schedule (wait 1,
 * warmup 1, active 2, repeat 1), ProfilerStep#N regions around each step,
 * nested work, and the in-process summary written by xsprof_summary_write
 * (argv[1]) and, with XSPROF_SUMMARY=1, at exit on stderr. check_steps.py
 * checks the rank file and both tables. */
#include <stdio.h>
#include <time.h>
#include <xsprof/xsprof.h>

static int cycles;
static void ready(int cycle, void *user) {
    (void)user;
    printf("trace ready: cycle %d in %s\n", cycle, xsprof_run_dir());
    cycles++;
}

static void spin_us(long us) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

int main(int argc, char **argv) {
    if (argc != 2 || xsprof_summary_enable(1) || xsprof_schedule_set(1, 1, 2, 1, ready, NULL))
        return 1;
    for (int step = 0; step < 6; step++) {
        {
            XSPROF_SCOPE("train_step");
            {
                XSPROF_SCOPE("forward");
                spin_us(300);
            }
            spin_us(100);
        }
        xsprof_step();
    }
    if (xsprof_schedule_stop() || xsprof_summary_write(argv[1]) || cycles != 1)
        return 1;
    printf("steps_c done\n");
    return 0;
}
