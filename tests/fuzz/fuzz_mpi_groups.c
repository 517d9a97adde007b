/* XSPROF_MPI parser (mpi/init.c: xsprof_mpi_groups_parse). Invariants: the
 * mask only holds known groups; parsing is deterministic; "-all" anywhere
 * selects nothing and an empty spec selects everything. */
#include "fuzz.h"
#include "mpi/xsprof_mpi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    unsigned all = (1u << XSPROF_GRP_COUNT) - 1;
    unsigned a = xsprof_mpi_groups_parse(s), b = xsprof_mpi_groups_parse(s);
    if (a != b || (a & ~all))
        abort();
    if (xsprof_mpi_groups_parse("") != all)
        abort();
    free(s);
    return 0;
}
