/*
** HDF5 writer for FabResults. The file is written to "PATH.tmp.PID" and
** renamed to PATH only when complete, so a failed run leaves no partial file.
**
** Schema (documented in README.md). The tables and the /meta attributes are
** laid out from the field tables of results.c (FAB_FF_H5, FAB_FF_META):
**   /meta            group; attributes (fabsim_version, scenario, seed, ...);
**                    dataset scenario_yaml (string)
**   /flows, /links, /collectives, /timeline, /steps, /jobs
**                    compound tables, a row per record; /links has a
**                    `layer` column (string 8: fabric, nic, pcie, nvlink;
**                    sampler.h FabLayer), which plot selects by
**   /queues/time_ps  u64 [samples]
**   /queues/port     string 32 [ports]
**   /queues/depth    u32 [samples x ports], bytes; attribute interval_ps
**   /queues/depth_prio u32 [samples x ports x priorities] (when priorities > 1)
**   /queues/flow_rate  u64 [samples x flows], bits/s each flow sends at (0: idle)
**   /queues/link_bytes u64 [samples x links]: wire bytes each /links row has sent so far
*/
#ifndef FAB_H5OUT_H
#define FAB_H5OUT_H

#include <glib.h>
#include "results.h"

/* Whether `path` can take the results, checked before a run: it is a regular
** file or nothing (a device, FIFO, socket, directory or symbolic link is
** never replaced), and its nearest existing ancestor is a directory this
** process can write. Creates nothing. FALSE + err (FAB_H5_ERROR) naming why. */
gboolean fab_h5_check_target(const char *path, GError **err);
/* The same for any output file; `what` names it in the message ("HDF5
** results"). And the first half alone: `path` is a regular file or nothing. */
gboolean fab_out_check_target(const char *path, const char *what, GError **err);
gboolean fab_out_check_kind(const char *path, const char *what, GError **err);
/* The same for an output directory: `path` is a directory this process can
** write, or nothing under a directory it can write (created later). */
gboolean fab_out_check_dir(const char *path, const char *what, GError **err);

/* Write `r` to `path` (fab_h5_check_target first). FALSE + err (domain FAB_H5_ERROR) on failure, in which
** case no file exists at `path` and the temporary is removed. */
gboolean fab_h5_write(const FabResults *r, const char *path, GError **err);

#define FAB_H5_ERROR (fab_h5_error_quark())
GQuark fab_h5_error_quark(void);

#endif
