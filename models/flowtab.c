/* The run's flow table: the flows under way, by slot. See nic.h (FabFlowTable). */
#include <stddef.h>
#include <string.h>
#include "nic.h"

void fab_flow_table_init(FabFlowTable *t) {
  *t = (FabFlowTable){0};
  t->free = g_array_new(FALSE, FALSE, sizeof(uint32_t));
}

void fab_flow_table_fix(FabFlowTable *t, uint32_t parts) {
  g_assert(t->free && !t->fixed && parts >= 1);
  t->nparts = parts - 1; /* partition 0 keeps `free` */
  t->pfree = g_new(GArray *, MAX(t->nparts, 1u));
  for (uint32_t k = 0; k < t->nparts; k++) t->pfree[k] = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  FabFlow **all = g_new0(FabFlow *, FAB_FLOW_CHUNKS_MAX); /* 8 MB of address space, touched as chunks come */
  if (t->nchunks) memcpy(all, t->chunk, t->nchunks * sizeof *all);
  g_free(t->chunk);
  t->chunk = all;
  t->fixed = true;
}

void fab_flow_table_wrap(FabFlowTable *t, FabFlow *flows) {
  *t = (FabFlowTable){0};
  t->one = flows;
  t->chunk = &t->one;
  t->nchunks = 1;
  t->used = FAB_FLOW_CHUNK;
}

void fab_flow_table_clear(FabFlowTable *t) {
  if (t->free) {
    for (uint32_t k = 0; k < t->nparts; k++) g_array_free(t->pfree[k], TRUE);
    g_free(t->pfree);
    for (uint32_t k = 0; k < t->nchunks; k++) g_aligned_free(t->chunk[k]);
    g_free(t->chunk);
    g_array_free(t->free, TRUE);
  }
  g_free(t->held);
  *t = (FabFlowTable){0};
}

FabFlow *fab_flow_table_take(FabFlowTable *t) { return fab_flow_table_take_in(t, 0); }

FabFlow *fab_flow_table_take_in(FabFlowTable *t, uint32_t part) {
  g_assert(t->free);
  GArray *fr = part ? t->pfree[part - 1] : t->free;
  uint32_t slot;
  if (fr->len) {
    slot = g_array_index(fr, uint32_t, fr->len - 1);
    g_array_set_size(fr, fr->len - 1);
  } else {
    g_assert(t->used < UINT32_MAX - FAB_FLOW_CHUNK); /* so nchunks < FAB_FLOW_CHUNKS_MAX */
    slot = t->used++;
    if ((slot >> FAB_FLOW_CHUNK_BITS) == t->nchunks) {
      if (!t->fixed) t->chunk = g_renew(FabFlow *, t->chunk, t->nchunks + 1);
      t->chunk[t->nchunks++] = g_aligned_alloc0(FAB_FLOW_CHUNK, sizeof(FabFlow), 64); /* FabFlow's receiver lines */
    }
  }
  t->live++;
  if (!t->fixed) { /* one engine: which slots are held, a byte each (the fast-forward's look at the flows) */
    if (slot >= t->held_cap) {
      uint32_t cap = MAX(2 * t->held_cap, slot + 1024);
      t->held = g_realloc(t->held, cap);
      memset(t->held + t->held_cap, 0, cap - t->held_cap);
      t->held_cap = cap;
    }
    t->held[slot] = 1;
  }
  FabFlow *f = fab_flow_at(t, slot);
  /* In a parallel run a timer of a flow that held this slot before may be firing on another thread (any of
  ** its holders' senders'): it reads only `gen`, which moves atomically and never back, finds it changed and
  ** returns. So `gen` is the one field not cleared by the memsets. */
  uint32_t gen = __atomic_load_n(&f->gen, __ATOMIC_RELAXED) + 1; /* new chunks come zeroed */
  size_t at = offsetof(FabFlow, gen), after = at + sizeof f->gen;
  memset(f, 0, at);
  memset((char *)f + after, 0, sizeof *f - after);
  f->slot = slot;
  __atomic_store_n(&f->gen, gen, __ATOMIC_RELAXED);
  return f;
}

void fab_flow_table_put(FabFlowTable *t, FabFlow *f) { fab_flow_table_put_in(t, f, 0); }

void fab_flow_table_put_in(FabFlowTable *t, FabFlow *f, uint32_t part) {
  g_assert(t->free && t->live > 0 && part <= t->nparts);
  t->live--;
  if (!t->fixed && f->slot < t->held_cap) t->held[f->slot] = 0;
  g_array_append_val(part ? t->pfree[part - 1] : t->free, f->slot);
}
