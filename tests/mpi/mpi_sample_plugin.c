/* tests/mpi/mpi_sample_plugin.c — a library mpi_sample dlopens, burns CPU
 * in and closes again during the run: its samples must still resolve. */
__attribute__((visibility("default"))) double plugin_burn(long units); /* found by dlsym */

double plugin_burn(long units)
{
    double s = 1.0;
    for (long i = 0; i < units * 2000000; i++) /* PLUGIN_LOOP */
        s = s * 1.0000003 + 1e-9;
    return s;
}
