/* Pose graphs' private pieces, shared by the files of reg/posegraph/ and
 * the JSON fuzzer (tests/fuzz/fuzz_posegraph.c). */
#ifndef PTREG_POSEGRAPH_IMPL_H
#define PTREG_POSEGRAPH_IMPL_H

#include <stddef.h>

#include "ptreg/posegraph.h"

/* ptreg_pose_graph_check with messages that start "NAME: " (name may be
 * NULL). */
ptreg_status pose_graph_check_named(const char *name, const ptreg_pose_graph *g, ptreg_error *err);

/* Parses Open3D's PoseGraph JSON from len bytes of text (no terminating NUL
 * needed) into g (initialised here; left empty on failure). name starts
 * every message. */
ptreg_status pose_graph_parse_json(const char *name, const char *text, size_t len, ptreg_pose_graph *g,
                                   ptreg_error *err);

#endif
