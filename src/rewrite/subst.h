// Graph substitutions (TASO's rewrite rules): a declarative library of `pattern -> replacement if
// precondition`, each with the identity it relies on and a small example graph on which the tests
// verify it by running source and target on random inputs. Pattern matching yields every
// (substitution, location) pair of a graph; applying one gives a new graph.
//
// A location is the list of matched nodes in the rule's own order; applying it adds the
// replacement nodes, sends the consumers of the matched outputs to the replacement's outputs and
// drops what no output reads any more (Graph::rebuilt).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "rewrite/graph.h"

namespace tempo::rewrite {

using Location = std::vector<int>;

// What matchers ask of a graph, computed once per graph.
struct Uses {
  explicit Uses(const Graph& g);
  std::vector<std::vector<std::pair<int, int>>> consumers;  // per node: (reader, input slot)
  std::vector<bool> constant;                               // Graph::constant_nodes()
  std::vector<int> output_reads;                            // per node: uses as a graph output
  // How often value `r` is read (by nodes and as a graph output).
  int reads(const Graph& g, Ref r) const;
};

struct Rule {
  std::string name;
  std::string identity;  // what makes source and target equal
  std::function<std::vector<Location>(const Graph&, const Uses&)> match;
  // The rewritten graph (rebuilt: dead nodes dropped, re-sorted).
  std::function<Graph(const Graph&, const Location&)> apply;
  std::function<Graph()> example;  // a graph with at least one match
};

// The library, in a fixed order (an agent's substitution index is a position in it).
const std::vector<Rule>& rules();
int rule_index(const std::string& name);  // UserError naming the known rules if unknown

struct Match {
  int rule = 0;
  Location location;
};
// Every (substitution, location) pair of `g`, rules in library order.
std::vector<Match> all_matches(const Graph& g);
// Applies one match; the result is validated (shapes re-inferred).
Graph apply(const Graph& g, const Match& m);

}  // namespace tempo::rewrite
