/*
** An object pool: fixed-size objects handed out from slabs and recycled
** through a LIFO free list, so a simulation never calls malloc per object
** (ROSS's free lists, htsim's PacketDB).
**
** The pool knows nothing of what it holds: it is created with an object
** size, gives out zeroed objects of that size, and counts the live ones so
** a run can check it ends with none (no leak, no double free). models/
** keeps its packets in the engine's pool (models/packet.h).
*/
#ifndef FAB_POOL_H
#define FAB_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct FabPool FabPool;

/* A pool of objects of `size` bytes (> 0), growing in slabs of `slab`
** objects (0: a default of 4096). Transfer full. */
FabPool *fab_pool_new(size_t size, size_t slab);

/* Free the pool and all its slabs; live objects become invalid. NULL is a
** no-op. */
void fab_pool_free(FabPool *pool);

/* A zeroed object. Never fails (aborts on out of memory). Cost: a pop from
** the free list and a memset of `size` bytes; a new slab now and then. */
void *fab_pool_get(FabPool *pool);

/* The same without the memset, for a caller that zeroes an object whose
** size it knows at compile time (the compiler then writes it inline). */
void *fab_pool_take(FabPool *pool);

/* Return an object to the pool (it comes back first: LIFO). */
void fab_pool_put(FabPool *pool, void *obj);

/* Let objects of other pools of the same size come back to this one (the
** pools of a parallel run's partitions: a packet made in one partition is
** freed in another, and its memory joins that one's free list). live then
** counts modulo 2^64 and only its sum over the pools means anything; the
** slabs stay with the pool that made them, so free the pools together. */
void fab_pool_open(FabPool *pool);

/* The object size the pool was made with, bytes. */
size_t fab_pool_size(const FabPool *pool);

/* Objects handed out and not yet returned. */
size_t fab_pool_live(const FabPool *pool);

/* Objects the slabs hold (live + free): the pool's high-water mark. */
size_t fab_pool_capacity(const FabPool *pool);

/* Total fab_pool_get calls served. */
uint64_t fab_pool_allocs(const FabPool *pool);

#endif
