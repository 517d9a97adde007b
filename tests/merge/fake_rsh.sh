#!/bin/sh
# tests/merge/fake_rsh.sh HOST COMMAND... — Open MPI's rsh launch agent for
# tests that need several nodes on one machine: `mpirun --mca plm_rsh_agent
# fake_rsh.sh --host nodeA:2,nodeB:2` starts each node's daemon here instead
# of over ssh. Open MPI then treats the hosts as separate nodes: their
# processes are not in one MPI_COMM_TYPE_SHARED communicator and talk over
# TCP. Each node gets its own directory for its session files and for the
# shared-memory transport's
# segments, which Open MPI names by the real hostname: two "nodes" here
# would otherwise open each other's. The daemon does not share its hwloc
# topology in memory (rtc_hwloc_vmhole=none): writing it crashed one
# daemon in ten here when two ran on one machine; nor does PMIx keep its
# job data in shared memory (gds=hash), whose store failed a start now and
# then (the test starts again when a daemon failed all the same).
host=$1
shift
dir=${TMPDIR:-/tmp}/xsprof-fake-node-$host-$(id -u)
mkdir -p "$dir" || exit 1
# mpirun passes its own session base on the daemon's command line (ctest
# sets one per test): both daemons then made the same directory, and one
# failed ("File exists") when they raced
cmd=$(printf '%s' "$*" | sed "s|-mca orte_tmpdir_base \"[^\"]*\"|-mca orte_tmpdir_base \"$dir\"|")
exec env OMPI_MCA_rtc_hwloc_vmhole=none PMIX_MCA_gds=hash TMPDIR="$dir" OMPI_MCA_orte_tmpdir_base="$dir" \
    OMPI_MCA_btl_vader_backing_directory="$dir" sh -c "$cmd"
