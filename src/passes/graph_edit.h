// Small editing operations on the SDG that the passes share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/sdg.h"
#include "passes/pipeline.h"

namespace tempo::passes {

// For each op, the edges that read it (its consumers), in edge order.
std::vector<std::vector<ir::EdgeId>> consumers(const ir::Graph& g);

// Ops whose value is not a function of their inputs alone: user functions (external state) and
// random draws. They are never merged, removed as unread, or moved to fewer points.
bool has_effect(const ir::OpNode& op);

// The ops DCE keeps: those with an effect, the retained ones, and every op they read.
std::vector<bool> needed_ops(const Program& p);

// An expression's printed form for keys that compare reads ("-" where it is undefined).
std::string expr_key(const Expr& e);

// Whether e is defined and mentions d's variable.
bool mentions(const Expr& e, const Dim& d);

// The identity read of an op's domain: [d0, d1, ...] in the op's own variables.
Expr identity_phi(const Dims& domain);

// Whether edge `e` reads its source at the sink's current point exactly: the source has the
// sink's domain, phi is the identity and there is no condition. Replacing the sink by the
// source is then exact for every reader of the sink.
bool reads_same_point(const ir::Graph& g, ir::EdgeId e);

// Makes every reader of output `out` of `from` read output `to_out` of `to` instead (same phi).
// The caller guarantees that both have the same domain and type. Returns how many reads moved.
int redirect_reads(ir::Graph& g, ir::OpId from, int out, ir::OpId to, int to_out);

// Replaces op `op` by the source of its input edge `input` (a same-point read): every reader of
// `op` reads that source instead. Returns false (and changes nothing) if that is not exact or
// nothing reads `op`.
bool forward_input(Program& p, ir::OpId op, int input);

// For each dimension of an edge's sink: the constant k with sink coordinate = source coordinate
// + k wherever the edge reads a single shifted point along it (x[t - 1]: k = 1), or nothing where
// the sink's coordinate is not determined by the source's (windows, broadcasts, other indices).
std::vector<std::optional<int64_t>> shifts(const ir::Graph& g, ir::EdgeId id);

// The value of input `input` of `op` if its source is a constant fill (any point reads the same).
std::optional<double> const_input(const ir::Graph& g, const ir::OpNode& op, int input);
// The op that input `input` of `op` reads.
const ir::OpNode& input_op(const ir::Graph& g, const ir::OpNode& op, int input);

// A size with the program's bound values (T -> 128), if that makes it a constant.
std::optional<int64_t> bound_size(const Expr& size, const Program& p);
// The bytes of dims from_dim.. of a type with the program's bound values, if that is a constant.
std::optional<int64_t> bytes_of(const ir::TensorType& t, size_t from_dim, const Program& p);

// Renumbers the graph keeping the ops marked in `keep` (in order) and the edges they read;
// updates `retained` and `op_map`.
void compact(Program& p, const std::vector<bool>& keep);

}  // namespace tempo::passes
