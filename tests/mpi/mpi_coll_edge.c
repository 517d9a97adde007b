/* tests/mpi/mpi_coll_edge.c — collectives whose byte counts and roots
 * depend on more than count x type size, built without xsprof; 4 ranks.
 *  - an intercommunicator between A = {3} and B = {2, 1, 0} (B's local
 *    ranks reversed, so a rank's local number is not its world rank):
 *    Bcast and Scatter from A's rank, Gather and Reduce to B's local rank
 *    1 (world 1): the root passes MPI_ROOT, the rest of its group
 *    MPI_PROC_NULL (they take no part), the other group the root's remote
 *    rank; Reduce_scatter(_block) over groups of different sizes (a
 *    group's send buffer is its own recvcounts' sum);
 *  - the late root: B's PROC_NULL members call the Reduce 50 ms after its
 *    root left, and A's root of the second Bcast comes 50 ms after B's
 *    PROC_NULL members left theirs: they synchronise with nobody;
 *  - neighbourhood collectives on a non-periodic 1-D Cartesian grid
 *    (MPI_PROC_NULL neighbours at the ends move nothing), blocking and
 *    nonblocking, one that rank 0 enters 50 ms late (only its neighbour
 *    waits), and on a 2x2 grid periodic in one dimension only;
 *  - MPI_Exscan: rank 0 receives nothing.
 * check_trace.py (mode "colledge") knows the bytes each rank moves. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (rank == 0)
            fprintf(stderr, "mpi_coll_edge needs 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int inA = rank == 3;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, inA, -rank, &local); /* B: world 2, 1, 0 */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inA ? 2 : 3, 7, &inter);
    int lr;
    MPI_Comm_rank(local, &lr);
    int v[8] = {rank, rank, rank, rank, rank, rank, rank, rank}, w[8] = {0}, acc = 0;
    const int broot = 1; /* B's root: local rank 1 = world 1 */
    int bside = lr == broot ? MPI_ROOT : MPI_PROC_NULL;

    /* A's rank 0 -> B: 3 ints (B's local rank 0, world 2, must not count as the root) */
    MPI_Bcast(v, 3, MPI_INT, inA ? MPI_ROOT : 0, inter);
    acc += v[0];
    /* A -> B: 2 ints each */
    int sc[6] = {1, 2, 3, 4, 5, 6};
    MPI_Scatter(sc, 2, MPI_INT, w, 2, MPI_INT, inA ? MPI_ROOT : 0, inter);
    acc += w[1];
    /* A's rank 0 -> B's world 1: 4 ints; B's others take no part (world 0
     * among them: the first member of the merged instance names no root) */
    if (inA)
        MPI_Gather(v, 4, MPI_INT, NULL, 0, MPI_INT, broot, inter);
    else
        MPI_Gather(NULL, 0, MPI_INT, w, 4, MPI_INT, bside, inter);
    if (inA) {
        MPI_Reduce(v, w, 5, MPI_INT, MPI_SUM, broot, inter);
    } else {
        if (lr != broot)
            usleep(50000); /* the root left long ago: nothing to wait for */
        MPI_Reduce(v, w, 5, MPI_INT, MPI_SUM, bside, inter);
    }
    acc += w[4];
    /* the late root: B's world 1 comes 50 ms after B's PROC_NULL members left */
    MPI_Barrier(MPI_COMM_WORLD);
    if (inA) {
        MPI_Bcast(v, 1, MPI_INT, broot, inter);
    } else {
        if (lr == broot)
            usleep(50000);
        MPI_Bcast(v, 1, MPI_INT, bside, inter);
    }
    acc += v[0];
    /* A: 1 process, recvcount 3; B: 3 processes, recvcount 1; 3 ints each way */
    MPI_Reduce_scatter_block(v, w, inA ? 3 : 1, MPI_INT, MPI_SUM, inter);
    int rc_a[1] = {3}, rc_b[3] = {1, 1, 1};
    MPI_Reduce_scatter(v, w, inA ? rc_a : rc_b, MPI_INT, MPI_SUM, inter);
    acc += w[0];

    /* 1-D non-periodic grid 0-1-2-3: the ends have one neighbour */
    int dims[2] = {4, 0}, per[2] = {0, 0};
    MPI_Comm line, grid;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &line);
    int nb[8] = {0};
    MPI_Neighbor_alltoall(v, 2, MPI_INT, nb, 2, MPI_INT, line); /* 8 bytes per neighbour */
    MPI_Neighbor_allgather(v, 3, MPI_INT, nb, 3, MPI_INT, line);  /* 12 */
    int scnt[2] = {1, 2}, rcnt[2] = {2, 1}, dsp[2] = {0, 4};
    /* 1 int down, 2 up (so 2 from below, 1 from above) */
    MPI_Neighbor_alltoallv(v, scnt, dsp, MPI_INT, nb, rcnt, dsp, MPI_INT, line);
    MPI_Request rq;
    MPI_Ineighbor_alltoall(v, 1, MPI_INT, nb, 1, MPI_INT, line, &rq); /* 4 per neighbour */
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    acc += nb[0];
    /* rank 0 comes 50 ms late: ranks 2 and 3, whose neighbours are on
     * time, need not wait for it */
    if (rank == 0)
        usleep(50000);
    MPI_Neighbor_allgather(v, 1, MPI_INT, nb, 1, MPI_INT, line); /* 4 per neighbour */
    /* 2x2, periodic in dimension 1 only: 3 neighbours each (dimension 1's
     * two are the same process, both blocks move) */
    dims[0] = dims[1] = 2;
    per[1] = 1;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &grid);
    MPI_Neighbor_alltoall(v, 1, MPI_INT, nb, 1, MPI_INT, grid);
    acc += nb[2];

    int ex = -1;
    MPI_Exscan(&rank, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0)
        acc += ex;

    printf("rank %d: acc %d\n", rank, acc);
    MPI_Comm_free(&grid);
    MPI_Comm_free(&line);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
