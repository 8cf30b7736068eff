/*
** SHARP: in-network reduction in the fabric's switches (InfiniBand's
** Scalable Hierarchical Aggregation and Reduction Protocol, streaming
** aggregation), as one set of trees and the reductions running on them.
**
** A tree is a set of aggregation nodes (switches), each with a parent (none
** at the root) and children: child nodes below it, and members (endpoints)
** attached to it. It is built for one set of members (a communicator: see
** topologies/sharp_trees.c) and lists them in rank order.
**
** A group is one reduction on a tree: every member contributes npkts
** packets (SHARP_UP, `seq` the packet, `dst` the group, `hash` the node it
** is sent to). An aggregation node reduces packet k once it has it from
** every child, after the switch's latency, the aggregation `latency`, and
** its turn on the node's reducer (`reduce_bps` of output per node; 0: as
** fast as packets arrive); it then sends the result up to its parent, or at
** the root turns it around: SHARP_DOWN to every child, each child node
** copying it on to its own children, members getting theirs with `dst` their
** endpoint and `flow` their flow. A member is done when all npkts results
** are in. Contributions are absorbed on arrival (their credit goes back at
** once) and do not count against the switch's buffer; what a node makes is
** queued at its egress ports. How much a member may have outstanding (sent,
** result not back) is its NIC's business: the window (models/nic.h), which
** stands for the tree's buffer at each node (a child stops when it is full).
**
** Counters of a group live until its last result is delivered.
**
** A group starts when its first member asks (fab_sharp_request). With
** locks (fab_sharp_set_locks: SHARP's streaming trees locked per operation,
** not for the communicator's life) it first takes its tree's resources,
** shared by at most `streams` owners; until then its members send nothing.
*/
#ifndef FAB_SHARP_H
#define FAB_SHARP_H

#include "switch.h"

typedef struct FabSharp FabSharp;

/* The whole fabric's trees and groups (none yet). `streams`: how many
** owners may hold one lock resource at once (fab_sharp_set_locks). */
FabSharp *fab_sharp_new(fab_time_t latency, uint64_t reduce_bps, uint32_t streams);
void fab_sharp_free(FabSharp *s);

/* Add a tree of `nnodes` aggregation nodes: node i is switch sw[i], its
** parent parent[i] (UINT32_MAX: the root, exactly one), reached by its port
** up[i]; its parent reaches it by port down[i]. Member m (of nmem, in rank
** order) is endpoint rank[m], attached to node leaf[m] by that node's port
** port[m]. Every switch is told of `s` (fab_switch_set_sharp). Arrays are
** copied. Returns the tree's id. */
uint32_t fab_sharp_add_tree(FabSharp *s, uint32_t nnodes, FabSwitch *const *sw, const uint32_t *parent,
                            const uint32_t *up, const uint32_t *down, uint32_t nmem, const uint32_t *rank,
                            const uint32_t *leaf, const uint32_t *port);

/* The node member m of `tree` sends its contributions to. */
uint32_t fab_sharp_member_node(const FabSharp *s, uint32_t tree, uint32_t m);

/* Locks (fabric.switch.sharp.lock: operation): tree `tree` belongs to
** `owner` (its communicator), and a reduction on it must hold each of
** res[0..nres) (resource numbers: switches, or switch ports, as the caller
** numbers them) for as long as it runs. A resource admits the reductions of
** at most `streams` owners at once (any number of one owner's). Without
** locks a tree's reductions start when requested. */
void fab_sharp_set_locks(FabSharp *s, uint32_t tree, uint32_t owner, uint32_t nres, const uint32_t *res);

/* Told when a reduction may start (fab_sharp_request): its members' flows
** (flow[m], nmem of them) may send. */
typedef void (*FabSharpStartFn)(void *ctx, FabEngine *eng, const uint32_t *flow, uint32_t nmem);
void fab_sharp_on_start(FabSharp *s, FabSharpStartFn fn, void *ctx);

/* Add a reduction on `tree`: member m's flow is flow[m]; each contributes
** npkts packets, `bytes` of payload. Returns the group id (what SHARP_UP
** packets carry in `dst`). It does not start until requested. `llt`: a
** small one on the low-latency tree, which takes no lock (its packets are
** the transactions, its window their number: the caller's business). */
uint32_t fab_sharp_add_group(FabSharp *s, uint32_t tree, const uint32_t *flow, uint32_t npkts, uint64_t bytes,
                             bool llt);

/* A member of group g is ready to send at `at` (>= now). The first such
** call asks for the group's locks: it starts (FabSharpStartFn, at once)
** when they are free, else it waits until they are, first come first
** served among the waiting groups whose locks are free (one whose locks
** are still busy holds up none). Later calls do nothing. */
void fab_sharp_request(FabEngine *eng, FabSharp *s, uint32_t g, fab_time_t at);

/* A SHARP packet `p` arrived on port `in` of switch `sw` (transfer full). */
void fab_sharp_receive(FabEngine *eng, FabSharp *s, FabSwitch *sw, FabPkt *p, FabPort *in);

/* Trees made so far. */
uint32_t fab_sharp_ntrees(const FabSharp *s);

/* What happened on a tree (by time `now`, for the time active). */
typedef struct FabSharpStats {
  uint64_t reductions;  /* groups added */
  uint64_t llt;         /* of which on the low-latency tree */
  uint64_t finished;    /* groups whose every result was delivered */
  uint64_t bytes_in;    /* payload the members contributed */
  uint64_t bytes_out;   /* payload of the results delivered to members */
  uint64_t expect;      /* what a finished group brings in and takes out: members x bytes, summed */
  uint64_t peak_held;   /* the most payload one aggregation node held in partial sums at once */
  fab_time_t active;    /* time some reduction was under way on it (holding its locks): from its first member's
                        ** request to its last packet's reduction at the root (when the locks are given back) */
  uint64_t waits;       /* reductions that waited for their locks */
  fab_time_t waited;    /* their waits, summed */
} FabSharpStats;
void fab_sharp_stats(const FabSharp *s, uint32_t tree, fab_time_t now, FabSharpStats *out);

#endif
