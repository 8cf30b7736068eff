/*
** Scenario configuration: YAML parsed into a small tree that remembers, for
** every node, the file, line and column it came from.
**
** A scenario is loaded once (fab_cfg_load_file / fab_cfg_load_string), which
** also merges its `include:` fragments, then `--set KEY=VALUE` overrides are
** applied (fab_cfg_set), then each layer reads its part with a schema table
** (fab_cfg_apply): one line per key with type, bounds, default and the offset
** of the field it fills. Keys a schema does not list are errors. Every error
** is a GError in FAB_CFG_ERROR whose message starts with "file:line:col: "
** followed by the key path, what was found and what was expected, e.g.
**   scenarios/x.yaml:12:13: fabric.link.bandwidth: '100Gbs' is not a rate
**   (expected a number with bps, Kbps, Mbps, Gbps, Tbps, B/s, KB/s, MB/s,
**   GB/s or TB/s, e.g. 100Gbps)
** Values given with --set are located as "--set:1:COL" (COL is the column of
** the value inside the KEY=VALUE argument, 1-based).
**
** Choices made where the rules above leave room:
**
** - Memory: every node, key, text, path and location string belongs to the
**   FabCfg and lives until fab_cfg_free(). Nodes that an include merge or a
**   --set replaces stay allocated, so pointers callers hold never dangle.
** - Null: a plain scalar written as nothing, `~`, `null`, `Null` or `NULL`
**   is kept as a scalar whose text is "" (quoted "null" is the string
**   "null"). fab_cfg_apply treats it as:
**     FAB_CFG_STRING        stores NULL (so `hdf5: ~` can switch off a path an
**                           include set); an error if the key is required;
**     FAB_CFG_MAP, _SEQ     absent: NULL (so `sharp:` means "all defaults");
**                           an error if the key is required;
**     FAB_CFG_NODE          stores the null scalar itself;
**     the value kinds       an error ("an empty value is not a rate (...)").
**   A null passed to fab_cfg_apply as the map counts as an absent map.
**   A null document root is an empty map.
** - Anchors (&a) and aliases (*a) are rejected with a located error: a node
**   shared between two places would have two key paths, and the `<<` merge
**   keys that usually come with them are not YAML 1.2. Use include: instead.
**   Tags are ignored. Map keys must be non-empty scalars.
** - Bounds (FabCfgKey.min/max): none when both are 0; otherwise the value
**   must be >= min, and <= max unless max < min (so {1, 0} is "at least 1").
** - Paths: the root's path is "" and is left out of messages, so a root
**   error reads "file:1:1: missing required key 'name'". A map key node has
**   the path of its value ("fabric.link.bandwdth").
** - --set: KEY may index sequences that exist ("workload.flows[2].size=1MiB");
**   maps are created on the way, a null on the way becomes a map, any other
**   scalar or a sequence on the way is an error. A replaced map entry gets a
**   new key node located at --set as well. A null VALUE (~, null, or
**   nothing) removes the key from its map instead; the key must be there,
**   and a sequence item cannot be removed. The root `include` key cannot be
**   set or removed.
** - Unit aliases accepted beyond config.h: kbps, kB/s, kB (SI lowercase k),
**   µs/μs for us. A bare number is bytes for sizes ("2.0" -> 2, "1.5" is an
**   error), needs a unit for rates, and must be 0 for times.
** - fab_cfg_text: the main text, a '\n' added if it does not end with one,
**   then "# --set K=V\n" per override (newlines inside V written as "\n").
** - A bad `def` in a schema is reported as an "internal error" GError naming
**   the key rather than aborting.
*/

#ifndef FAB_CONFIG_H
#define FAB_CONFIG_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAB_CFG_ERROR (fab_cfg_error_quark())
GQuark fab_cfg_error_quark(void);
/* Scenarios and includes: regular files of at most this size. */
#define FAB_CFG_FILE_MAX_MIB 64
#define FAB_CFG_FILE_MAX ((int64_t)FAB_CFG_FILE_MAX_MIB << 20)
/* Traces (workload.file): at most this size a file. Logs, compute tables and
** NCCL topologies: FAB_CFG_FILE_MAX. */
#define FAB_TRACE_FILE_MAX_MIB 1024
#define FAB_TRACE_FILE_MAX ((int64_t)FAB_TRACE_FILE_MAX_MIB << 20)
/* Every input file: `path` read whole (NUL-terminated) if it is a regular file
** of at most `max` bytes (its length in *len, if len); a directory, device, FIFO or socket is refused
** before anything is read, so nothing blocks or reads forever. FALSE + *why
** (a static or interned message) otherwise. */
gboolean fab_cfg_read_file(const char *path, int64_t max, char **text, size_t *len, const char **why);
/* A --set key (the text before '='): at most this many bytes, printable. */
#define FAB_CFG_SET_KEY_MAX 256

