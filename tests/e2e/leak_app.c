/* Leaks on purpose, compiled without xsprof: rank r keeps 123456*(r+1)
 * bytes allocated in region "setup" (regions through the public API found
 * at run time) and 7777 bytes in "solve"; everything else is freed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <xsprof/xsprof.h>

/* The planted leaks stay reachable from here: never freed (what xsprof must
 * report) but not lost, so LeakSanitizer builds do not flag them as the
 * test's own leaks. */
void *planted[2];

/* the large leak's allocating function: its leak candidate's stack starts
 * here (XSPROF_MEMORY_STACK_BYTES) */
__attribute__((noinline)) void *make_buffer(size_t n) {
    void *p = malloc(n); /* the large leak (e2e_memory.sh) */
    __asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
    return p;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *keep;
    {
        XSPROF_SCOPE("setup");
        for (int i = 0; i < 100; i++)
            free(malloc(1000 + (size_t)i));
        keep = make_buffer(123456 * (size_t)(rank + 1));
        planted[0] = keep;
    }
    {
        XSPROF_SCOPE("solve");
        void *lost = malloc(7777); /* the small leak (e2e_memory.sh) */
        planted[1] = lost;
        char *tmp = calloc(10, 100);
        tmp = realloc(tmp, 5000);
        free(tmp);
        if (!lost)
            return 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d keeps %s\n", rank, keep ? "a buffer" : "nothing");
    MPI_Finalize();
    return 0;
}
