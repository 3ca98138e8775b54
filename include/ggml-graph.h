/* ggx — public graph access (spec "Public graph access").
 *
 * Leaf enumeration, append-only leaf construction, recorded use counts, mapped inference-graph
 * copying and use-count copying for graph segments. Range execution lives in ggml-backend.h.
 *
 * A refused call is a misuse like a bad constructor call (ggml.h): it aborts in the default error
 * mode; "fails" and "returns false" below describe the returning mode. */
#ifndef GGML_GRAPH_H
#define GGML_GRAPH_H

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of leafs (tensors without an op, or sources that are not nodes) and leaf i (NULL when
 * out of range; negative i counts from the end). */
int ggml_graph_n_leafs(const struct ggml_cgraph * cgraph);
struct ggml_tensor * ggml_graph_leaf(const struct ggml_cgraph * cgraph, int i);
struct ggml_tensor ** ggml_graph_leafs(const struct ggml_cgraph * cgraph);

/* Append tensor as a leaf. Fails (false, graph unchanged, error in the graph's context) when the
 * tensor is already in the graph, has an op other than NONE, or the leaf array is full. Leafs are
 * never removed except by ggml_graph_clear. */
bool ggml_graph_add_leaf(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

/* True when tensor is a node or leaf of the graph (for a view: of the viewed graph). */
bool ggml_graph_contains(const struct ggml_cgraph * cgraph, const struct ggml_tensor * tensor);

/* Recorded use count: how many source slots of the graph's nodes name tensor. A graph view reports
 * the counts of the whole graph it views, including consumers outside the view. 0 if absent. */
int ggml_graph_get_use_count(const struct ggml_cgraph * cgraph, const struct ggml_tensor * tensor);

/* Caller-supplied mapping from a tensor of the source graph to its caller-owned copy. */
typedef struct ggml_tensor * (*ggml_graph_tensor_map_t)(const struct ggml_tensor * original,
                                                        void * user_data);

/* Fill dst with the mapped nodes and leafs of src, in src's order, recording for each copy the
 * use count the original has in src (for a view, its whole graph's count). The caller owns the
 * copies and has already remapped their storage and edges: every source of a copied node that is
 * itself in src must map to the copy's corresponding source. On an invalid mapping (a NULL or
 * repeated image, an edge not remapped, or too small a dst) returns false and leaves dst
 * unchanged; on success dst's previous contents are replaced. */
bool ggml_graph_copy_mapped(struct ggml_cgraph * dst, const struct ggml_cgraph * src,
                            ggml_graph_tensor_map_t map, void * user_data);

/* For every node and leaf of segment, set its recorded use count to the count the same tensor has
 * in source (0 where source lacks it), so a segment executes with the whole graph's consumers. */
void ggml_graph_copy_use_counts(struct ggml_cgraph * segment, const struct ggml_cgraph * source);

#ifdef __cplusplus
}
#endif

#endif /* GGML_GRAPH_H */
