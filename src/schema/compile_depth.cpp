// compile_limits::max_depth counted along the paths a value's evaluation can take: through $ref
// targets too, so a chain of $defs nests exactly as deep as the same schema written inline. Part
// of the compiler (compiler.hpp); runs once every $ref is resolved and in-place cycles are refused.
//
// The rule (docs/schema.md, "Limits"): a subschema's depth is the longest path to it from the root,
// a descending keyword (properties, items, ...) adding one level, an in-place one (allOf, $ref, ...)
// none. A $ref between schemas of one recursion (the target can reach the $ref again) is recursion,
// which JSON Schema and OpenAI's strict mode allow and which has no finite depth: it is not
// followed here, and validate_limits::max_depth bounds its evaluation instead. Every cycle passes
// through such a $ref (all other edges go from a schema to one written inside it), so what is left
// is acyclic and its longest paths take one pass in topological order.
#include <algorithm>

#include "schema/compile_support.hpp"
#include "schema/compiler.hpp"

namespace sluice::schema::detail {

namespace {

struct edge {
  std::uint32_t to;
  bool descends;  // +1 level
  bool ref;       // a $ref (the only kind of edge a cycle needs)
};

// The subschemas a node applies, as a compact adjacency list (edges of node u: first[u]..first[u+1]).
struct graph {
  std::vector<std::uint32_t> first;
  std::vector<edge> edges;
};

graph edges_of(const program& p, std::vector<side_child> side) {
  std::sort(side.begin(), side.end(), [](const side_child& a, const side_child& b) { return a.parent < b.parent; });
  graph g;
  g.first.reserve(p.nodes.size() + 1);
  g.edges.reserve(p.nodes.size() + side.size());  // about one edge per node: most have one parent
  auto s = side.begin();
  for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
    g.first.push_back(static_cast<std::uint32_t>(g.edges.size()));
    const node& n = p.nodes[u];
    auto one = [&](std::uint32_t v, bool descends, bool ref = false) {
      if (v != no_node) g.edges.push_back({v, descends, ref});
    };
    auto list = [&](span32 sp, bool descends) {
      for (std::uint32_t i = 0; i < sp.size; ++i) one(p.indices[sp.begin + i], descends);
    };
    list(n.prefix_items, true);
    one(n.items, true);
    one(n.contains, true);
    one(n.additional, true);
    one(n.property_names, true);
    for (std::uint32_t i = 0; i < n.keys.size; ++i) one(p.keys[n.keys.begin + i].prop, true);
    for (std::uint32_t i = 0; i < n.pattern_props.size; ++i) one(p.patterns[n.pattern_props.begin + i].node, true);
    for (; s != side.end() && s->parent == u; ++s) one(s->child, s->descends);
    list(n.all_of, false);
    list(n.any_of, false);
    list(n.one_of, false);
    one(n.not_, false);
    if (n.if_ != no_node) {
      one(n.if_, false);
      one(n.then_, false);
      one(n.else_, false);
    }
    one(n.ref, false, true);
  }
  g.first.push_back(static_cast<std::uint32_t>(g.edges.size()));
  return g;
}

// Per node: Tarjan's bookkeeping, then the longest-path pass's. One array, one allocation.
struct node_state {
  std::uint32_t order = no_node;  // DFS discovery index; no_node: the root never applies this node
  std::uint32_t low = 0;
  std::uint32_t comp = no_node;   // its strongly connected component
  bool on_stack = false;
  std::uint32_t indegree = 0;     // followed edges not yet done
  std::uint32_t depth = 0;
  std::uint32_t via = no_node;    // the node whose $ref the longest path here last took
};

// Tarjan's strongly connected components of what the root reaches, without recursion (a schema
// may have 10,000 nodes).
void components(const graph& g, std::vector<node_state>& st) {
  std::vector<std::uint32_t> stack;
  struct frame {
    std::uint32_t u;
    std::uint32_t next;
  };
  std::vector<frame> dfs;
  stack.reserve(st.size());
  dfs.reserve(st.size());
  std::uint32_t counter = 0, comps = 0;
  auto visit = [&](std::uint32_t u) {
    st[u].order = st[u].low = counter++;
    stack.push_back(u);
    st[u].on_stack = true;
    dfs.push_back({u, g.first[u]});
  };
  visit(0);
  while (!dfs.empty()) {
    frame& f = dfs.back();
    if (f.next < g.first[f.u + 1]) {
      std::uint32_t v = g.edges[f.next++].to;
      if (st[v].order == no_node) visit(v);
      else if (st[v].on_stack) st[f.u].low = std::min(st[f.u].low, st[v].order);
      continue;
    }
    const std::uint32_t u = f.u;
    dfs.pop_back();
    if (!dfs.empty()) st[dfs.back().u].low = std::min(st[dfs.back().u].low, st[u].low);
    if (st[u].low != st[u].order) continue;
    std::uint32_t w;
    do {
      w = stack.back();
      stack.pop_back();
      st[w].on_stack = false;
      st[w].comp = comps;
    } while (w != u);
    ++comps;
  }
}

}  // namespace

result<void> compiler::check_resolved_depth() {
  const std::size_t n = p_.nodes.size();
  if (n == 0 || !has_refs_) return ok;  // no $ref: every path is the lexical one, already checked
  const graph g = edges_of(p_, side_children_);
  std::vector<node_state> st(n);
  components(g, st);
  auto followed = [&](std::uint32_t u, const edge& e) { return !(e.ref && st[u].comp == st[e.to].comp); };

  // Kahn's topological order over the followed edges of what the root reaches.
  for (std::uint32_t u = 0; u < n; ++u) {
    if (st[u].order == no_node) continue;
    for (std::uint32_t i = g.first[u]; i < g.first[u + 1]; ++i)
      if (followed(u, g.edges[i])) ++st[g.edges[i].to].indegree;
  }
  std::vector<std::uint32_t> ready;  // any order works: a node is ready once its last predecessor is done
  ready.reserve(n);
  if (st[0].indegree == 0) ready.push_back(0);  // always: only a $ref reaches the root, from its own recursion
  while (!ready.empty()) {
    const std::uint32_t u = ready.back();
    ready.pop_back();
    // Depths grow by at most one per edge and a node's predecessors are all done before it, so the
    // first node taken past the limit is one level past it.
    if (st[u].depth > lim_.max_depth) {
      const std::uint32_t via = st[u].via;
      std::string through = via == no_node ? std::string() : " through the $ref at " + std::string(p_.str(p_.nodes[via].path)) + "/$ref";
      return refuse("schema nests deeper than " + std::to_string(lim_.max_depth) + " levels" + through,
                    std::string(p_.str(p_.nodes[u].path)));
    }
    for (std::uint32_t i = g.first[u]; i < g.first[u + 1]; ++i) {
      const edge& e = g.edges[i];
      if (!followed(u, e)) continue;
      node_state& t = st[e.to];
      const std::uint32_t d = st[u].depth + (e.descends ? 1 : 0);
      if (d > t.depth || (d == t.depth && t.via == no_node)) {
        t.depth = d;
        t.via = e.ref ? u : st[u].via;
      }
      if (--t.indegree == 0) ready.push_back(e.to);
    }
  }
  return ok;
}

}  // namespace sluice::schema::detail
