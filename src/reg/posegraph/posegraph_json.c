/* Open3D's PoseGraph JSON (docs/FORMATS.md, "Pose graphs"): a read that
 * trusts no count (every array's length is checked against what it must
 * hold, every node id against the nodes read) and an atomic write whose
 * numbers read back to the same bits (%.17g). Matrices are stored
 * column-major, as Eigen writes them; ptreg's are row-major. */
#include "ptreg/posegraph.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ptreg/io.h"
#include "reg/posegraph/posegraph_impl.h"
#include "core/numeric.h"

/* The line and byte of offset in text, for a parse error. */
static size_t line_of(const char *text, size_t offset)
{
    size_t line = 1;
    for (size_t i = 0; i < offset; i++)
        line += text[i] == '\n';
    return line;
}

/* A 4x4 (n = 4) or 6x6 (n = 6) matrix from a column-major array of n*n
 * numbers into row-major out. what/index name it in messages. */
static ptreg_status json_matrix_field(const char *name, const char *what, size_t index, const cJSON *obj,
                                      const char *key, int n, double *out, ptreg_error *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!a)
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: %s %zu: no \"%s\"", name, what, index, key);
    if (!cJSON_IsArray(a))
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: %s %zu: \"%s\" is not an array", name, what, index, key);
    const int count = cJSON_GetArraySize(a);
    if (count != n * n)
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: %s %zu: \"%s\" has %d numbers, not %d", name, what, index,
                               key, count, n * n);
    int k = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: %s %zu: \"%s\"[%d] is not a finite number", name, what,
                                   index, key, k);
        out[(k % n) * n + k / n] = v->valuedouble; /* column-major in the file */
        k++;
    }
    return PTREG_OK;
}

static ptreg_status read_class(const char *name, const char *what, size_t index, const cJSON *obj,
                               const char *class_name, ptreg_error *err)
{
    const char *where = what ? what : "";
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, "class_name");
    if (!cJSON_IsString(c) || strcmp(c->valuestring, class_name)) {
        if (what)
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: %s %zu: class_name is not \"%s\"", name, where, index,
                                   class_name);
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: class_name is not \"%s\"", name, class_name);
    }
    const cJSON *major = cJSON_GetObjectItemCaseSensitive(obj, "version_major");
    const cJSON *minor = cJSON_GetObjectItemCaseSensitive(obj, "version_minor");
    if ((major && (!cJSON_IsNumber(major) || major->valuedouble != 1)) ||
        (minor && (!cJSON_IsNumber(minor) || minor->valuedouble != 0))) {
        if (what)
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: %s %zu: version is not 1.0", name, where, index);
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: version is not 1.0", name);
    }
    return PTREG_OK;
}

static ptreg_status read_id(const char *name, size_t k, const cJSON *obj, const char *key, size_t nodes, size_t *id,
                            ptreg_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: edge %zu: no \"%s\"", name, k, key);
    const double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= 0 && d < 9007199254740992.0 && d == floor(d)))
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: edge %zu: \"%s\" is not a node id", name, k, key);
    if (d >= (double)nodes)
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: edge %zu: %s node %.0f of %zu nodes", name, k,
                               strcmp(key, "source_node_id") ? "target" : "source", d, nodes);
    *id = (size_t)d;
    return PTREG_OK;
}

static ptreg_status parse_root(const char *name, const cJSON *root, ptreg_pose_graph *g, ptreg_error *err)
{
    if (!cJSON_IsObject(root))
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: not a JSON object", name);
    ptreg_status st = read_class(name, NULL, 0, root, "PoseGraph", err);
    if (st)
        return st;
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    const cJSON *edges = cJSON_GetObjectItemCaseSensitive(root, "edges");
    if (!cJSON_IsArray(nodes) || !cJSON_IsArray(edges))
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: no \"%s\" array", name,
                               cJSON_IsArray(nodes) ? "edges" : "nodes");
    const size_t nn = (size_t)cJSON_GetArraySize(nodes), ne = (size_t)cJSON_GetArraySize(edges);
    if ((st = ptreg_pose_graph_alloc(g, nn, ne, err)))
        return st;
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, nodes)
    {
        if (!cJSON_IsObject(item))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: node %zu: not an object", name, i);
        if ((st = read_class(name, "node", i, item, "PoseGraphNode", err)) ||
            (st = json_matrix_field(name, "node", i, item, "pose", 4, g->nodes + 16 * i, err)))
            return st;
        if (!ptreg_transform_is_rigid(g->nodes + 16 * i, PTREG_RIGID_TOL))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: node %zu: pose is not rigid (rigidity error %.3g)", name,
                                   i, ptreg_transform_rigidity_error(g->nodes + 16 * i));
        i++;
    }
    size_t k = 0;
    cJSON_ArrayForEach(item, edges)
    {
        ptreg_pose_edge *e = &g->edges[k];
        if (!cJSON_IsObject(item))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: edge %zu: not an object", name, k);
        if ((st = read_class(name, "edge", k, item, "PoseGraphEdge", err)) ||
            (st = read_id(name, k, item, "source_node_id", nn, &e->source, err)) ||
            (st = read_id(name, k, item, "target_node_id", nn, &e->target, err)) ||
            (st = json_matrix_field(name, "edge", k, item, "transformation", 4, e->transformation, err)) ||
            (st = json_matrix_field(name, "edge", k, item, "information", 6, e->information, err)))
            return st;
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(item, "uncertain");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(item, "confidence");
        if (u && !cJSON_IsBool(u))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: edge %zu: \"uncertain\" is not true or false", name, k);
        if (c && (!cJSON_IsNumber(c) || !isfinite(c->valuedouble)))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: edge %zu: \"confidence\" is not a finite number", name,
                                   k);
        e->uncertain = u ? cJSON_IsTrue(u) : 0;
        e->confidence = c ? c->valuedouble : 1.0;
        k++;
    }
    return pose_graph_check_named(name, g, err);
}

