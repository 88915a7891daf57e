// onyx graph MODEL: draws the graph with Graphviz: nodes, inputs, outputs, initializers, subgraphs as clusters,
// edges labelled with the types inference found.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "base/error.hpp"
#include "cli.hpp"
#include "feeds.hpp"
#include "onyx/session.hpp"
#include "progress.hpp"
#include "text_escape.hpp"
#include "check/load_model.hpp"

extern char** environ;

namespace onyx::cli {

const char* const kGraphUsage =
    "usage: onyx graph MODEL [-o OUT] [--format svg|png|dot] [--max-initializers N]\n"
    "\n"
    "Draws MODEL's graph: a box per node (op type and name), inputs and outputs as ellipses, edges labelled with\n"
    "the element type and shape of the value after type inference (symbolic dims by name, ? where unknown),\n"
    "subgraphs (If, Loop, Scan bodies) as clusters. SVG and PNG come from Graphviz's `dot` program.\n"
    "  -o OUT               output file (default: DOT text on standard output)\n"
    "  --format F           svg, png or dot (default: from OUT's extension, .dot/.gv being dot; else svg)\n"
    "  --max-initializers N draw a graph's initializers as small boxes when it has at most N (default 16);\n"
    "                       beyond that they are listed in the label of the nodes that read them\n"
    "When inference fails (an op onyx does not implement), the graph is drawn with the types the model declares.\n";

namespace {

// Long names would make a node as wide as the page; a hostile one could be megabytes.
std::string shorten(const std::string& s, size_t max = 48) {
  if (s.size() <= max) return s;
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

std::string type_text(const Value& v) {
  if (v.type.kind != Type::Kind::Unknown) return v.type.to_string_with_shape();
  if (v.initializer) {
    std::string dims;
    for (int64_t d : v.initializer->dims()) dims += cat(dims.empty() ? "" : ",", d);
    return cat(v.initializer->dtype(), "[", dims, "]");
  }
  return "?";
}

class DotWriter {
 public:
  DotWriter(const Model& m, size_t max_initializers) : model_(m), max_initializers_(max_initializers) {}

  std::string write(const std::string& title) {
    out_ << "digraph onyx {\n"
         << "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, labelloc=t, label=" << dot_quote(title) << "];\n"
         << "  node [fontname=\"Helvetica\", fontsize=10];\n"
         << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    graph(*model_.graph, 1);
    for (const std::string& e : edges_) out_ << "  " << e << ";\n";
    out_ << "}\n";
    return out_.str();
  }

 private:
  std::string fresh(const char* prefix) { return cat(prefix, next_id_++); }

  void indent(int depth) { out_ << std::string(static_cast<size_t>(depth) * 2, ' '); }

  // Declares the graph's inputs, initializers, nodes (clusters for their subgraphs) and outputs; the edges are
  // kept for the end, since a node belongs to the cluster where it first appears.
  void graph(const Graph& g, int depth) {
    bool boxes = g.initializers.size() <= max_initializers_;
    for (const Value& v : g.values()) {
      if (!v.initializer && !v.is_graph_input) continue;
      std::string id = fresh(v.initializer ? "c" : "i");
      source_[&v] = id;
      indent(depth);
      if (!v.initializer) {
        out_ << id << " [shape=ellipse, style=filled, fillcolor=\"#d6eaf8\", label="
             << dot_quote(shorten(v.name) + "\n" + type_text(v)) << "];\n";
      } else if (boxes) {
        out_ << id << " [shape=box, fontsize=8, height=0.2, style=filled, fillcolor=\"#fdfefe\", color=\"#aaaaaa\", label="
             << dot_quote(shorten(v.name) + "\n" + type_text(v)) << "];\n";
      } else {
        source_.erase(&v);  // folded into the readers' labels
      }
    }
    for (const auto& n : g.nodes) node(*n, depth);
    for (const Value* v : g.outputs) {
      std::string id = fresh("o");
      indent(depth);
      out_ << id << " [shape=ellipse, style=filled, fillcolor=\"#d5f5e3\", label="
           << dot_quote(shorten(v->name) + "\n" + type_text(*v)) << "];\n";
      if (auto it = source_.find(v); it != source_.end()) edges_.push_back(edge(it->second, id, *v));
      outputs_of_[&g].push_back(id);
    }
  }

  void node(const Node& n, int depth) {
    std::string id = fresh("n");
    std::string label = n.op_type;
    if (!n.domain.empty() && n.domain != "ai.onnx") label += " (" + n.domain + ")";
    label = shorten(label, 64) + "\n" + shorten(n.name.empty() ? cat("#", n.index) : n.name);
    for (const Value* v : n.inputs)
      if (v && v->initializer && !source_.count(v)) label += "\n" + shorten(v->name, 32) + ": " + type_text(*v);
    indent(depth);
    out_ << id << " [shape=box, style=\"rounded,filled\", fillcolor=\"#f2f3f4\", label=" << dot_quote(label) << "];\n";
    for (const Value* v : n.inputs)
      if (v)
        if (auto it = source_.find(v); it != source_.end()) edges_.push_back(edge(it->second, id, *v));
    for (const Value* v : n.outputs)
      if (v) source_[v] = id;
    for (const Attribute& a : n.attributes) {
      if (a.g) subgraph(*a.g, a.name, n, id, depth);
      for (size_t k = 0; k < a.graphs.size(); ++k) subgraph(*a.graphs[k], cat(a.name, "[", k, "]"), n, id, depth);
    }
  }

  void subgraph(const Graph& g, const std::string& attr, const Node& owner, const std::string& owner_id, int depth) {
    indent(depth);
    out_ << "subgraph " << fresh("cluster_") << " {\n";
    indent(depth + 1);
    out_ << "graph [style=\"rounded,dashed\", color=\"#888888\", label="
         << dot_quote(shorten(attr) + " of " + shorten(owner.name.empty() ? cat("#", owner.index) : owner.name) + " (" +
                      shorten(owner.op_type) + ")")
         << "];\n";
    graph(g, depth + 1);
    indent(depth);
    out_ << "}\n";
    // The body's results flow into the node that runs it.
    for (const std::string& o : outputs_of_[&g]) edges_.push_back(o + " -> " + owner_id + " [style=dashed]");
  }

  std::string edge(const std::string& from, const std::string& to, const Value& v) {
    return from + " -> " + to + " [label=" + dot_quote(type_text(v)) + ", tooltip=" + dot_quote(shorten(v.name, 200)) + "]";
  }

  const Model& model_;
  size_t max_initializers_;
  std::ostringstream out_;
  std::vector<std::string> edges_;
  std::unordered_map<const Value*, std::string> source_;  // the DOT node a value comes from
  std::unordered_map<const Graph*, std::vector<std::string>> outputs_of_;
  size_t next_id_ = 0;
};

// Runs `dot -T<format> -o <out>` on the text; an error with dot's first line of complaint if it fails.
void run_dot(const std::string& text, const std::string& format, const std::string& out_path) {
  int in_pipe[2], err_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(err_pipe) != 0) fail("pipe failed: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {in_pipe[0], in_pipe[1], err_pipe[0], err_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  std::string tflag = "-T" + format;
  std::vector<char*> child_argv = {const_cast<char*>("dot"), tflag.data(), const_cast<char*>("-o"),
                                   const_cast<char*>(out_path.c_str()), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "dot", &actions, nullptr, child_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(err_pipe[0]);
    if (rc == ENOENT)
      fail("Graphviz's 'dot' program is not on PATH: install graphviz (apt-get install graphviz), or write DOT text "
           "with --format dot");
    fail("cannot start 'dot': ", std::strerror(rc));
  }
  // Feed the text from a thread while this one drains dot's stderr, so neither side can block the other. If
  // dot quits early, the write fails with EPIPE (SIGPIPE is ignored meanwhile) and its exit status tells why.
  struct sigaction ignore{}, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  std::thread feeder([&] {
    size_t off = 0;
    while (off < text.size()) {
      ssize_t n = write(in_pipe[1], text.data() + off, text.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(in_pipe[1]);
  });
  std::string err;
  char buf[4096];
  for (;;) {
    ssize_t n = read(err_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (err.size() < 65536) err.append(buf, static_cast<size_t>(n));
  }
  close(err_pipe[0]);
  feeder.join();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGPIPE, &previous, nullptr);
  std::string first = err.substr(0, err.find('\n'));
  if (WIFSIGNALED(status)) fail("dot was killed by signal ", WTERMSIG(status), first.empty() ? "" : ": ", printable(first));
  if (WEXITSTATUS(status) != 0)
    fail("dot failed (exit status ", WEXITSTATUS(status), ")", first.empty() ? "" : ": ", printable(first));
  if (!first.empty()) std::cerr << "note: dot: " << printable(first) << "\n";
}

}  // namespace

int cmd_graph(const std::vector<std::string>& argv) {
  Args args(argv, {"-o", "--format", "--max-initializers"}, {});
  if (print_help_if_asked(args, kGraphUsage)) return 0;
  expect_positional(args, 1, 1, kGraphUsage);
  const std::string path = args.positional()[0];
  auto out = args.value("-o");
  std::string format = args.value("--format").value_or("");
  if (format.empty()) {
    std::string ext = out ? std::filesystem::path(*out).extension().string() : "";
    format = !out || ext == ".dot" || ext == ".gv" ? "dot" : ext == ".png" ? "png" : "svg";
  }
  if (format != "svg" && format != "png" && format != "dot") fail("--format: '", format, "' is not svg, png or dot");
  if (format != "dot" && !out) fail("--format ", format, " needs -o OUT");
  size_t max_init = static_cast<size_t>(parse_count("--max-initializers", args.value("--max-initializers").value_or("16")));

  Progress progress("onyx graph");
  progress.set_item("loading " + path);
  // A session gives the inferred types; a model it cannot bind is still drawn, with the declared types.
  std::optional<Session> session;
  std::optional<Model> declared;
  try {
    SessionOptions as_given;
    as_given.optimization_level = 0;  // draw the model of the file, not the session's optimized copy
    session.emplace(Session::from_file(path, as_given));
  } catch (const Error& e) {
    declared.emplace(load_model(path));  // a model that does not load or check fails here, with its own message
    progress.above([&] { std::cerr << "note: types as declared: " << printable(e.what()) << "\n"; });
  }
  const Model& model = session ? session->model() : *declared;
  std::string title = std::filesystem::path(path).filename().string();
  if (auto opset = model.opset("")) title += cat("  (opset ", *opset, ")");
  std::string text = DotWriter(model, max_init).write(title);

  if (format == "dot") {
    progress.stop();
    if (!out) {
      std::cout << text;
      return 0;
    }
    std::ofstream f(*out, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) fail(*out, ": cannot write");
  } else {
    progress.set_item("running dot");
    run_dot(text, format, *out);
    progress.stop();
  }
  std::cout << "wrote " << *out << "\n";
  return 0;
}

}  // namespace onyx::cli
