/* Journal recovery (io/reader.h: xsprof_journal_load) on arbitrary bytes in
 * a file: any input must give XSPROF_OK or an error with a message, never a
 * crash, a leak or an out-of-bounds access. */
#include "fuzz.h"
#include "io/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_file(data, size, ".xsj");
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    char err[512] = "";
    xsprof_status st = xsprof_journal_load(path, &d, err, sizeof err);
    if (st != XSPROF_OK && !err[0])
        abort(); /* reader.h: every error comes with a one-line message */
    if (st == XSPROF_OK)
        for (size_t i = 0; i < d.nregions; i++)
            (void)xsprof_rank_data_string(&d, d.regions[i].name);
    if (st == XSPROF_OK)
        fuzz_walk_code(&d);
    xsprof_rank_data_free(&d);
    return 0;
}