ptreg_status pose_graph_parse_json(const char *name, const char *text, size_t len, ptreg_pose_graph *g,
                                   ptreg_error *err)
{
    ptreg_pose_graph_init(g);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
        if (at >= len)
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: line %zu: the JSON ends early (or out of memory)", name,
                                   line_of(text, len));
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: line %zu (byte %zu): not valid JSON", name,
                               line_of(text, at), at);
    }
    ptreg_status st = parse_root(name, root, g, err);
    cJSON_Delete(root);
    if (st)
        ptreg_pose_graph_free(g);
    return st;
}

ptreg_status ptreg_pose_graph_read_json(const char *path, ptreg_pose_graph *g, ptreg_error *err)
{
    if (!path || !g)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pose graph: no path or graph");
    ptreg_pose_graph_init(g);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : 65536;
            char *t = ncap > cap ? realloc(text, ncap) : NULL;
            if (!t) {
                free(text);
                fclose(f);
                return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory reading the file", path);
            }
            text = t;
            cap = ncap;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: read error", path);
    }
    if (len == 0) {
        free(text);
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: line 1: empty file", path);
    }
    ptreg_status st = pose_graph_parse_json(path, text, len, g, err);
    free(text);
    return st;
}

static void write_matrix(FILE *fp, const char *key, const double *m, int n, const char *indent, int last)
{
    fprintf(fp, "%s\"%s\" : \n%s[\n", indent, key, indent);
    for (int k = 0; k < n * n; k++)
        fprintf(fp, "%s\t%.17g%s\n", indent, m[(k % n) * n + k / n], k + 1 < n * n ? "," : "");
    fprintf(fp, "%s]%s\n", indent, last ? "" : ",");
}

ptreg_status ptreg_pose_graph_write_json(const char *path, const ptreg_pose_graph *g, ptreg_error *err)
{
    if (!path)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pose graph: no path");
    ptreg_status st = pose_graph_check_named(path, g, err);
    if (st) { /* the caller's graph, not a file: an argument error */
        if (err)
            err->status = PTREG_ERR_ARG;
        return PTREG_ERR_ARG;
    }
    ptreg_atomic_file af;
    if ((st = ptreg_atomic_open(path, &af, err)))
        return st;
    FILE *fp = af.fp;
    fprintf(fp, "{\n\t\"class_name\" : \"PoseGraph\",\n\t\"edges\" : \n\t[");
    for (size_t k = 0; k < g->edge_count; k++) {
        const ptreg_pose_edge *e = &g->edges[k];
        fprintf(fp, "%s\n\t\t{\n\t\t\t\"class_name\" : \"PoseGraphEdge\",\n", k ? "," : "");
        fprintf(fp, "\t\t\t\"confidence\" : %.17g,\n", e->confidence);
        write_matrix(fp, "information", e->information, 6, "\t\t\t", 0);
        fprintf(fp, "\t\t\t\"source_node_id\" : %zu,\n\t\t\t\"target_node_id\" : %zu,\n", e->source, e->target);
        write_matrix(fp, "transformation", e->transformation, 4, "\t\t\t", 0);
        fprintf(fp, "\t\t\t\"uncertain\" : %s,\n\t\t\t\"version_major\" : 1,\n\t\t\t\"version_minor\" : 0\n\t\t}",
                e->uncertain ? "true" : "false");
    }
    fprintf(fp, "\n\t],\n\t\"nodes\" : \n\t[");
    for (size_t i = 0; i < g->node_count; i++) {
        fprintf(fp, "%s\n\t\t{\n\t\t\t\"class_name\" : \"PoseGraphNode\",\n", i ? "," : "");
        write_matrix(fp, "pose", g->nodes + 16 * i, 4, "\t\t\t", 0);
        fprintf(fp, "\t\t\t\"version_major\" : 1,\n\t\t\t\"version_minor\" : 0\n\t\t}");
    }
    fprintf(fp, "\n\t],\n\t\"version_major\" : 1,\n\t\"version_minor\" : 0\n}\n");
    return ptreg_atomic_commit(&af, err);
}
