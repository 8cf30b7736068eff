/* Results of one run. See results.h. */
#include "results.h"

#include <glib.h>
#include <string.h>

/* Free the flow, link and queue arrays and zero their counts and pointers
** (the whole queue series, interval included: nothing is sampled any more).
** The identity strings and the scalar totals are left as they are; the
** caller owns the strings. NULL is a no-op; clearing twice is harmless. */
void fab_results_clear(FabResults *r) {
  if (!r) return;
  g_free(r->flows);
  r->flows = NULL;
  r->n_flows = 0;
  g_free(r->links);
  r->links = NULL;
  r->n_links = 0;
  g_free(r->queues.port);
  g_free(r->queues.t);
  g_free(r->queues.depth);
  g_free(r->queues.depth_prio);
  g_free(r->queues.flow_rate);
  g_free(r->queues.link_bytes);
  memset(&r->queues, 0, sizeof r->queues);
  g_free(r->colls);
  r->colls = NULL;
  r->n_colls = 0;
  g_free(r->spans);
  r->spans = NULL;
  r->n_spans = 0;
  g_free(r->steps);
  r->steps = NULL;
  r->n_steps = 0;
  g_free(r->jobs);
  r->jobs = NULL;
  r->n_jobs = 0;
  g_free(r->deadlock);
  r->deadlock = NULL;
  r->n_deadlock = 0;
}

double fab_busbw_factor(const char *op, uint32_t n) {
  if (!op || n < 1) return 1;
  if (g_str_equal(op, "allreduce")) return 2.0 * (n - 1) / n;
  if (g_str_equal(op, "allgather") || g_str_equal(op, "reduce-scatter") || g_str_equal(op, "all-to-all"))
    return (double)(n - 1) / n;
  return 1;
}
