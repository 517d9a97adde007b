/* XSPROF_FILTER="solve*,mpi_*,-solve_debug*" (set by the test): only
 * included names are recorded, the exclusion wins, decisions per name. */
#include <xsprof/xsprof.h>
#include "memsink.h"

int main(void) {
    memsink_install();
    const char *names[] = {"solve", "solve_inner", "solve_debug_dump", "io", "mpi_halo"};
    const size_t want[] = {10, 10, 0, 0, 10};
    for (int r = 0; r < 10; r++)
        for (int i = 0; i < 5; i++) {
            xsprof_region_begin(names[i]);
            xsprof_region_end();
        }
    CHECK(xsprof_finalize() == XSPROF_OK);
    for (int i = 0; i < 5; i++)
        CHECK(memsink_count_regions(names[i]) == want[i]);
    printf("test_filter: ok\n");
    return 0;
}