/* `s` with control characters escaped (\n, \t, \r, \xHH): error messages
** stay on one line. Transfer full. */
char *fab_cfg_one_line(const char *s);

enum { FAB_CFG_ERROR_PARSE = 1, FAB_CFG_ERROR_VALUE, FAB_CFG_ERROR_KEY, FAB_CFG_ERROR_IO };

typedef struct FabCfg FabCfg;         /* a loaded document (owns all nodes) */
typedef struct FabCfgNode FabCfgNode; /* a node of it */

typedef enum { FAB_CFG_NODE_SCALAR, FAB_CFG_NODE_MAP, FAB_CFG_NODE_SEQ } FabCfgNodeKind;

/* ---- loading ---------------------------------------------------------- */

/* Parse a YAML file; merge its include: fragments (paths relative to the
** including file; included first, so the including file wins; nested includes
** allowed, cycles are errors). The `include` key is consumed and does not
** appear in the tree. Duplicate keys in one map are errors. Returns NULL and
** sets err on failure. Transfer full. */
FabCfg *fab_cfg_load_file(const char *path, GError **err);

/* The same from a string; `name` stands for the file name in locations.
** Includes are relative to the current directory. */
FabCfg *fab_cfg_load_string(const char *text, const char *name, GError **err);

/* The same with includes relative to `dir` (NULL: the current directory). */
FabCfg *fab_cfg_load_string_in(const char *text, const char *name, const char *dir, GError **err);

/* Apply one "dotted.key.path=VALUE" override. VALUE is parsed as YAML (so
** `[1,2]`, `{a: 1}`, `32MiB` all work). Missing intermediate maps are created;
** an existing node is replaced. Whether the key is valid is checked later by
** fab_cfg_apply, which reports it at "--set:1:COL". FALSE + err if the
** argument has no '=' or an empty key or VALUE is not valid YAML. */
gboolean fab_cfg_set(FabCfg *cfg, const char *assignment, GError **err);

void fab_cfg_free(FabCfg *cfg);

/* The root node (a map; an empty document gives an empty map). */
const FabCfgNode *fab_cfg_root(const FabCfg *cfg);

/* The main file's text exactly as read, followed by one "# --set K=V" line per
** override, for /meta in outputs. Transfer none. */
const char *fab_cfg_text(const FabCfg *cfg);

/* ---- nodes ------------------------------------------------------------ */

FabCfgNodeKind fab_cfg_kind(const FabCfgNode *n);
const char *fab_cfg_scalar(const FabCfgNode *n);        /* NULL unless scalar */
const FabCfgNode *fab_cfg_get(const FabCfgNode *map, const char *key); /* NULL if absent */
size_t fab_cfg_len(const FabCfgNode *n);                /* items of a seq/map */
const FabCfgNode *fab_cfg_at(const FabCfgNode *n, size_t i); /* seq item / map value */
const char *fab_cfg_key_at(const FabCfgNode *map, size_t i); /* map key */
const char *fab_cfg_path(const FabCfgNode *n);          /* "fabric.link.bandwidth", "workload.flows[3].src" */
const char *fab_cfg_where(const FabCfgNode *n);         /* "file:line:col" */

/* `rel` as the file that holds node n sees it: relative to that file's
** directory (a node given on the command line or built in: the current
** directory); absolute paths as they are. Transfer full. */
char *fab_cfg_file_near(const FabCfgNode *n, const char *rel);

