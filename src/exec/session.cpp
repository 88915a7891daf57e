// The public face of a session (onyx/session.hpp) over its inside (exec/session_impl.hpp).
#include "onyx/session.hpp"

#include <mutex>

#include "exec/session_impl.hpp"
#include "format/mapped_file.hpp"

namespace onyx {

using exec::make_impl;

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Session Session::from_file(const std::filesystem::path& path, const SessionOptions& options) {
  return Session(std::unique_ptr<Impl>(make_impl(pb::load_model_file(path), options)));
}

Session Session::from_bytes(std::string bytes, const SessionOptions& options) {
  return Session(std::unique_ptr<Impl>(make_impl(pb::load_model_bytes(std::move(bytes)), options)));
}

const SessionOptions& Session::options() const { return impl_->options; }

const std::vector<IoInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<IoInfo>& Session::outputs() const { return impl_->outputs; }
const Model& Session::model() const { return impl_->model; }
uint64_t Session::memory_in_use() const { return impl_->budget ? impl_->budget->in_use() : 0; }

const Session::Impl& Session::Impl::for_feeds() const {
  std::lock_guard lock(with_feeds_mutex);
  if (!with_feeds) {
    with_feeds.reset(make_impl(*source, options, true));
    if (budget) with_feeds->budget = budget;  // its runs share this session's limit
  }
  return *with_feeds;
}

std::vector<std::pair<std::string, Datum>> Session::run(const std::map<std::string, Datum>& feeds,
                                                        const std::vector<std::string>& output_names,
                                                        const RunOptions& options) const {
  for (const auto& [name, d] : feeds)
    if (impl_->constant_inputs.count(name)) return impl_->for_feeds().run(feeds, output_names, options);
  return impl_->run(feeds, output_names, options);
}

std::optional<MemoryPlanInfo> Session::memory_plan(const std::map<std::string, Datum>& feeds) const {
  const Impl* impl = impl_.get();
  for (const auto& [name, d] : feeds)
    if (impl_->constant_inputs.count(name)) impl = &impl_->for_feeds();
  if (!impl->options.memory_plan) return std::nullopt;
  auto signature = impl->shape_signature(feeds);
  if (!signature) return std::nullopt;
  return impl->memory_planner.info(*signature);
}

}  // namespace onyx
