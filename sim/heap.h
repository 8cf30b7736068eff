/*
** The process heap in transparent huge pages (Linux, glibc's malloc).
**
** A large run's state (packets, flows, ports, the event queue's blocks) is
** spread over tens to hundreds of MB and touched nearly at random, so with
** 4 KiB pages most of its cache misses miss the TLB too (a few thousand
** entries: about 8 MB of reach). fab_heap_hugepages() asks glibc to grow its
** heap by one large reservation and marks that range MADV_HUGEPAGE; while
** the reservation lasts every block comes from it, large ones too (glibc
** would otherwise map each block of over 128 KiB on its own), so the kernel
** backs what the run touches with 2 MiB pages. Past the reservation the heap
** grows as glibc grows it, in 4 KiB pages. Nothing a run computes depends on
** it: only where memory is.
**
** Programs call it first thing in main(), before the heap holds anything
** large. The library (tools/libfabsim) never calls it: a process embedding
** fabsim keeps its own heap policy.
*/
#ifndef FAB_HEAP_H
#define FAB_HEAP_H

#include <stdbool.h>
#include <stddef.h>

/* Grow the heap by `reserve` bytes of address space (0: 256 MiB, or a
** quarter of the machine's memory if less; at most 2046 MiB, as glibc takes
** the figure in an int),
** backed by huge pages as touched. False,
** and the heap left as glibc runs it, when it cannot be done or is not
** wanted; `why` (if not NULL) then says why in a few words: the environment
** sets FABSIM_HUGEPAGES=0, transparent huge pages are off
** (/sys/kernel/mm/transparent_hugepage/enabled "never"), the kernel commits
** memory strictly (vm.overcommit_memory = 2), or malloc is not glibc's own
** heap (valgrind, sanitizers). On success `why` says what was reserved.
** Call it once; a second call does nothing and says so. */
bool fab_heap_hugepages(size_t reserve, const char **why);

#endif