/* Set *err to "WHERE: PATH: message" for node n (printf-style). Returns FALSE
** so callers can `return fab_cfg_fail(n, err, ...)`. */
gboolean fab_cfg_fail(const FabCfgNode *n, GError **err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* ---- values and units (exact: decimal text is scaled without floats) ---- */

/* Each returns FALSE with a message naming what was expected (no location:
** fab_cfg_apply adds it). */
gboolean fab_parse_rate(const char *s, uint64_t *bps, GError **err);    /* "400Gbps", "900GB/s" */
gboolean fab_parse_time(const char *s, uint64_t *ps, GError **err);     /* "600ns", "2.5ms"; bare 0 ok */
gboolean fab_parse_size(const char *s, uint64_t *bytes, GError **err);  /* "4096", "4KiB", "1GB" */
gboolean fab_parse_ratio(const char *s, double *r, GError **err);       /* "2:1", "1.5" (> 0) */
gboolean fab_parse_prob(const char *s, double *p, GError **err);        /* "0.2", "1%" in [0,1] */
gboolean fab_parse_bool(const char *s, gboolean *b, GError **err);      /* true/false/yes/no/on/off */
gboolean fab_parse_int(const char *s, int64_t *v, GError **err);
gboolean fab_parse_double(const char *s, double *v, GError **err);

/* ---- schema tables ---------------------------------------------------- */

typedef enum {
  FAB_CFG_END = 0, /* terminates a schema */
  FAB_CFG_INT,     /* a signed integer field of 1, 2, 4 or 8 bytes */
  FAB_CFG_UINT,    /* an unsigned integer field of 1, 2, 4 or 8 bytes (rejects negatives) */
  FAB_CFG_BOOL,    /* bool (or gboolean) */
  FAB_CFG_DOUBLE,  /* double */
  FAB_CFG_RATE,    /* unsigned integer: bits per second */
  FAB_CFG_TIME,    /* unsigned integer: picoseconds */
  FAB_CFG_SIZE,    /* unsigned integer: bytes */
  FAB_CFG_RATIO,   /* double */
  FAB_CFG_PROB,    /* double in [0,1] */
  FAB_CFG_STRING,  /* const char * owned by the FabCfg (default: static) */
  FAB_CFG_ENUM,    /* int (or an unsigned field of 1, 2 or 4 bytes): index into choices[] */
  FAB_CFG_NODE,    /* const FabCfgNode * (any kind; NULL if absent): read by the caller */
  FAB_CFG_MAP,     /* const FabCfgNode * that must be a map */
  FAB_CFG_SEQ,     /* const FabCfgNode * that must be a sequence */
  FAB_CFG_SPLICE,  /* no key: the rows of `more` are read as if they stood here (a prefix
                   ** shared by several schemas); may nest */
} FabCfgType;

/* One row of a schema table: one key of a map and the struct field it fills
** (Redis's static_configs). Integer values are stored in the field's own
** width, and a value that does not fit it is an error like any other bound.
** Build rows with FAB_CFG_KEY, which takes the field's offset and size from
** the struct, so a row cannot write a field of another width. */
typedef struct FabCfgKey {
  const char *name;            /* key in the map */
  FabCfgType type;
  size_t offset;               /* offsetof(target struct, field); nested fields allowed (topo.link_bps) */
  size_t size;                 /* sizeof the field */
  bool required;               /* error when absent */
  const char *def;             /* default as YAML text, parsed like a value; NULL: leave the field as it is */
  double min, max;             /* numeric bounds in stored units; min == max == 0: none */
  const char *const *choices;  /* FAB_CFG_ENUM: NULL-terminated names */
  const struct FabCfgKey *more;/* FAB_CFG_SPLICE: the rows to read here */
} FabCfgKey;

/* A row for STRUCT.FIELD: FAB_CFG_KEY("mtu", FAB_CFG_SIZE, FabFabricCfg, nic.mtu, .def = "4096",
** .min = 64, .max = 1048576). */
#define FAB_CFG_KEY(NAME, TYPE, STRUCT, FIELD, ...)                                                     \
  {.name = (NAME), .type = (TYPE), .offset = offsetof(STRUCT, FIELD), .size = sizeof(((STRUCT *)0)->FIELD), \
   __VA_ARGS__}
/* The rows of another schema, spliced in (same target struct). */
#define FAB_CFG_SPLICE_OF(ROWS) {.name = "", .type = FAB_CFG_SPLICE, .more = (ROWS)}
/* The end of a schema. */
#define FAB_CFG_END_ROW {.name = NULL, .type = FAB_CFG_END}

/* Fill `target` from `map` following `schema` (terminated by FAB_CFG_END):
** defaults first, then the values present. `map` may be NULL (all defaults;
** a required key then is reported at `where_if_null`, which may be NULL too).
** Errors: map not a map, a key not in the schema ("unknown key 'x' (expected
** one of: a, b, c)"), a missing required key, a bad value, a value out of
** bounds or beyond its field's width, an unknown enum choice (listing the
** choices). Returns FALSE + err. A row whose size does not suit its type is
** a programming error (assert). */
gboolean fab_cfg_apply(const FabCfgNode *map, const FabCfgNode *where_if_null,
                       const FabCfgKey *schema, void *target, GError **err);

/* One enum value read outside a schema (to choose the schema of the rest):
** the index of n's text in `choices`, or -1 + err with the messages a schema
** row gives ("'x' is not a valid choice (expected one of: ...)"). */
int fab_cfg_enum(const FabCfgNode *n, const char *const *choices, GError **err);

/* Whether `key` is a key of `schema` (splices followed). */
bool fab_cfg_schema_has(const FabCfgKey *schema, const char *key);

#endif
