/* tests/mpi/mpi_callsites_plugin.c — the library mpi_callsites dlopens,
 * calls and closes while MPI runs: its call site must still resolve. */
#include <mpi.h>

/* the build hides symbols by default: this one is looked up with dlsym */
__attribute__((visibility("default"))) void plugin_send(int peer);
void plugin_send(int peer)
{
    int v = 42;
    MPI_Send(&v, 1, MPI_INT, peer, 4, MPI_COMM_WORLD); /* SEND_PLUGIN */
}
