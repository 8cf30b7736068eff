/* The transport of a run spread over MPI processes (sim/par.h, FabParNet):
** `mpirun -np N fabsim run X.yaml`. Built only when Meson finds MPI (the
** `mpi` option); without it, fab_mpi_start says so. */
#include "mpi_net.h"

#ifdef FAB_HAVE_MPI
#include <mpi.h>
#include <string.h>

static int *counts(uint32_t n) { return g_new0(int, 4 * (size_t)n); } /* send counts, displs, recv counts, displs */

static void fail_big(size_t len) {
  if (len > (size_t)INT32_MAX) g_error("fabsim: an MPI message of %zu bytes is over MPI's 2 GiB count", len);
}

/* A window's messages: one to every other process (empty ones too), sent
** point to point; each received at its size (MPI_Probe): no exchange of
** sizes first, one message per pair per window. */
#define TAG_WINDOW 7

static void ex_exchange(void *ctx, GByteArray *const *out, GByteArray *const *in) {
  (void)ctx;
  int n, me;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Request *req = g_newa(MPI_Request, n);
  int nreq = 0;
  for (int k = 0; k < n; k++) {
    if (k == me) continue;
    fail_big(out[k]->len);
    MPI_Isend(out[k]->data, (int)out[k]->len, MPI_BYTE, k, TAG_WINDOW, MPI_COMM_WORLD, &req[nreq++]);
  }
  for (int k = 0; k < n; k++) {
    g_byte_array_set_size(in[k], 0);
    if (k == me) continue;
    MPI_Status st;
    int len;
    MPI_Probe(k, TAG_WINDOW, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &len);
    g_byte_array_set_size(in[k], (guint)len);
    MPI_Recv(in[k]->data, len, MPI_BYTE, k, TAG_WINDOW, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
}

static void ex_allgather(void *ctx, const GByteArray *mine, GByteArray *const *all) {
  (void)ctx;
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int *c = counts((uint32_t)n), *rc = c, *rd = c + n;
  fail_big(mine->len);
  int len = (int)mine->len;
  MPI_Allgather(&len, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
  size_t total = 0;
  for (int k = 0; k < n; k++) {
    rd[k] = (int)total;
    total += (size_t)rc[k];
  }
  fail_big(total);
  guint8 *recv = g_malloc(total ? total : 1);
  MPI_Allgatherv(mine->data, len, MPI_BYTE, recv, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
  for (int k = 0; k < n; k++) {
    g_byte_array_set_size(all[k], 0);
    g_byte_array_append(all[k], recv + rd[k], (guint)rc[k]);
  }
  g_free(recv);
  g_free(c);
}

static void ex_gather(void *ctx, const GByteArray *mine, GByteArray *const *all) {
  (void)ctx;
  int n, me;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int *c = counts((uint32_t)n), *rc = c, *rd = c + n;
  fail_big(mine->len);
  int len = (int)mine->len;
  MPI_Gather(&len, 1, MPI_INT, rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  size_t total = 0;
  for (int k = 0; me == 0 && k < n; k++) {
    rd[k] = (int)total;
    total += (size_t)rc[k];
  }
  fail_big(total);
  guint8 *recv = me == 0 ? g_malloc(total ? total : 1) : NULL;
  MPI_Gatherv(mine->data, len, MPI_BYTE, recv, rc, rd, MPI_BYTE, 0, MPI_COMM_WORLD);
  for (int k = 0; me == 0 && k < n; k++) {
    g_byte_array_set_size(all[k], 0);
    g_byte_array_append(all[k], recv + rd[k], (guint)rc[k]);
  }
  g_free(recv);
  g_free(c);
}

static void ex_min(void *ctx, uint64_t *v, uint32_t n) {
  (void)ctx;
  MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
}

bool fab_mpi_start(int *argc, char ***argv, FabParNet *net, char **why) {
  int provided;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    *why = g_strdup("MPI_Init failed");
    return false;
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  *net = (FabParNet){(uint32_t)rank, (uint32_t)size, NULL, ex_exchange, ex_allgather, ex_gather, ex_min};
  return true;
}

void fab_mpi_end(void) { MPI_Finalize(); }

#else

bool fab_mpi_start(int *argc, char ***argv, FabParNet *net, char **why) {
  (void)argc;
  (void)argv;
  (void)net;
  *why = g_strdup("this fabsim was built without MPI (Meson option mpi: install libopenmpi-dev or libmpich-dev "
                  "and configure again); a sweep's points spread over ranks with `mpirun -np N fabsim sweep ...`; "
                  "`fabsim validate SCENARIO --partition N` shows the cut a run would use");
  return false;
}

void fab_mpi_end(void) {}

#endif
